package mcp

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nonblocking reads the flag through the raw descriptor: os.File.Fd
// would set blocking mode.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// A pipe handed over as stdin is read through the poller (a read waits
// with no thread held in the system call: a deadline works), and is back
// in blocking mode once the server stops.
func TestPollableStdio(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// os.Pipe's ends are non-blocking already: make r what a client hands
	// over, a blocking pipe.
	if rc, err := r.SyscallConn(); err != nil {
		t.Fatal(err)
	} else {
		rc.Control(func(fd uintptr) { err = unix.SetNonblock(int(fd), false) })
		if err != nil {
			t.Fatal(err)
		}
	}
	rw, restore := pollable(r)
	if rw == io.ReadWriter(r) || !nonblocking(t, r) {
		t.Fatal("a blocking pipe was left blocking")
	}
	pf, ok := rw.(interface{ SetReadDeadline(time.Time) error })
	if !ok {
		t.Fatalf("pollable returned a %T", rw)
	}
	if err := pf.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("not in the poller: %v", err)
	}
	rf := rw // a rawio.File: raw system calls, as RunStdio reads stdin
	if _, err := rf.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of an idle pipe: %v, want a deadline error", err)
	}
	pf.SetReadDeadline(time.Time{})
	w.Write([]byte("x\n"))
	if n, err := rf.Read(make([]byte, 8)); n != 2 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	restore()
	if nonblocking(t, r) {
		t.Fatal("the pipe stayed non-blocking after the server stopped")
	}
	if _, err := w.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("restore closed the original descriptor: read %d, %v", n, err)
	}

	// The same pipe reached by another of the server's descriptors (stdout
	// and stderr on one pipe) is left alone.
	if rw, _ := pollable(r, r); rw != io.ReadWriter(r) || nonblocking(t, r) {
		t.Fatal("a pipe shared with another descriptor was made non-blocking")
	}

	// A regular file (or a terminal) is left alone.
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rw, _ := pollable(f); rw != io.ReadWriter(f) || nonblocking(t, f) {
		t.Fatal("a regular file was changed")
	}
}
