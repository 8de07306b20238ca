package pty

import "golang.org/x/sys/unix"

// The calls amd64 keeps from before their p- and 2 forms.
func init() {
	syscalls[unix.SYS_POLL] = callPoll
	syscalls[unix.SYS_SELECT] = callSelect
	syscalls[unix.SYS_EPOLL_WAIT] = callEpoll
}
