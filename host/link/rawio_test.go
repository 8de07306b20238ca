package link

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// The TCP link reads and writes with raw system calls (internal/rawio)
// and must still behave as a net.Conn: data in order, a large write that
// waits for the reader, deadlines, end of file, and Close ending a read.
func TestTCPBehavesAsConn(t *testing.T) {
	c, peer := tcpPair(t)

	// A write far larger than the socket buffers finishes once the peer
	// has read it all, in order.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		got <- b
	}()
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("the peer read %d bytes, not what was written", len(b))
	}

	// Reads get the peer's bytes.
	peer.Write([]byte("hello"))
	buf := make([]byte, 16)
	if n, err := io.ReadAtLeast(c, buf, 5); n != 5 || err != nil || string(buf[:5]) != "hello" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}

	// A read deadline ends a read with the usual timeout error.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(buf)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past its deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})

	// The peer's close is the end of file.
	peer.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer closed: %d, %v", n, err)
	}

	// A reset is the system's error, as net.Conn gives it.
	c3, p3 := tcpPair(t)
	p3.(*net.TCPConn).SetLinger(0)
	p3.Close()
	c3.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c3.Read(buf); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after a reset: %v", err)
	}

	// Close ends a read in progress with net.ErrClosed.
	c2, _ := tcpPair(t)
	res := make(chan error, 1)
	go func() { _, err := c2.Read(buf); res <- err }()
	time.Sleep(20 * time.Millisecond)
	c2.Close()
	select {
	case err := <-res:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read ended by Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the read")
	}
	if _, err := c2.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
}

// A read and a write of the TCP link allocate nothing: the poller
// callbacks are made once per connection and a nil error is not wrapped
// (each round trip under load made three closures and two errors.As
// targets on the heap).
func TestTCPReadWriteAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c, peer := tcpPair(t)
	buf := make([]byte, 64)
	msg := []byte("ping")
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(msg); {
			n, err := c.Read(buf[got:len(msg)])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Fatalf("a write and a read of the link allocate %v objects, want 0", allocs)
	}
}

// WriteNow writes what the socket takes without waiting, whatever
// deadline an earlier write left: a passed one makes it write nothing
// (and say no error), so the caller writes under a new deadline instead
// of failing with a stale one.
func TestTCPWriteNow(t *testing.T) {
	c, peer := tcpPair(t)
	buf := make([]byte, 16)
	if n, err := c.WriteNow([]byte("now")); n != 3 || err != nil {
		t.Fatalf("WriteNow on an empty socket: %d, %v; want 3, nil", n, err)
	}
	if _, err := io.ReadFull(peer, buf[:3]); err != nil || string(buf[:3]) != "now" {
		t.Fatalf("the peer read %q, %v", buf[:3], err)
	}
	c.SetWriteDeadline(time.Now().Add(-time.Second))
	if n, err := c.WriteNow([]byte("late")); n != 0 || err != nil {
		t.Fatalf("WriteNow after the deadline passed: %d, %v; want 0, nil", n, err)
	}
	// A socket that is full takes nothing, and says so without an error.
	c.SetWriteDeadline(time.Time{})
	big := bytes.Repeat([]byte("x"), 1<<20)
	total := 0
	for range 256 {
		n, err := c.WriteNow(big)
		if err != nil {
			t.Fatalf("WriteNow into a filling socket: %v", err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if n, err := c.WriteNow(big); n != 0 || err != nil {
		t.Fatalf("WriteNow into a full socket (%d bytes in): %d, %v; want 0, nil", total, n, err)
	}
	c.Close()
	if _, err := c.WriteNow([]byte("closed")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteNow after Close: %v, want net.ErrClosed", err)
	}
}

// tcpPair is a TCP link dialled to a loopback listener, and the peer's
// end; both are closed when the test ends.
func tcpPair(t *testing.T) (TCP, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := DialTCP(context.Background(), "127.0.0.1", ln.Addr().(*net.TCPAddr).Port, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	peer := <-accepted
	if peer == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { peer.Close() })
	return c, peer
}
