package rawio

import (
	"errors"
	"io"
	"os"
	"time"
)

// File is a non-blocking (pollable) os.File read and written with raw
// system calls; its errors take os.File's form (*os.PathError around the
// errno).
type File struct {
	f *os.File
	c *Conn
}

// NewFile returns f as a File, or nil where raw system calls are not
// used (then f's own Read and Write are). f must be non-blocking: a
// blocking read would hold the thread without the scheduler's knowledge.
func NewFile(f *os.File) *File { return newFile(f, false) }

// NewSleepingFile is NewFile for a descriptor whose reads may sleep in
// the kernel although it is non-blocking: a pseudo-terminal's master,
// whose read(2) finding its buffer empty waits for the tty's buffer work
// to hand over what the program wrote (n_tty_read flushes it and waits).
// A raw system call that sleeps keeps the thread's processor without
// using CPU, so the process's CPU time understates how busy its
// processors are: a server on one processor (internal/procs) flooded by
// programs under PTYs read as 0.73 of a core while that processor was
// never free, and was not given a second. Its system calls are timed, and
// Slept tells the processor governor how long they took.
func NewSleepingFile(f *os.File) *File { return newFile(f, true) }

func newFile(f *os.File, sleeps bool) *File {
	if !Supported {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return &File{f: f, c: newConn(rc, sleeps)}
}

func (r *File) Read(p []byte) (int, error) {
	n, err := r.c.Read(p)
	return n, r.pathError(err)
}

func (r *File) Write(p []byte) (int, error) {
	n, err := r.c.Write(p)
	return n, r.pathError(err)
}

// WriteNow writes what of p the file takes now, without waiting (see
// Conn.WriteNow).
func (r *File) WriteNow(p []byte) (int, error) {
	n, err := r.c.WriteNow(p)
	return n, r.pathError(err)
}

// ReadNow reads what the file holds now, without waiting (see Conn.ReadNow).
func (r *File) ReadNow(p []byte) int { return r.c.ReadNow(p) }

// Pending is how many bytes the file holds to read now (see Conn.Pending).
func (r *File) Pending() int { return r.c.Pending() }

// SetReadDeadline is f's.
func (r *File) SetReadDeadline(t time.Time) error { return r.f.SetReadDeadline(t) }

// pathError gives a read's or write's own error os.File's form.
func (r *File) pathError(err error) error {
	if err == nil {
		return nil // before errors.As, whose target escapes
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return &os.PathError{Op: se.Syscall, Path: r.f.Name(), Err: se.Err}
	}
	return err
}

var _ io.ReadWriter = (*File)(nil)
