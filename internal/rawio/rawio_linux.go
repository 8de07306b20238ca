// Package rawio reads and writes a non-blocking descriptor through Go's
// poller, as net.Conn and a pollable os.File do, but issues the read and
// write with RawSyscall, which does not tell the scheduler a system call
// began.
//
// Such a call on a non-blocking descriptor returns at once (with data, or
// EAGAIN, and then the poller waits), so the scheduler has nothing to do
// for it. Each system call it is told of instead (entersyscall) wakes the
// runtime's monitor (sysmon) if every processor was idle, and a woken
// monitor polls every 20 µs for at least a millisecond, looking for a
// processor to take back from a thread in a system call. A server that
// goes idle and busy again thousands of times a second — termhost under
// the concurrent load of issue 19 — spent a tenth of its CPU on those
// wake-ups.
package rawio

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// Supported says whether Read and Write issue raw system calls here.
const Supported = true

// rw is one read(2) or write(2) of p on fd, retried on EINTR.
func rw(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		r, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch {
		case e == syscall.EINTR:
			continue
		case e != 0:
			return 0, e
		}
		return int(r), 0
	}
}

// Read reads once into p, waiting in the poller while there is nothing
// to read. Its error is io.EOF at the end, the poller's (a deadline, a
// closed descriptor), or the read's own as *os.SyscallError.
func Read(rc syscall.RawConn, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	if err := rc.Read(func(fd uintptr) bool {
		n, errno = rw(syscall.SYS_READ, fd, p)
		return errno != syscall.EAGAIN
	}); err != nil {
		return 0, err
	}
	switch {
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// ReadNow reads once into p what the descriptor holds now, without
// waiting: 0 when it holds nothing (or on any error).
func ReadNow(rc syscall.RawConn, p []byte) (n int) {
	if len(p) == 0 {
		return 0
	}
	rc.Read(func(fd uintptr) bool {
		n, _ = rw(syscall.SYS_READ, fd, p)
		return true // never wait
	})
	return n
}

// Write writes all of p, waiting in the poller while the descriptor is
// full; it stops at the first error (the poller's, or the write's own as
// *os.SyscallError).
func Write(rc syscall.RawConn, p []byte) (int, error) {
	done := 0
	for done < len(p) {
		var n int
		var errno syscall.Errno
		if err := rc.Write(func(fd uintptr) bool {
			n, errno = rw(syscall.SYS_WRITE, fd, p[done:])
			return errno != syscall.EAGAIN
		}); err != nil {
			return done, err
		}
		switch {
		case errno != 0:
			return done, os.NewSyscallError("write", errno)
		case n == 0:
			return done, io.ErrShortWrite // write(2) took nothing and said nothing
		}
		done += n
	}
	return done, nil
}

// SetsockoptInt sets an integer socket option the same way.
func SetsockoptInt(rc syscall.RawConn, level, opt, value int) {
	rc.Control(func(fd uintptr) {
		v := int32(value)
		syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&v)), 4, 0)
	})
}
