//go:build !linux

package link

import "net"

// QuickAck is a no-op where TCP_QUICKACK does not exist.
func QuickAck(*net.TCPConn) {}

// tcpQuickAck: no such option here (and the raw path is not used).
const tcpQuickAck = 0
