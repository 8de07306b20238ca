package main

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/sdk/abi"
)

// channel is one session channel: the shell (output to the user, input from
// outbound chunks) or an exec (output on the channel stream). Its requests
// run on goroutines of its own, never on an export's: they wait for the
// server, which only answers in a later call.
type channel struct {
	s     *session
	id    int
	shell bool

	mu      sync.Mutex
	cond    sync.Cond
	pending []byte // input not yet written (the server's window may be closed)
	eof     bool   // send EOF after pending
	done    bool   // the channel ended: input is refused
	sess    *ssh.Session
	opened  chan struct{} // closed once sess is set, or the open failed
	cols    int           // the size asked last (0: none since the open)
	rows    int
}

func newChannel(s *session, id int, shell bool) *channel {
	c := &channel{s: s, id: id, shell: shell, opened: make(chan struct{})}
	c.cond.L = &c.mu
	return c
}

// queue adds input for the channel's stdin (and EOF after it, if eof).
func (c *channel) queue(p []byte, eof bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.done:
		return fmt.Errorf("channel %d is closed", c.id)
	case c.eof:
		return fmt.Errorf("channel %d: input after EOF", c.id)
	case len(c.pending)+len(p) > maxInput:
		return fmt.Errorf("channel %d: more than %d bytes of input wait for the server's window", c.id, maxInput)
	}
	c.pending = append(c.pending, p...)
	c.eof = eof
	c.cond.Broadcast()
	return nil
}

// later runs f with the channel's session once it is open, on a goroutine.
func (c *channel) later(f func(*ssh.Session)) {
	go func() {
		<-c.opened
		c.mu.Lock()
		ss := c.sess
		c.mu.Unlock()
		if ss != nil {
			f(ss)
		}
	}()
}

func (c *channel) resize(cols, rows int) {
	c.mu.Lock()
	c.cols, c.rows = cols, rows
	c.mu.Unlock()
	c.later(func(ss *ssh.Session) { ss.WindowChange(rows, cols) })
}

// run opens the channel, runs its shell or command and reports how it
// ended; events: opened, exit, channel_closed — or error with stage
// "channel" (an exec's output goes on the channel stream).
func (c *channel) run(req request) {
	s := c.s
	defer s.removeChannel(c)
	fail := func(what string, err error) {
		s.event(abi.Error{Ch: c.id, Message: fmt.Sprintf("channel %d: %s: %v", c.id, what, err), Stage: "channel"})
	}
	closed := func() { s.event(abi.ChannelClosed{Ch: c.id}) }
	defer c.finish()
	<-s.ready
	s.mu.Lock()
	client := s.client
	s.mu.Unlock()
	if client == nil {
		fail("open", errors.New("the connection failed"))
		closed()
		return
	}
	ss, err := s.openSession(client)
	if err != nil {
		fail("open", err)
		closed()
		return
	}
	if c.shell {
		w := userWriter{s}
		ss.Stdout, ss.Stderr = w, w
	} else {
		ss.Stdout = channelWriter{s: s, ch: uint32(c.id), fd: abi.FdStdout}
		ss.Stderr = channelWriter{s: s, ch: uint32(c.id), fd: abi.FdStderr}
	}
	stdin, err := ss.StdinPipe()
	if err != nil {
		fail("stdin", err)
		ss.Close()
		closed()
		return
	}
	for k, v := range req.Env {
		if err := ss.Setenv(k, v); err != nil {
			s.logf("ssh: channel %d: the server refused the variable %s", c.id, k)
		}
	}
	if c.shell || req.Pty {
		s.mu.Lock()
		if c.shell && s.cols > 0 { // a generic resize came before the shell
			req.Cols, req.Rows = s.cols, s.rows
		}
		s.mu.Unlock()
		if err := ss.RequestPty(req.Term, req.Rows, req.Cols, ssh.TerminalModes{}); err != nil {
			fail("pty-req", err)
			ss.Close()
			closed()
			return
		}
	}
	if c.shell {
		err = ss.Shell()
	} else {
		err = ss.Start(req.Command)
	}
	if err != nil {
		fail(req.Op, err)
		ss.Close()
		closed()
		return
	}
	c.mu.Lock()
	c.sess = ss
	c.mu.Unlock()
	close(c.opened)
	s.event(abi.Opened{Ch: c.id})
	go c.pump(stdin)
	err = ss.Wait()
	var ee *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		s.event(abi.Exit{Ch: c.id, Code: new(int)})
	case errors.As(err, &ee) && ee.Signal() != "":
		s.event(abi.Exit{Ch: c.id, Signal: ee.Signal()})
	case errors.As(err, &ee):
		code := ee.ExitStatus()
		s.event(abi.Exit{Ch: c.id, Code: &code})
	case errors.As(err, &missing):
		// The channel closed without an exit status (e.g. closed by op
		// close): channel_closed alone says so.
	default:
		fail("wait", err)
	}
	closed()
}

