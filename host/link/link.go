// Package link moves bytes between a session and its peer. A Link is the
// io.ReadWriteCloser-shaped end of a socket, a PTY or a pipe; the session
// pump reads from it and a single writer goroutine writes to it, so a peer
// that stops reading yields an error rather than a hung tool call.
//
// What only some links can do is an optional interface, checked with a
// type assertion, as io does with io.WriterTo: WriteDeadliner (sockets,
// PTYs), Resizer (a PTY's window), Signaler (a process group), Exiter (a
// process's exit status), Stopper (a graceful stop), Foregrounder (who
// reads a terminal), InputWaiter (whether that reader waits for input). Anything kind-specific that must happen on every
// read or write (TCP_QUICKACK on a socket) lives inside the link itself.
package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/termhost/termhost/internal/rawio"
)

// Link is what a session needs of its transport. Close unblocks a Read or
// Write in progress.
type Link interface {
	io.ReadWriteCloser
}

// WriteDeadliner is a link whose writes can be bounded in time, as
// net.Conn's are. A session writes to a link without it from its writer
// goroutine and stops waiting at the deadline anyway.
type WriteDeadliner interface {
	SetWriteDeadline(t time.Time) error
}

// NowWriter is a link that can write without waiting: WriteNow writes
// what of p the link takes at once — 0 and no error when it has no room —
// so a write that fits needs no deadline set and no cancellation armed
// (a session writes the rest with Write, under its deadline).
type NowWriter interface {
	WriteNow(p []byte) (int, error)
}

// Resizer is a link with a window size the peer sees (a PTY: TIOCSWINSZ,
// and the child gets SIGWINCH).
type Resizer interface {
	Resize(cols, rows int) error
}

// Signaler is a link that can deliver a signal to the peer: "interrupt"
// (SIGINT to the foreground process group), "terminate", "kill", "hangup",
// "quit", "suspend".
type Signaler interface {
	Signal(name string) error
}

// Exiter is a link to a process: Exit blocks until it has exited and
// returns how.
type Exiter interface {
	Exit() ExitStatus
}

// Foregrounder is a link to a terminal that can say who reads what is
// typed into it (a PTY).
type Foregrounder interface {
	Foreground() (Foreground, error)
}

// Foreground is who reads what is typed into a terminal right now: the
// programs of its foreground process group (tcgetpgrp on the master), and
// any process outside the terminal's session that holds the terminal open
// (it could read it too: job control only stops the session's own
// background groups).
type Foreground struct {
	Pgid int
	// Exes are the resolved executables (/proc/<pid>/exe) of the group's
	// processes, the leader first; "" where it could not be read.
	Exes []string
	// Outsiders are processes of another session that hold the terminal
	// open, as "pid (exe)".
	Outsiders []string
}

// InputWaiter is a link to a terminal that can tell whether the program
// reading it waits for input right now (a PTY: what the kernel says the
// foreground process group's leader is blocked in). run_command uses it
// to tell a prompt from output that merely looks like one, and the screen
// to tell whether the program that asked a terminal query is still there
// to read the answer.
type InputWaiter interface {
	Awaiting() Awaiting
}

// Awaiting is what a terminal's foreground program is doing.
type Awaiting struct {
	State InputState
	// Pgid is the foreground process group (0: none could be read);
	// Leader says it is the group of the terminal's first program (the
	// shell a session started), not a program that shell runs.
	Pgid   int
	Leader bool
}

// InputState is whether a terminal's foreground program waits for input.
type InputState int

const (
	// InputUnknown: it cannot be told (the program waits on several
	// descriptors at once, or through epoll; /proc cannot be read).
	InputUnknown InputState = iota
	// InputWaiting: blocked reading the terminal, or polling it alone.
	InputWaiting
	// InputBusy: running, or blocked in something else (a sleep, a
	// child, a pipe, a lock).
	InputBusy
	// InputGone: the group's leader has exited (a zombie, or no longer
	// there).
	InputGone
)

func (s InputState) String() string {
	switch s {
	case InputWaiting:
		return "waiting"
	case InputBusy:
		return "busy"
	case InputGone:
		return "gone"
	}
	return "unknown"
}

