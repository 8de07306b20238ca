package mcp

import (
	"io"
	"os"
	"syscall"

	"github.com/termhost/termhost/internal/rawio"

	"golang.org/x/sys/unix"
)

// pollable returns f's descriptor as a file Go's network poller waits on,
// and a function that puts things back, when f is a pipe or a socket in
// blocking mode (how an MCP client hands termhost its stdin and stdout);
// otherwise f itself and a no-op.
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
// EAGAIN), and so is a pipe that one of shared also reaches (stderr, say, when the
// client gave stdout and stderr one pipe): termhost writes
// those in blocking mode. The flag is cleared again when the server
// stops. The file returned is a duplicate of the descriptor: closing it
// never closes stdin or stdout themselves.
func pollable(f *os.File, shared ...*os.File) (*os.File, func()) {
	// Not f.Fd(): it would put a non-blocking file back in blocking mode.
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(d uintptr) { fd = int(d) })
	}
	if fd < 0 {
		return f, func() {}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return f, func() {}
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return f, func() {}
	}
	for _, o := range shared {
		var ost unix.Stat_t
		rc, err := o.SyscallConn()
		if err == nil {
			rc.Control(func(d uintptr) { err = unix.Fstat(int(d), &ost) })
		}
		if err != nil || ost.Dev == st.Dev && ost.Ino == st.Ino {
			return f, func() {}
		}
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		return f, func() {}
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return f, func() {}
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return f, func() {}
	}
	pf := os.NewFile(uintptr(dup), f.Name())
	return pf, func() {
		unix.SetNonblock(dup, false)
		pf.Close()
	}
}

// rawFile reads and writes a pollable file with raw system calls
// (internal/rawio), as the TCP link does.
type rawFile struct {
	f  *os.File
	rc syscall.RawConn
}

// raw returns f as a rawFile where rawio works, else f itself.
func raw(f *os.File) io.ReadWriter {
	if !rawio.Supported {
		return f
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return rawFile{f: f, rc: rc}
}

func (r rawFile) Read(p []byte) (int, error) {
	n, errno, err := rawio.Read(r.rc, p)
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r rawFile) Write(p []byte) (int, error) {
	n, errno, err := rawio.Write(r.rc, p)
	if err == nil && errno != 0 {
		err = &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
	}
	return n, err
}
