package devsim

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// tclient is a tiny telnet client for the tests: it answers the server's
// option requests politely (once), sends TTYPE/NAWS/NEW-ENVIRON answers and
// collects the decoded output.
type tclient struct {
	t  testing.TB
	nc net.Conn

	wmu sync.Mutex

	// Options (set before the reader starts, see dialOpts).
	termType  string
	width     int
	height    int
	acceptEOR bool
	refuseSGA bool
	refuseAll bool // answer nothing at all (a raw TCP client)

	mu       sync.Mutex
	buf      []byte // decoded data
	mark     int    // expect() consumed up to here
	marks    []string
	answered map[string]bool
	negLog   []string
	eof      bool
	notify   chan struct{}
	done     chan struct{}
}

type clientOpt func(*tclient)

func dial(t testing.TB, addr string, opts ...clientOpt) *tclient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &tclient{
		t: t, nc: nc,
		termType: "XTERM-256COLOR", width: 120, height: 40,
		answered: map[string]bool{},
		notify:   make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	for _, o := range opts {
		o(c)
	}
	go c.readLoop()
	t.Cleanup(func() {
		nc.Close()
		<-c.done
	})
	return c
}

func (c *tclient) write(p []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.nc.Write(p)
}

// send writes text, doubling 0xFF.
func (c *tclient) send(s string) { c.write(escapeIAC(nil, []byte(s))) }

func (c *tclient) cmd(b ...byte) { c.write(append([]byte{cmdIAC}, b...)) }

func (c *tclient) naws(w, h int) {
	p := []byte{cmdIAC, cmdSB, optNAWS}
	p = escapeIAC(p, []byte{byte(w >> 8), byte(w), byte(h >> 8), byte(h)})
	c.write(append(p, cmdIAC, cmdSE))
}

func (c *tclient) readLoop() {
	defer close(c.done)
	buf := make([]byte, 4096)
	st, verb, sbOpt := 0, byte(0), byte(0)
	var sb []byte
	for {
		n, err := c.nc.Read(buf)
		c.mu.Lock()
		var out []byte
		for _, b := range buf[:n] {
			switch st {
			case 0:
				if b == cmdIAC {
					st = 1
				} else {
					c.buf = append(c.buf, b)
				}
			case 1:
				st = 0
				switch b {
				case cmdIAC:
					c.buf = append(c.buf, b)
				case cmdWILL, cmdWONT, cmdDO, cmdDONT:
					verb, st = b, 2
				case cmdSB:
					st, sb = 3, sb[:0]
				case cmdEOR, cmdGA:
					name := "EOR"
					if b == cmdGA {
						name = "GA"
					}
					tail := string(c.buf[max(0, len(c.buf)-30):])
					c.marks = append(c.marks, name+":"+tail)
				}
			case 2:
				st = 0
				out = append(out, c.answer(verb, b)...)
			case 3:
				sbOpt, st = b, 4
			case 4:
				if b == cmdIAC {
					st = 5
				} else {
					sb = append(sb, b)
				}
			case 5:
				if b == cmdSE {
					st = 0
					out = append(out, c.subneg(sbOpt, sb)...)
				} else {
					sb = append(sb, b)
					st = 4
				}
			}
		}
		if err != nil {
			c.eof = true
			c.nc.Close() // like a real client: close when the server does
		}
		c.mu.Unlock()
		if len(out) > 0 {
			c.write(out)
		}
		select {
		case c.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

var verbNames = map[byte]string{cmdWILL: "WILL", cmdWONT: "WONT", cmdDO: "DO", cmdDONT: "DONT"}

// answer replies to a negotiation command, at most once per command.
func (c *tclient) answer(verb, opt byte) []byte {
	key := verbNames[verb] + " " + OptionName(opt)
	c.negLog = append(c.negLog, key)
	if c.refuseAll || c.answered[key] {
		return nil
	}
	c.answered[key] = true
	switch verb {
	case cmdWILL:
		ok := opt == optEcho || (opt == optSGA && !c.refuseSGA) || (opt == optEOR && c.acceptEOR)
		if ok {
			return []byte{cmdIAC, cmdDO, opt}
		}
		return []byte{cmdIAC, cmdDONT, opt}
	case cmdDO:
		switch opt {
		case optTTYPE, optNewEnviron:
			return []byte{cmdIAC, cmdWILL, opt}
		case optNAWS:
			p := []byte{cmdIAC, cmdWILL, opt, cmdIAC, cmdSB, optNAWS}
			p = escapeIAC(p, []byte{byte(c.width >> 8), byte(c.width), byte(c.height >> 8), byte(c.height)})
			return append(p, cmdIAC, cmdSE)
		}
		return []byte{cmdIAC, cmdWONT, opt}
	}
	return nil
}

func (c *tclient) subneg(opt byte, p []byte) []byte {
	if len(p) == 0 || p[0] != sbSEND {
		return nil
	}
	switch opt {
	case optTTYPE:
		r := []byte{cmdIAC, cmdSB, optTTYPE, sbIS}
		r = append(r, c.termType...)
		return append(r, cmdIAC, cmdSE)
	case optNewEnviron:
		r := []byte{cmdIAC, cmdSB, optNewEnviron, sbIS, envVAR}
		r = append(r, "USER"...)
		r = append(r, envVALUE)
		r = append(r, "tester"...)
		r = append(r, envUSERVAR)
		r = append(r, "LANG"...)
		r = append(r, envVALUE)
		r = append(r, "C.UTF-8"...)
		return append(r, cmdIAC, cmdSE)
	}
	return nil
}

// expect waits until the unread output contains s and returns the unread
// output up to and including it.
func (c *tclient) expect(s string) string {
	c.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		rest := c.buf[c.mark:]
		if i := bytes.Index(rest, []byte(s)); i >= 0 {
			got := string(rest[:i+len(s)])
			c.mark += i + len(s)
			c.mu.Unlock()
			return got
		}
		eof := c.eof
		c.mu.Unlock()
		if eof {
			c.t.Fatalf("connection closed while waiting for %q; unread output:\n%q", s, rest)
		}
		select {
		case <-c.notify:
		case <-deadline:
			c.t.Fatalf("timeout waiting for %q; unread output:\n%q", s, c.unread())
		}
	}
}

// expectEOF waits for the server to close and returns the unread output.
func (c *tclient) expectEOF() string {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		c.t.Fatalf("server did not close; unread output:\n%q", c.unread())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := string(c.buf[c.mark:])
	c.mark = len(c.buf)
	return s
}

func (c *tclient) unread() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf[c.mark:])
}

func (c *tclient) transcript() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}

func (c *tclient) promptMarks() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.marks...)
}

// run sends a command line and returns the output up to the next prompt.
func (c *tclient) run(line, prompt string) string {
	c.t.Helper()
	c.send(line + "\r\n")
	out := c.expect("\r\n" + prompt)
	return strings.TrimSuffix(out, prompt)
}

func (c *tclient) login() {
	c.t.Helper()
	c.expect("Username: ")
	c.send("admin\r\n")
	c.expect("Password: ")
	c.send("termhost\r\n")
	c.expect("\r\nedge-r1>")
}

func listen(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = func(f string, a ...any) { t.Logf(f, a...) }
	}
	s, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitFor polls cond for up to 5s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, what, cond)
}
