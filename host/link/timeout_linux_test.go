package link

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A listener whose accept queue is full drops new SYNs, so a connect to it
// hangs until the dial timeout: a real timeout on loopback.
func TestDialTimeout(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	port := sa.(*syscall.SockaddrInet4).Port
	// Fill the queue: these connect but are never accepted.
	var fillers []net.Conn
	defer func() {
		for _, c := range fillers {
			c.Close()
		}
	}()
	for i := 0; i < 4; i++ {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
		if err != nil {
			break
		}
		fillers = append(fillers, c)
	}
	start := time.Now()
	_, err = DialTCP(context.Background(), "127.0.0.1", port, 300*time.Millisecond)
	assertReason(t, err, "timeout", "timed out")
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v, want about the 300 ms timeout", d)
	}
}
