// Package link moves bytes between a session and its peer. A Link is the
// io.ReadWriteCloser-shaped end of a socket or a PTY; the session pump reads
// from it and a single writer goroutine writes to it with deadlines, so a
// peer that stops reading yields an error rather than a hung tool call.
package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Link is what a session needs of its transport.
type Link interface {
	io.ReadWriteCloser
	// SetWriteDeadline bounds the next writes, as net.Conn does.
	SetWriteDeadline(t time.Time) error
}

// DialError says why a connection could not be made. Reason is one of
// "dns", "refused", "timeout", "unreachable" or "other".
type DialError struct {
	Host   string
	Port   int
	Reason string
	Err    error
}

func (e *DialError) Error() string {
	addr := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	switch e.Reason {
	case "dns":
		return fmt.Sprintf("cannot resolve host %q: %v", e.Host, unwrapDNS(e.Err))
	case "refused":
		return fmt.Sprintf("connection refused by %s (nothing is listening on that port)", addr)
	case "timeout":
		return fmt.Sprintf("connection to %s timed out: %v", addr, e.Err)
	case "unreachable":
		return fmt.Sprintf("%s is unreachable: %v", addr, e.Err)
	}
	return fmt.Sprintf("cannot connect to %s: %v", addr, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

func unwrapDNS(err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return errors.New("no such host")
		}
		return errors.New(dns.Err)
	}
	return err
}

// DialTCP connects to host:port within timeout, classifying failures.
func DialTCP(ctx context.Context, host string, port int, timeout time.Duration) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	start := time.Now()
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, classify(host, port, err, timeout, time.Since(start))
	}
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	return tc, nil
}

func classify(host string, port int, err error, timeout, took time.Duration) error {
	de := &DialError{Host: host, Port: port, Reason: "other", Err: err}
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		de.Reason = "dns"
	case errors.Is(err, syscall.ECONNREFUSED):
		de.Reason = "refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		de.Reason = "timeout"
		de.Err = fmt.Errorf("no answer within %d ms", timeout.Milliseconds())
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		de.Reason = "unreachable"
	}
	return de
}
