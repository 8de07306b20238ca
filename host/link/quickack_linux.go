package link

import (
	"net"
	"syscall"
)

// tcpQuickAck is TCP_QUICKACK (the raw path sets it; see TCP.Write).
const tcpQuickAck = syscall.TCP_QUICKACK

// QuickAck turns TCP_QUICKACK on for c; the link calls it after every
// write. Without it the kernel delays ACKs by up to 40 ms, and a server
// that writes its echo, its output and its prompt as separate small
// segments without TCP_NODELAY (BusyBox telnetd does) waits for each ACK
// under Nagle's algorithm: every command then takes ~40 ms instead of
// well under one.
//
// After a write, not after a read: Linux enters its delayed-ACK
// ("pingpong") mode only when this side sends data soon after receiving
// some (tcp_event_data_sent), and leaves it when TCP_QUICKACK is set,
// sending at once an ACK that was being held back. Out of that mode, a
// read that empties the socket ACKs a small segment itself
// (tcp_cleanup_rbuf). So one setsockopt after each write keeps every
// segment's ACK prompt until the next write, where re-arming after every
// read paid one per read (two to three per command round trip).
func QuickAck(c *net.TCPConn) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
}
