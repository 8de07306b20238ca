package testutil

import (
	"net"
	"sync"
	"testing"
)

// SilentListener is a loopback port that accepts connections and never
// says anything (an SSH handshake with it waits until it is given up);
// the listener and the connections it accepted close when the test ends.
func SilentListener(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}
