package mcp

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/internal/rawio"
)

// pollable returns f's descriptor as Go's network poller waits on it,
// read and written with raw system calls (internal/rawio, as the TCP link
// is), and a function that puts things back, when f is a pipe or a socket
// in blocking mode (how an MCP client hands termhost its stdin and
// stdout); otherwise f itself and a no-op.
//
// A blocking read of an idle stdin holds a thread in the system call, and
// the runtime's monitor then takes its processor away and gives it to
// another thread (and keeps polling every 20 µs while it keeps finding
// such threads); a write to a pipe the client is slow to drain does the
// same. Under load that hand-off, for every batch of requests, was a
// tenth of the server's CPU (issue 19). A non-blocking descriptor instead
// parks the goroutine in the poller, as a socket's does.
//
// O_NONBLOCK belongs to the open file description, shared with any
// process holding the same end, so a terminal or a regular file is left
// alone (a shell reading the same terminal after termhost exits would see
// EAGAIN), and so is a pipe that one of shared also reaches (stderr, say,
// when the client gave stdout and stderr one pipe): termhost writes those
// in blocking mode. The flag is cleared again when the server stops. What
// is returned reads and writes a duplicate of the descriptor: closing it
// never closes stdin or stdout themselves.
func pollable(f *os.File, shared ...*os.File) (io.ReadWriter, func()) {
	nop := func() {}
	fd, st, err := fstat(f)
	if err != nil {
		return f, nop
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return f, nop
	}
	for _, o := range shared {
		if _, ost, err := fstat(o); err != nil || ost.Dev == st.Dev && ost.Ino == st.Ino {
			return f, nop
		}
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		return f, nop
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return f, nop
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return f, nop
	}
	pf := os.NewFile(uintptr(dup), f.Name())
	restore := func() {
		unix.SetNonblock(dup, false)
		pf.Close()
	}
	if r := rawio.NewFile(pf); r != nil {
		return r, restore
	}
	return pf, restore
}

// fstat is f's descriptor and its status; not through f.Fd(), which would
// put a non-blocking file back in blocking mode.
func fstat(f *os.File) (fd int, st unix.Stat_t, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, st, err
	}
	if cerr := rc.Control(func(d uintptr) { fd, err = int(d), unix.Fstat(int(d), &st) }); cerr != nil {
		return -1, st, cerr
	}
	return fd, st, err
}
