package pty

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/host/link"
)

// Awaiting reports whether the terminal's foreground program waits for
// input now (link.InputWaiter), from what Linux says each thread of the
// foreground group's leader is blocked in (/proc/<pid>/task/<tid>/syscall):
// a read of the terminal, or a poll or select on it alone, is waiting; a
// poll or select that also watches other descriptors, or epoll, cannot be
// told; running, or blocked in anything else (a sleep, a child, a pipe,
// a lock), is busy. Without /proc (or the right to read it) the answer is
// unknown.
func (p *PTY) Awaiting() link.Awaiting {
	var pgid int
	var ptn uint32
	ok := false
	p.control(func(fd int) {
		var err error
		if pgid, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil {
			return
		}
		ptn, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN)
		ok = err == nil
	})
	if !ok || pgid <= 0 {
		return link.Awaiting{}
	}
	a := link.Awaiting{Pgid: pgid, Leader: pgid == p.pid}
	a.State = awaiting(pgid, "/dev/pts/"+strconv.FormatUint(uint64(ptn), 10))
	return a
}

// maxThreads bounds the threads of a process looked at.
const maxThreads = 64

// awaiting is what process pid (the leader of the foreground group) is
// doing, for terminal tty.
func awaiting(pid int, tty string) link.InputState {
	st, ok := readProcStat(pid)
	if !ok {
		return link.InputGone
	}
	switch st.state {
	case 'Z', 'X', 'x':
		return link.InputGone
	case 'R':
		return link.InputBusy
	}
	dir := "/proc/" + strconv.Itoa(pid)
	d, err := os.Open(dir + "/task")
	if err != nil {
		return link.InputUnknown
	}
	tids, err := d.Readdirnames(maxThreads)
	d.Close()
	if err != nil || len(tids) == 0 {
		return link.InputUnknown
	}
	out := link.InputBusy
	for _, tid := range tids {
		switch threadAwaiting(dir, dir+"/task/"+tid, tty) {
		case link.InputWaiting:
			return link.InputWaiting
		case link.InputUnknown:
			out = link.InputUnknown
		}
	}
	return out
}

// threadAwaiting is what one thread is blocked in.
func threadAwaiting(proc, task, tty string) link.InputState {
	b, err := os.ReadFile(task + "/syscall")
	if err != nil {
		return link.InputUnknown
	}
	f := strings.Fields(string(b))
	if len(f) == 0 || f[0] == "running" {
		return link.InputBusy
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr < 0 || len(f) < 3 {
		return link.InputUnknown
	}
	arg := func(i int) uint64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		return v
	}
	isTTY := func(fd uint64) bool {
		l, err := os.Readlink(proc + "/fd/" + strconv.FormatUint(fd, 10))
		return err == nil && (l == tty || l == "/dev/tty")
	}
	switch kind := syscalls[nr]; kind {
	case callRead:
		if isTTY(arg(0)) {
			return link.InputWaiting
		}
		return link.InputBusy
	case callPoll:
		fds, ok := pollFDs(proc, arg(0), arg(1))
		return watching(fds, ok, isTTY)
	case callSelect:
		fds, ok := selectFDs(proc, arg(0), arg(1))
		return watching(fds, ok, isTTY)
	case callEpoll:
		return link.InputUnknown
	}
	return link.InputBusy
}

// watching: a poll or select on the terminal alone is waiting for input;
// on the terminal and more, unknown; without the terminal, busy.
func watching(fds []uint64, ok bool, isTTY func(uint64) bool) link.InputState {
	if !ok {
		return link.InputUnknown
	}
	tty, other := false, false
	for _, fd := range fds {
		if isTTY(fd) {
			tty = true
		} else {
			other = true
		}
	}
	switch {
	case tty && !other:
		return link.InputWaiting
	case tty:
		return link.InputUnknown
	}
	return link.InputBusy
}

// maxPollFDs bounds the descriptors of a poll or select looked at.
const maxPollFDs = 64

// pollFDs reads the descriptors of a poll's array (struct pollfd: int fd,
// short events, short revents) from the process's memory.
func pollFDs(proc string, addr, n uint64) ([]uint64, bool) {
	if n == 0 || n > maxPollFDs {
		return nil, false
	}
	b, ok := readMem(proc, addr, int(n)*8)
	if !ok {
		return nil, false
	}
	var fds []uint64
	for i := 0; i < int(n); i++ {
		fd := int32(binary.NativeEndian.Uint32(b[i*8:]))
		if fd >= 0 {
			fds = append(fds, uint64(fd))
		}
	}
	return fds, true
}

// selectFDs reads the descriptors of a select's read set (nfds bits).
func selectFDs(proc string, nfds, addr uint64) ([]uint64, bool) {
	if nfds == 0 || nfds > maxPollFDs || addr == 0 {
		return nil, false
	}
	b, ok := readMem(proc, addr, int(nfds+7)/8)
	if !ok {
		return nil, false
	}
	var fds []uint64
	for fd := uint64(0); fd < nfds; fd++ {
		if b[fd/8]&(1<<(fd%8)) != 0 {
			fds = append(fds, fd)
		}
	}
	return fds, true
}

// readMem reads n bytes at addr of the process's memory (allowed to its
// parent's user, as ptrace is).
func readMem(proc string, addr uint64, n int) ([]byte, bool) {
	if addr == 0 || addr > 1<<62 {
		return nil, false
	}
	f, err := os.Open(proc + "/mem")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b := make([]byte, n)
	if k, err := f.ReadAt(b, int64(addr)); err != nil || k != n {
		return nil, false
	}
	return b, true
}

// callKind groups the system calls a program waits for input in.
type callKind int

const (
	callOther callKind = iota
	callRead
	callPoll   // (fds, nfds, …)
	callSelect // (nfds, readfds, …)
	callEpoll
)

// syscalls maps this architecture's call numbers to their kind
// (awaiting_*.go add the calls only some architectures have).
var syscalls = map[int]callKind{
	unix.SYS_READ:         callRead,
	unix.SYS_READV:        callRead,
	unix.SYS_PPOLL:        callPoll,
	unix.SYS_PSELECT6:     callSelect,
	unix.SYS_EPOLL_PWAIT:  callEpoll,
	unix.SYS_EPOLL_PWAIT2: callEpoll,
}
