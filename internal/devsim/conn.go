package devsim

import (
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// writeTimeout bounds one Write call; a client that stops reading for this
// long loses its connection.
const writeTimeout = 30 * time.Second

// evKind is the kind of an input event passed from the reader goroutine to
// the session goroutine.
type evKind uint8

const (
	evData    evKind = iota // one input byte
	evIntr                  // IAC IP or ^C: interrupt
	evTimeout               // idle timeout; the reader has stopped
)

type event struct {
	kind evKind
	b    byte
}

var (
	errInterrupt = errors.New("interrupted")
	errCtrlZ     = errors.New("ctrl-z")
	errClosed    = errors.New("connection closed")
)

// conn is the Telnet server side of one client connection: option
// negotiation, the decoded input queue, the output path and line editing.
// It knows nothing of the CLI running over it (see session). Two goroutines
// work on it: the reader (readLoop) decodes the telnet stream, answers
// negotiation and AYT directly and queues input events; the session
// goroutine (serve) runs the CLI, consuming those events and producing all
// other output.
type conn struct {
	s    *Server
	id   int
	nc   net.Conn
	addr string

	events     chan event
	quit       chan struct{} // closed when the session goroutine is done
	readerDone chan struct{}
	negNotify  chan struct{} // poked after each chunk that changed negotiation state

	// Interrupts: produced by the reader, consumed by the session. The
	// difference is the number of interrupts still in the event queue,
	// which aborts any output in progress.
	intrProduced atomic.Int64
	intrConsumed atomic.Int64

	wmu  sync.Mutex // serializes writes to nc
	werr error

	mu        sync.Mutex // protects the fields below
	opts      [256]optState
	info      SessionInfo
	ttypeWait bool // TTYPE SEND sent, IS not yet received
	envWait   bool // NEW-ENVIRON SEND sent, IS not yet received
	nawsSeen  bool
	lastInput time.Time
	reply     []byte // reader goroutine: bytes to send after the current chunk

	// Session goroutine state.
	out      []byte // pending output, written by flush
	escState int    // skipping an ANSI escape sequence typed by the client
}

func newConn(s *Server, nc net.Conn, id int) *conn {
	c := &conn{
		s:          s,
		id:         id,
		nc:         nc,
		addr:       nc.RemoteAddr().String(),
		events:     make(chan event, 8192),
		quit:       make(chan struct{}),
		readerDone: make(chan struct{}),
		negNotify:  make(chan struct{}, 1),
	}
	c.info = SessionInfo{ID: id, Line: id - 1, RemoteAddr: c.addr}
	c.lastInput = time.Now()
	return c
}

// serve is the session goroutine.
func (c *conn) serve() {
	defer c.s.wg.Done()
	defer c.s.remove(c)
	c.s.logf("devsim: conn %d from %s", c.id, c.addr)

	readerStarted := false
	defer func() {
		close(c.quit)
		if !readerStarted {
			c.nc.Close()
			c.s.wg.Done()
			return
		}
		c.shutdown()
		c.s.logf("devsim: conn %d closed", c.id)
	}()

	// Negotiation first, like a real telnetd.
	c.mu.Lock()
	c.askWill(optEcho)
	c.askWill(optSGA)
	c.askDo(optTTYPE)
	c.askDo(optNAWS)
	if c.s.cfg.EOR {
		c.askWill(optEOR)
	}
	c.askDo(optNewEnviron)
	first := c.reply
	c.reply = nil
	c.mu.Unlock()
	if c.writeRaw(first) != nil {
		return
	}
	readerStarted = true
	go c.readLoop()
	c.waitNegotiation()
	newSession(c).run()
	c.flush()
}

// shutdown closes the connection gracefully after the session ended on
// its own: half-close so that the last output is delivered, let the reader
// drain the client's remaining input for a moment, then close.
func (c *conn) shutdown() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		tc.CloseWrite()
		t := time.NewTimer(2 * time.Second)
		select {
		case <-c.readerDone:
		case <-c.s.done:
		case <-t.C:
		}
		t.Stop()
	}
	c.nc.Close()
	<-c.readerDone
}

