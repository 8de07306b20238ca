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
//
// One kind of non-blocking descriptor does sleep in a read: a PTY's
// master (see NewSleepingFile). Its calls stay raw, and are timed, so
// that the processor governor (internal/procs) counts the time as load.
package rawio

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Supported says whether Read and Write issue raw system calls here.
const Supported = true

// slept is the wall time, in nanoseconds, of the system calls on
// descriptors that may sleep (NewSleepingFile), summed over all of them.
var slept atomic.Int64

// Slept is how long the system calls on descriptors that may sleep in the
// kernel (NewSleepingFile) have taken, summed, since the process started:
// time a thread held its processor whether it ran or slept, which the
// process's CPU time does not show (internal/procs reads it).
func Slept() time.Duration { return time.Duration(slept.Load()) }

// rw is rawRW; timed adds its wall time to slept.
func rw(trap, fd uintptr, p []byte, timed bool) (int, syscall.Errno) {
	if !timed {
		return rawRW(trap, fd, p)
	}
	start := time.Now()
	n, e := rawRW(trap, fd, p)
	slept.Add(int64(time.Since(start)))
	return n, e
}

// rawRW is one read(2) or write(2) of p on fd, retried on EINTR.
func rawRW(trap, fd uintptr, p []byte) (int, syscall.Errno) {
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

// Conn reads and writes one descriptor through its RawConn. The poller
// callbacks are made once, with the descriptor, and take their buffer and
// give their result through the Conn's fields (under a mutex per
// direction, since the RawConn's own lock is taken only inside the call):
// a closure made per call escapes to the heap, and three of them — read,
// write, setsockopt — were a tenth of what termhost allocated per round
// trip under the concurrent load of issue 19.
type Conn struct {
	rc syscall.RawConn

	rmu    sync.Mutex
	rp     []byte
	rn     int
	rerr   syscall.Errno
	rwait  bool // wait in the poller on EAGAIN (Read) or not (ReadNow)
	readFn func(uintptr) bool
	inq    int32 // what inqFn read (TIOCINQ)
	inqFn  func(uintptr)

	wmu     sync.Mutex
	wp      []byte
	wn      int
	werr    syscall.Errno
	wwait   bool // wait in the poller on EAGAIN (Write) or not (WriteNow)
	writeFn func(uintptr) bool
	opt     [3]int // level, option, value for ctlFn
	ctlFn   func(uintptr)
}

// NewConn returns a Conn on rc.
func NewConn(rc syscall.RawConn) *Conn { return newConn(rc, false) }

// newConn returns a Conn on rc; if sleeps, its system calls are timed
// (see NewSleepingFile).
func newConn(rc syscall.RawConn, sleeps bool) *Conn {
	c := &Conn{rc: rc}
	c.readFn = func(fd uintptr) bool {
		c.rn, c.rerr = rw(syscall.SYS_READ, fd, c.rp, sleeps)
		return c.rerr != syscall.EAGAIN || !c.rwait
	}
	c.writeFn = func(fd uintptr) bool {
		c.wn, c.werr = rw(syscall.SYS_WRITE, fd, c.wp, sleeps)
		return c.werr != syscall.EAGAIN || !c.wwait
	}
	c.ctlFn = func(fd uintptr) {
		v := int32(c.opt[2])
		syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, uintptr(c.opt[0]), uintptr(c.opt[1]), uintptr(unsafe.Pointer(&v)), 4, 0)
	}
	c.inqFn = func(fd uintptr) {
		c.inq = 0
		syscall.RawSyscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&c.inq)))
	}
	return c
}

// Pending is how many bytes the descriptor holds to read now (TIOCINQ),
// 0 on any error; it never sleeps, nor waits for more.
func (c *Conn) Pending() int {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rc.Control(c.inqFn)
	return int(c.inq)
}

// Read reads once into p, waiting in the poller while there is nothing
// to read. Its error is io.EOF at the end, the poller's (a deadline, a
// closed descriptor), or the read's own as *os.SyscallError.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno, err := c.read(p, true)
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// ReadNow reads once into p what the descriptor holds now, without
// waiting: 0 when it holds nothing (or on any error).
func (c *Conn) ReadNow(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	n, errno, err := c.read(p, false)
	if errno != 0 || err != nil {
		return 0
	}
	return n
}

// read is one read(2) into p through the poller, which waits for data
// first if wait says so.
func (c *Conn) read(p []byte, wait bool) (int, syscall.Errno, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rp, c.rn, c.rerr, c.rwait = p, 0, 0, wait
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerr
	c.rp = nil
	return n, errno, err
}

// Write writes all of p, waiting in the poller while the descriptor is
// full; it stops at the first error (the poller's, or the write's own as
// *os.SyscallError).
func (c *Conn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, errno, err := c.write(p[done:], true)
		switch {
		case err != nil:
			return done, err
		case errno != 0:
			return done, os.NewSyscallError("write", errno)
		case n == 0:
			return done, io.ErrShortWrite // write(2) took nothing and said nothing
		}
		done += n
	}
	return done, nil
}

// WriteNow writes once what of p the descriptor takes now, without
// waiting: 0 and no error when it is full, and also when a write deadline
// set earlier has passed (the poller then refuses before writing; the
// caller writes with Write under a new one). Its error is the poller's (a
// closed descriptor) or the write's own as *os.SyscallError.
func (c *Conn) WriteNow(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno, err := c.write(p, false)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil
	case err != nil:
		return 0, err
	case errno == syscall.EAGAIN:
		return 0, nil
	case errno != 0:
		return 0, os.NewSyscallError("write", errno)
	}
	return n, nil
}

// write is one write(2) of p through the poller, which waits for room
// first if wait says so.
func (c *Conn) write(p []byte, wait bool) (int, syscall.Errno, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wp, c.wn, c.werr, c.wwait = p, 0, 0, wait
	err := c.rc.Write(c.writeFn)
	n, errno := c.wn, c.werr
	c.wp = nil
	return n, errno, err
}

// SetsockoptInt sets an integer socket option the same way.
func (c *Conn) SetsockoptInt(level, opt, value int) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.opt = [3]int{level, opt, value}
	c.rc.Control(c.ctlFn)
}
