//go:build !wasip1

package main

import (
	"runtime"
	"time"
)

// directEmit is false natively: goroutines run on threads of their own,
// also between calls, so they queue what they emit and each call delivers
// the queue (see session.flush).
const directEmit = false

// settle gives the goroutines a moment to take in what the call fed them
// (at most 100 ms for the connection's input to be read). Natively there
// is no way to know they are done: what they emit later is delivered by
// the next call (the test harness ticks).
func settle(c *pipeConn) {
	deadline := time.Now().Add(100 * time.Millisecond)
	for c != nil && c.buffered() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	for range 8 {
		runtime.Gosched()
	}
}

// buffered is how much of the connection's input is still unread (only
// the native settle needs it).
func (c *pipeConn) buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.in) - c.off
}