// finish marks the channel ended and wakes its input pump.
func (c *channel) finish() {
	c.mu.Lock()
	c.done = true
	clear(c.pending)
	c.pending = nil
	c.cond.Broadcast()
	select {
	case <-c.opened:
	default:
		close(c.opened)
	}
	c.mu.Unlock()
}

// pump writes queued input to the channel's stdin; a write waits while
// the server's window is closed, so input queues (bounded) meanwhile.
func (c *channel) pump(stdin io.WriteCloser) {
	for {
		c.mu.Lock()
		for len(c.pending) == 0 && !c.eof && !c.done {
			c.cond.Wait()
		}
		if c.done {
			c.mu.Unlock()
			return
		}
		p, eof := c.pending, c.eof
		c.pending = nil
		c.mu.Unlock()
		if len(p) > 0 {
			_, err := stdin.Write(p)
			clear(p) // input may hold a secret the host typed
			if err != nil {
				return
			}
		}
		if eof {
			c.mu.Lock()
			rest := len(c.pending)
			c.mu.Unlock()
			if rest == 0 {
				stdin.Close()
				return
			}
		}
	}
}

// userWriter sends a shell's output to the user.
type userWriter struct{ s *session }

func (w userWriter) Write(p []byte) (int, error) {
	w.s.emit(abi.ToUser, p)
	return len(p), nil
}

// channelWriter sends an exec's output stream as bytes on the channel
// stream (ABI 1.1), one emission per write of at most 32 KiB (x/crypto
// writes at most that at a time).
type channelWriter struct {
	s  *session
	ch uint32
	fd uint8
}

func (w channelWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		n := min(len(rest), 32<<10)
		w.s.channelData(w.ch, w.fd, rest[:n])
		rest = rest[n:]
	}
	return len(p), nil
}

// sessionOpener opens a session channel: an *ssh.Client.
type sessionOpener interface {
	NewSession() (*ssh.Session, error)
}

// openSession opens a session channel on client, or fails once the
// session has ended. x/crypto/ssh (v0.58) can leave an open waiting for
// ever when its connection's read loop ends just as the open is sent (the
// channel is added after the loop dropped the others, and the write to
// the dead connection reports no error): the open would then never be
// answered, nor this channel's end told. A channel that ends so leaves
// that one goroutine of x/crypto's behind, and a channel it opens after
// all is closed.
func (s *session) openSession(client sessionOpener) (*ssh.Session, error) {
	type opened struct {
		ss  *ssh.Session
		err error
	}
	r := make(chan opened, 1)
	go func() {
		ss, err := client.NewSession()
		r <- opened{ss, err}
	}()
	select {
	case o := <-r:
		return o.ss, o.err
	case <-s.gone:
		go func() {
			if o := <-r; o.ss != nil {
				o.ss.Close()
			}
		}()
		return nil, errors.New("the connection ended")
	}
}