// readLoop is the reader goroutine.
func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer close(c.readerDone)
	defer close(c.events)
	var dec decoder
	buf := make([]byte, 4096)
	var evs []event
	quitting := false
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		n, err := c.nc.Read(buf)
		if n > 0 {
			evs = evs[:0]
			c.mu.Lock()
			c.lastInput = time.Now()
			neg := readSink{c: c, evs: &evs}
			dec.feed(buf[:n], &neg)
			reply := c.reply
			c.reply = nil
			c.mu.Unlock()
			if len(reply) > 0 {
				c.writeRaw(reply)
			}
			if neg.changed {
				select {
				case c.negNotify <- struct{}{}:
				default:
				}
			}
			for _, ev := range evs {
				if quitting {
					break
				}
				select {
				case c.events <- ev:
				case <-c.quit:
					quitting = true // keep draining input until EOF
				}
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !quitting {
				select {
				case c.events <- event{kind: evTimeout}:
				case <-c.quit:
				}
			}
			return
		}
	}
}

// readSink adapts decoder callbacks for the reader goroutine. It runs with
// c.mu held.
type readSink struct {
	c       *conn
	evs     *[]event
	changed bool
}

func (r *readSink) data(b byte) {
	if b == 0x03 { // ^C typed in character mode
		r.c.intrProduced.Add(1)
		*r.evs = append(*r.evs, event{kind: evIntr})
		return
	}
	*r.evs = append(*r.evs, event{kind: evData, b: b})
}

func (r *readSink) command(cmd byte) {
	c := r.c
	switch cmd {
	case cmdIP:
		c.info.IP++
		c.intrProduced.Add(1)
		*r.evs = append(*r.evs, event{kind: evIntr})
	case cmdBRK:
		c.info.BRK++
	case cmdAO:
		c.info.AO++
	case cmdAYT:
		c.info.AYT++
		c.s.mu.Lock()
		host := c.s.dev.hostname
		c.s.mu.Unlock()
		c.reply = escapeIAC(c.reply, []byte("\r\n["+host+": yes]\r\n"))
	case cmdEC:
		*r.evs = append(*r.evs, event{kind: evData, b: 0x08})
	case cmdEL:
		*r.evs = append(*r.evs, event{kind: evData, b: 0x15})
	}
}

func (r *readSink) negotiate(verb, opt byte) {
	r.changed = true
	r.c.recvNeg(verb, opt)
}

func (r *readSink) subneg(opt byte, p []byte) {
	c := r.c
	r.changed = true
	switch opt {
	case optTTYPE:
		if len(p) > 0 && p[0] == sbIS {
			if c.info.TermType == "" {
				c.info.TermType = string(p[1:])
			}
			c.ttypeWait = false
		}
	case optNAWS:
		if len(p) == 4 {
			c.info.Width = int(p[0])<<8 | int(p[1])
			c.info.Height = int(p[2])<<8 | int(p[3])
			c.info.NAWSUpdates++
			c.nawsSeen = true
		}
	case optNewEnviron:
		if len(p) > 0 && (p[0] == sbIS || p[0] == sbINFO) {
			if c.info.Env == nil {
				c.info.Env = make(map[string]string)
			}
			parseEnviron(p[1:], c.info.Env)
			if p[0] == sbIS {
				c.envWait = false
			}
		}
	}
}

// --- output ---

// writeRaw is the single place where bytes reach the socket. It applies
// cfg.Fragment and cfg.FragmentDelay. p must already be telnet-encoded
// (data with 0xFF doubled, see text and escapeIAC).
func (c *conn) writeRaw(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	pieces := [][]byte{p}
	if c.s.cfg.Fragment != nil {
		pieces = c.s.cfg.Fragment(p)
	}
	for i, piece := range pieces {
		if i > 0 && c.s.cfg.FragmentDelay > 0 {
			t := time.NewTimer(c.s.cfg.FragmentDelay)
			select {
			case <-t.C:
			case <-c.s.done:
				t.Stop()
				c.werr = errClosed
				return c.werr
			}
		}
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := c.nc.Write(piece); err != nil {
			c.werr = err
			return err
		}
	}
	return nil
}

// text queues application text: "\n" not preceded by "\r" becomes CR LF,
// 0xFF is doubled.
func (c *conn) text(s string) {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '\n' && (i == 0 || s[i-1] != '\r'):
			c.out = append(c.out, '\r', '\n')
		case b == cmdIAC:
			c.out = append(c.out, cmdIAC, cmdIAC)
		default:
			c.out = append(c.out, b)
		}
	}
}

// line queues one line of text followed by CR LF.
func (c *conn) line(s string) {
	c.text(s)
	c.out = append(c.out, '\r', '\n')
}

// prompt queues a prompt followed by its EOR/GA mark.
func (c *conn) prompt(s string) {
	c.text(s)
	c.out = append(c.out, c.promptMark()...)
}

// flush writes the queued output.
func (c *conn) flush() error {
	if len(c.out) == 0 {
		return c.werr0()
	}
	err := c.writeRaw(c.out)
	c.out = c.out[:0]
	return err
}

