//go:build !linux

package link

// tcpQuickAck: no such option here (rawio is not used either).
const tcpQuickAck = 0
