package link

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"
)

// A peer with Nagle's algorithm on (BusyBox telnetd) that answers each
// request with two small writes sends the second only once the first is
// ACKed. After our request, Linux's delayed-ACK mode holds that ACK for
// at least 40 ms unless the link turns TCP_QUICKACK on; 30 such round
// trips then take 1.2 s or more. With QUICKACK after each write they take
// a few milliseconds: the bound below (0.9 s) is far above what even a
// loaded machine needs and under what one delayed ACK per round trip
// costs.
func TestQuickAckAfterWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const rounds = 30
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.(*net.TCPConn).SetNoDelay(false) // Nagle on, as BusyBox telnetd
		buf := make([]byte, 64)
		for range rounds {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
			if _, err := c.Write([]byte("b")); err != nil {
				return
			}
		}
	}()
	c, err := DialTCP(context.Background(), "127.0.0.1", ln.Addr().(*net.TCPAddr).Port, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	start := time.Now()
	for i := range rounds {
		if _, err := c.Write([]byte("x\n")); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for !bytes.Equal(got, []byte("ab")) {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("round %d: %v (got %q)", i, err, got)
			}
			got = append(got, buf[:n]...)
		}
	}
	if d := time.Since(start); d > rounds*40*time.Millisecond*3/4 {
		t.Fatalf("%d round trips took %v: the peer's second segment waited for a delayed ACK (TCP_QUICKACK not set after the write)", rounds, d)
	}
}
