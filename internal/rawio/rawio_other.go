//go:build !linux

package rawio

import "syscall"

// Supported says whether Read and Write issue raw system calls here.
const Supported = false

// Read is not used where Supported is false.
func Read(syscall.RawConn, []byte) (int, error) { return 0, syscall.ENOSYS }

// ReadNow is not used where Supported is false.
func ReadNow(syscall.RawConn, []byte) int { return 0 }

// Write is not used where Supported is false.
func Write(syscall.RawConn, []byte) (int, error) { return 0, syscall.ENOSYS }

// SetsockoptInt is not used where Supported is false.
func SetsockoptInt(syscall.RawConn, int, int, int) {}
