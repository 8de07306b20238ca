package link

import (
	"net"
	"syscall"
)

// QuickAck re-arms TCP_QUICKACK on c. Linux clears it again after a while,
// so the pump calls this after every read. Without it the kernel delays
// ACKs by up to 40 ms, and a server that writes its echo, its output and
// its prompt as separate small segments without TCP_NODELAY (BusyBox
// telnetd does) waits for each ACK under Nagle's algorithm: every command
// then takes ~40 ms instead of well under one.
func QuickAck(c *net.TCPConn) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
}
