//go:build !linux

package rawio

import (
	"syscall"
	"time"
)

// Supported says whether Read and Write issue raw system calls here.
const Supported = false

// Conn is not used where Supported is false.
type Conn struct{}

// NewConn is not used where Supported is false.
func NewConn(syscall.RawConn) *Conn { return &Conn{} }

// Read is not used where Supported is false.
func (*Conn) Read([]byte) (int, error) { return 0, syscall.ENOSYS }

// ReadNow is not used where Supported is false.
func (*Conn) ReadNow([]byte) int { return 0 }

// Write is not used where Supported is false.
func (*Conn) Write([]byte) (int, error) { return 0, syscall.ENOSYS }

// WriteNow is not used where Supported is false.
func (*Conn) WriteNow([]byte) (int, error) { return 0, syscall.ENOSYS }

// Pending is not used where Supported is false.
func (*Conn) Pending() int { return 0 }

// SetsockoptInt is not used where Supported is false.
func (*Conn) SetsockoptInt(int, int, int) {}

// newConn is not used where Supported is false.
func newConn(rc syscall.RawConn, _ bool) *Conn { return NewConn(rc) }

// Slept is always 0 where Supported is false: nothing is timed.
func Slept() time.Duration { return 0 }
