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
	"syscall"
	"unsafe"
)

// Supported says whether Read and Write issue raw system calls here.
const Supported = true

// Read reads once into p: n > 0 with data, n == 0 at end of file. err is
// the poller's (deadline, closed); errno the read's own.
func Read(rc syscall.RawConn, p []byte) (n int, errno syscall.Errno, err error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	err = rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			n, errno = int(r), e
			if e != 0 {
				n = 0
			}
			return e != syscall.EAGAIN
		}
	})
	return n, errno, err
}

// ReadNow reads once into p what the descriptor holds now, without
// waiting: 0 when it holds nothing (or on any error).
func ReadNow(rc syscall.RawConn, p []byte) (n int) {
	if len(p) == 0 {
		return 0
	}
	rc.Read(func(fd uintptr) bool {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == 0 {
			n = int(r)
		}
		return true // never wait
	})
	return n
}

// Write writes all of p, waiting in the poller while the descriptor is
// full; it stops at the first error.
func Write(rc syscall.RawConn, p []byte) (done int, errno syscall.Errno, err error) {
	for done < len(p) && errno == 0 && err == nil {
		var n int
		err = rc.Write(func(fd uintptr) bool {
			for {
				r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
				if e == syscall.EINTR {
					continue
				}
				n, errno = int(r), e
				if e != 0 {
					n = 0
				}
				return e != syscall.EAGAIN
			}
		})
		if n == 0 && errno == 0 && err == nil {
			return done, 0, io.ErrShortWrite // write(2) took nothing and said nothing
		}
		done += n
	}
	return done, errno, err
}

// SetsockoptInt sets an integer socket option the same way.
func SetsockoptInt(rc syscall.RawConn, level, opt, value int) {
	rc.Control(func(fd uintptr) {
		v := int32(value)
		syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&v)), 4, 0)
	})
}