func (c *conn) werr0() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.werr
}

// --- input ---

// next returns the next input event, flushing pending output before it
// blocks. It returns errClosed when the connection is gone.
func (c *conn) next() (event, error) {
	select {
	case ev, ok := <-c.events:
		return c.took(ev, ok)
	default:
	}
	if err := c.flush(); err != nil {
		return event{}, err
	}
	select {
	case ev, ok := <-c.events:
		return c.took(ev, ok)
	case <-c.s.done:
		return event{}, errClosed
	}
}

func (c *conn) took(ev event, ok bool) (event, error) {
	if !ok {
		return event{}, errClosed
	}
	switch ev.kind {
	case evIntr:
		c.intrConsumed.Add(1)
	case evTimeout:
		c.line("")
		c.line("% Session idle timeout, closing connection.")
		return event{}, errClosed
	}
	return ev, nil
}

// intrPending reports whether an interrupt is queued but not yet consumed.
func (c *conn) intrPending() bool {
	return c.intrProduced.Load() > c.intrConsumed.Load()
}

// readLine shows prompt (unless show is false) and reads one line with
// echo (when echo is set and the client let us echo) and simple line
// editing: BS/DEL erase a character, ^U the line, ^W a word; ANSI escape
// sequences (arrow keys) are ignored. An interrupt prints "^C" and returns
// errInterrupt; with ctrlZ set, ^Z prints "^Z" and returns errCtrlZ (else
// it is ignored).
func (c *conn) readLine(prompt string, echo, show, ctrlZ bool) (string, error) {
	if show {
		c.prompt(prompt)
	}
	wantEcho := echo
	var buf []byte
	c.escState = 0
	const maxLine = 1024
	for {
		ev, err := c.next()
		if err != nil {
			return "", err
		}
		if ev.kind == evIntr {
			c.text("^C\r\n")
			return "", errInterrupt
		}
		// The client may switch ECHO at any time; look at every key.
		echo := wantEcho && c.localOn(optEcho)
		b := ev.b
		if c.escState > 0 {
			// ESC [ params final, ESC O x, ESC x
			switch {
			case c.escState == 1 && (b == '[' || b == 'O'):
				c.escState = 2
				if b == 'O' {
					c.escState = 3
				}
			case c.escState == 2 && b >= 0x20 && b < 0x40:
				// parameter/intermediate byte
			default:
				c.escState = 0
			}
			continue
		}
		switch {
		case b == '\r' || b == '\n':
			c.text("\r\n")
			return string(buf), nil
		case b == 0x1b:
			c.escState = 1
		case b == 0x08 || b == 0x7f:
			if n := runeStart(buf); n >= 0 {
				buf = buf[:n]
				if echo {
					c.text("\b \b")
				}
			}
		case b == 0x15: // ^U
			for len(buf) > 0 {
				buf = buf[:runeStart(buf)]
				if echo {
					c.text("\b \b")
				}
			}
		case b == 0x17: // ^W
			for len(buf) > 0 && buf[len(buf)-1] == ' ' {
				buf = buf[:len(buf)-1]
				if echo {
					c.text("\b \b")
				}
			}
			for len(buf) > 0 && buf[len(buf)-1] != ' ' {
				buf = buf[:runeStart(buf)]
				if echo {
					c.text("\b \b")
				}
			}
		case b == 0x1a: // ^Z
			if ctrlZ {
				c.text("^Z\r\n")
				return "", errCtrlZ
			}
		case b == '\t':
			b = ' '
			fallthrough
		case b >= 0x20:
			if len(buf) < maxLine {
				buf = append(buf, b)
				if echo {
					c.out = escapeIAC(c.out, []byte{b})
				}
			}
		}
	}
}

// runeStart returns the index where the last UTF-8 character of p starts,
// or -1 for an empty p.
func runeStart(p []byte) int {
	i := len(p) - 1
	for i > 0 && p[i]&0xC0 == 0x80 {
		i--
	}
	return i
}

// update changes the connection's SessionInfo.
func (c *conn) update(f func(si *SessionInfo)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.info)
}

// who returns the logged-in user and how long the client has been idle.
func (c *conn) who() (user string, idle time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info.User, time.Since(c.lastInput)
}

// remoteIP is the client's address without the port.
func (c *conn) remoteIP() string {
	a := c.addr
	if i := strings.LastIndexByte(a, ':'); i >= 0 {
		a = a[:i]
	}
	return strings.Trim(a, "[]")
}
