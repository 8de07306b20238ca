package link

import "syscall"

// tcpQuickAck is TCP_QUICKACK.
const tcpQuickAck = syscall.TCP_QUICKACK
