//go:build !linux

package link

import "net"

// QuickAck is a no-op where TCP_QUICKACK does not exist.
func QuickAck(*net.TCPConn) {}