// Stopper is a link to a process that can be stopped gracefully (SPEC
// PTY-3): input stops at once, a command still running gets up to grace to
// finish, then the process group gets SIGTERM and, termWait later,
// SIGKILL. Stop returns once the process is gone and reaped; ctx ending
// skips to SIGKILL.
type Stopper interface {
	Stop(ctx context.Context, grace, termWait time.Duration) ExitStatus
}

// ExitStatus is how a process ended: an exit code, or the signal that
// killed it.
type ExitStatus struct {
	Code   int    `json:"code"`             // -1 when killed by a signal
	Signal string `json:"signal,omitempty"` // e.g. "SIGTERM"
}

func (e ExitStatus) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return "exit code " + strconv.Itoa(e.Code)
}

// TCP is a Telnet or SSH connection. It re-arms TCP_QUICKACK after every
// write (see QuickAck), and where it can reads and writes with raw system
// calls (internal/rawio).
type TCP struct {
	*net.TCPConn
	rc *rawio.Conn // nil: through net.TCPConn
}

// NewTCP makes c a link.
func NewTCP(c *net.TCPConn) TCP {
	t := TCP{TCPConn: c}
	if rawio.Supported {
		if rc, err := c.SyscallConn(); err == nil {
			t.rc = rawio.NewConn(rc)
		}
	}
	return t
}

func (t TCP) Read(p []byte) (int, error) {
	if t.rc == nil {
		return t.TCPConn.Read(p)
	}
	n, err := t.rc.Read(p)
	return n, t.opError("read", err)
}

func (t TCP) Write(p []byte) (int, error) {
	var n int
	var err error
	if t.rc == nil {
		n, err = t.TCPConn.Write(p)
	} else {
		n, err = t.rc.Write(p)
		err = t.opError("write", err)
	}
	t.quickAck(n)
	return n, err
}

// WriteNow writes what of p the socket takes now (see NowWriter); where
// raw system calls are not used it writes nothing.
func (t TCP) WriteNow(p []byte) (int, error) {
	if t.rc == nil {
		return 0, nil
	}
	n, err := t.rc.WriteNow(p)
	t.quickAck(n)
	return n, t.opError("write", err)
}

// quickAck re-arms TCP_QUICKACK after a write that sent n > 0 bytes.
func (t TCP) quickAck(n int) {
	switch {
	case n <= 0:
	case t.rc == nil:
		QuickAck(t.TCPConn)
	default:
		t.rc.SetsockoptInt(syscall.IPPROTO_TCP, tcpQuickAck, 1)
	}
}

// opError gives a raw read's or write's own error net.Conn's form.
func (t TCP) opError(op string, err error) error {
	if err == nil {
		return nil // before errors.As, whose target escapes
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return &net.OpError{Op: op, Net: "tcp", Source: t.LocalAddr(), Addr: t.RemoteAddr(), Err: se}
	}
	return err
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
	addr := JoinHostPort(e.Host, e.Port)
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

// DialTCP connects to host:port within timeout, classifying failures. An
// IPv6 literal may come with or without brackets ("::1", "[::1]").
func DialTCP(ctx context.Context, host string, port int, timeout time.Duration) (TCP, error) {
	host = UnbracketHost(host)
	if timeout <= 0 {
		// The caller's budget went on what came before (a plugin that
		// took long to attach on a loaded machine): say so, not "no
		// answer within -62 ms".
		return TCP{}, &DialError{Host: host, Port: port, Reason: "timeout",
			Err: errors.New("no time was left to connect: the call's timeout ran out before the connection was tried")}
	}
	d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	start := time.Now()
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return TCP{}, classify(host, port, err, timeout, time.Since(start))
	}
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	return NewTCP(tc), nil
}

// JoinHostPort is host:port with IPv6 literals in one pair of brackets.
func JoinHostPort(host string, port int) string {
	return net.JoinHostPort(UnbracketHost(host), strconv.Itoa(port))
}

// UnbracketHost strips the brackets of an IPv6 literal ("[::1]" → "::1"),
// so host:port strings built from it get exactly one pair.
func UnbracketHost(host string) string {
	if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	return host
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
