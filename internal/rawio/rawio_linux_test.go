package rawio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func pipe(t *testing.T) (*os.File, *File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	rf := NewFile(r)
	if rf == nil {
		t.Fatal("NewFile: nil for a pipe")
	}
	return r, rf, w
}

// readCalls is this process's read(2) calls so far (/proc/self/io syscr).
func readCalls(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Skip("no syscr in /proc/self/io")
	return 0
}

// TestReadEachOneReadPerWakeUp: a peer that answers one message at a time
// (an interactive session) costs ReadEach one read(2) per message, not the
// two a read loop pays (the second finding the pipe empty).
func TestReadEachOneReadPerWakeUp(t *testing.T) {
	_, rf, w := pipe(t)
	const n = 2000
	next := make(chan int, 1)
	go func() {
		for i := range next {
			if i == n {
				w.Close()
				return
			}
			fmt.Fprintf(w, "m%d;", i)
		}
	}()
	buf := make([]byte, 4096)
	var got bytes.Buffer
	start := readCalls(t)
	next <- 0
	i := 0
	err := rf.ReadEach(func() []byte { return buf }, func(p []byte) bool {
		got.Write(p)
		for bytes.Count(got.Bytes(), []byte(";")) > i {
			i++
			next <- i
		}
		return true
	})
	calls := readCalls(t) - start
	close(next)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("ReadEach ended with %v, want io.EOF", err)
	}
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "m%d;", i)
	}
	if got.String() != want.String() {
		t.Fatalf("read %d bytes, not the %d written in order", got.Len(), want.Len())
	}
	// n messages and the end: n+1 reads, and a few of this test's own
	// (/proc/self/io). A loop of Read would make about 2n.
	if limit := n + n/10 + 10; calls > limit {
		t.Errorf("%d read(2) calls for %d messages, want at most %d", calls, n, limit)
	}
}

// TestReadEachStops: got's false ends ReadEach with no error, and what it
// did not take is read by the next call.
func TestReadEachStops(t *testing.T) {
	_, rf, w := pipe(t)
	w.Write([]byte("abcdef"))
	small := make([]byte, 2)
	var seen []string
	err := rf.ReadEach(func() []byte { return small }, func(p []byte) bool {
		seen = append(seen, string(p))
		return len(seen) < 2
	})
	if err != nil || strings.Join(seen, ",") != "ab,cd" {
		t.Fatalf("ReadEach: %v, %q; want nil, ab,cd", err, seen)
	}
	w.Close()
	var rest []byte
	err = rf.ReadEach(func() []byte { return small }, func(p []byte) bool { rest = append(rest, p...); return true })
	if !errors.Is(err, io.EOF) || string(rest) != "ef" {
		t.Fatalf("second ReadEach: %v, %q; want EOF, ef", err, rest)
	}
}

// TestReadEachFillsBuffers: a read that fills its buffer is followed by
// another at once, into the buffer next gives then.
func TestReadEachFillsBuffers(t *testing.T) {
	_, rf, w := pipe(t)
	data := bytes.Repeat([]byte("0123456789"), 1000)
	w.Write(data)
	w.Close()
	var got []byte
	sizes := 0
	err := rf.ReadEach(func() []byte { sizes++; return make([]byte, 7+sizes%5) }, func(p []byte) bool { got = append(got, p...); return true })
	if !errors.Is(err, io.EOF) || !bytes.Equal(got, data) {
		t.Fatalf("ReadEach: %v, %d bytes; want EOF and the %d written", err, len(got), len(data))
	}
}

// TestReadEachClosed: closing the file ends a ReadEach that waits for
// data, with the poller's error.
func TestReadEachClosed(t *testing.T) {
	r, rf, w := pipe(t)
	w.Write([]byte("x"))
	done := make(chan error, 1)
	first := make(chan struct{})
	go func() {
		buf := make([]byte, 16)
		done <- rf.ReadEach(func() []byte { return buf }, func(p []byte) bool { close(first); return true })
	}()
	<-first
	r.Close()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("ReadEach after Close: %v, want the poller's error for a closed file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadEach still waiting 10 s after the file was closed")
	}
}
