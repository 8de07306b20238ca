package mcp

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// gateWriter blocks its first Write until released, and records writes.
type gateWriter struct {
	entered, release chan struct{}
	mu               sync.Mutex
	writes           []string
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	first := len(w.writes) == 0
	w.writes = append(w.writes, string(p))
	w.mu.Unlock()
	if first {
		close(w.entered)
		<-w.release
	}
	return len(p), nil
}

// Lines finished while a write is under way do not wait for it: they are
// written together in the next write (one system call and one wake-up of
// the client for a batch, issue 19), and their requests count as answered
// only once they are written (the end of input waits for them).
func TestStdioBatchesWrites(t *testing.T) {
	w := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	conn, err := (&Stdio{In: bytes.NewReader(nil), Out: w}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := conn.(*stdioConn)
	key := func(s string) reqKey { return reqKey{kind: keyString, s: s} }
	for _, k := range []string{"a", "b", "c"} {
		c.inFlight(key(k), "tools/call")
	}
	first := make(chan error)
	go func() { first <- c.writeLine([]byte(`{"a":1}`), key("a")) }()
	<-w.entered
	queued := make(chan struct{})
	go func() {
		c.writeLine([]byte(`{"b":2}`), key("b"))
		c.writeLine([]byte(`{"c":3}`), key("c"))
		close(queued)
	}()
	select {
	case <-queued:
	case <-time.After(5 * time.Second):
		t.Fatal("a line waited for another line's write to finish")
	}
	if n := c.inFlightCount(); n != 3 {
		t.Fatalf("%d requests in flight before their lines were written, want 3", n)
	}
	close(w.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.writes) != 2 || w.writes[0] != "{\"a\":1}\n" || w.writes[1] != "{\"b\":2}\n{\"c\":3}\n" {
		t.Fatalf("writes: %q", w.writes)
	}
	if n := c.inFlightCount(); n != 0 {
		t.Fatalf("%d requests in flight after their lines were written", n)
	}
}

// A client that stops reading holds the calls back once a few MiB are
// queued: the queue does not grow without bound.
func TestStdioQueueIsBounded(t *testing.T) {
	w := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	conn, err := (&Stdio{In: bytes.NewReader(nil), Out: w}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := conn.(*stdioConn)
	go c.writeLine([]byte(`{"a":1}`), noKey)
	<-w.entered
	line := bytes.Repeat([]byte("x"), 1<<20)
	queued := make(chan int, 16)
	go func() {
		for i := range 8 {
			c.writeLine(line, noKey)
			queued <- i
		}
	}()
	deadline := time.After(2 * time.Second)
	n := 0
wait:
	for {
		select {
		case <-queued:
			n++
		case <-deadline:
			break wait
		}
	}
	if n != maxQueuedWrite>>20 {
		t.Fatalf("%d lines of 1 MiB queued behind a stuck write, want %d", n, maxQueuedWrite>>20)
	}
	close(w.release)
	for n < 8 {
		select {
		case <-queued:
			n++
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d lines written after the write went on", n)
		}
	}
}
