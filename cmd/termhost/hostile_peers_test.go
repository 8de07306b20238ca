package main

// Hostile Telnet peers on 127.0.0.1 for hostile_test.go: peers that never
// read, stop reading, pause, flood negotiation, send a burst and hang up,
// or trickle. Every peer ends when its test ends.

import (
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// peerServer accepts connections and runs handle on each.
type peerServer struct {
	t    testing.TB
	ln   net.Listener
	port int
	done chan struct{} // closed when the test ends

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startPeer listens on 127.0.0.1. rcvbuf > 0 sets SO_RCVBUF on the
// listening socket, so accepted connections advertise a small window and a
// peer that stops reading fills up quickly.
func startPeer(t testing.TB, rcvbuf int, handle func(c net.Conn, done <-chan struct{})) *peerServer {
	t.Helper()
	lc := net.ListenConfig{}
	if rcvbuf > 0 {
		lc.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peerServer{t: t, ln: ln, port: ln.Addr().(*net.TCPAddr).Port, done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if rcvbuf > 0 {
				c.(*net.TCPConn).SetReadBuffer(rcvbuf)
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				handle(c, p.done)
			}()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *peerServer) close() {
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	finished := make(chan struct{})
	go func() { p.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		p.t.Logf("a peer goroutine did not finish within 5 s")
	}
}

// nonReader accepts and never reads.
func nonReader(_ net.Conn, done <-chan struct{}) { <-done }

// recorder keeps what a peer received on one connection.
type recorder struct {
	mu   sync.Mutex
	raw  []byte
	eof  bool
	last time.Time // when the last byte arrived
}

func (r *recorder) snapshot() (raw []byte, eof bool, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.raw...), r.eof, r.last
}

// data is what the peer received with Telnet commands removed (IAC IAC is
// a 0xFF data byte): the bytes a user would see.
func (r *recorder) data() []byte {
	raw, _, _ := r.snapshot()
	return nvtData(raw)
}

// fill reads c into r until c fails.
func (r *recorder) fill(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		r.mu.Lock()
		r.raw = append(r.raw, buf[:n]...)
		if n > 0 {
			r.last = time.Now()
		}
		if err != nil {
			r.eof = true
		}
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// recording hands each accepted connection's recorder to the test, after
// waiting pause (a peer that does not read for a while).
func recording(pause time.Duration, out chan<- *recorder) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, done <-chan struct{}) {
		r := &recorder{}
		select {
		case out <- r:
		case <-done:
			return
		}
		if pause > 0 {
			select {
			case <-time.After(pause): // the peer's pause
			case <-done:
				return
			}
		}
		r.fill(c)
	}
}

// sink reads and discards everything: a healthy peer.
func sink(c net.Conn, _ <-chan struct{}) {
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// stallAfter reads n bytes, says so on reached, then never reads again.
func stallAfter(n int, reached chan<- struct{}) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, done <-chan struct{}) {
		buf := make([]byte, n)
		got := 0
		for got < n {
			k, err := c.Read(buf[got:])
			got += k
			if err != nil {
				return
			}
		}
		select {
		case reached <- struct{}{}:
		default:
		}
		<-done
	}
}

// negotiationFlood sends endless IAC DO / IAC WILL of random options, each
// of which the client must answer, and never reads. It says on stalled when
// the client has not read for 3 s, or the connection failed.
func negotiationFlood(stalled chan<- struct{}) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, done <-chan struct{}) { flood(c, done, stalled) }
}

func flood(c net.Conn, done <-chan struct{}, stalled chan<- struct{}) {
	say := func() {
		select {
		case stalled <- struct{}{}:
		default:
		}
	}
	defer say()
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]byte, 0, 3*16384)
	for {
		select {
		case <-done:
			return
		default:
		}
		batch = batch[:0]
		for range 16384 {
			verb := byte(iacDO)
			if rng.IntN(2) == 0 {
				verb = iacWILL
			}
			batch = append(batch, iac, verb, byte(rng.IntN(256)))
		}
		c.SetWriteDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write(batch); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				say()
				continue // the client stopped reading; keep trying
			}
			return
		}
	}
}

// burstThenClose sends data and hangs up.
func burstThenClose(data []byte) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, _ <-chan struct{}) {
		c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		c.Write(data)
		c.Close()
	}
}

// sendThenHold sends data, then, if trickle > 0, one more lowercase letter
// every trickle; it reads and discards what the client sends. It never
// closes the connection itself.
func sendThenHold(data []byte, trickle time.Duration) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, done <-chan struct{}) {
		go sink(c, done)
		if _, err := c.Write(data); err != nil {
			return
		}
		if trickle <= 0 {
			<-done
			return
		}
		t := time.NewTicker(trickle)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-t.C:
				if _, err := c.Write([]byte{'a' + byte(i%26)}); err != nil {
					return
				}
			}
		}
	}
}

// sendOnCue reads and discards; every value from cue is written to the
// client.
func sendOnCue(cue <-chan string) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, done <-chan struct{}) {
		go sink(c, done)
		for {
			select {
			case <-done:
				return
			case s := <-cue:
				if _, err := c.Write([]byte(s)); err != nil {
					return
				}
			}
		}
	}
}

const (
	iac     = 255
	iacSE   = 240
	iacSB   = 250
	iacWILL = 251
	iacWONT = 252
	iacDO   = 253
	iacDONT = 254
)

// nvtData removes Telnet commands from raw: IAC IAC is one 0xFF, option
// negotiation (3 bytes), subnegotiation (IAC SB … IAC SE) and other
// commands (2 bytes) are dropped.
func nvtData(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != iac {
			out = append(out, raw[i])
			continue
		}
		if i+1 >= len(raw) {
			break
		}
		switch cmd := raw[i+1]; {
		case cmd == iac:
			out = append(out, iac)
			i++
		case cmd >= iacWILL && cmd <= iacDONT:
			i += 2
		case cmd == iacSB:
			j := i + 2
			for j+1 < len(raw) && !(raw[j] == iac && raw[j+1] == iacSE) {
				if raw[j] == iac && raw[j+1] == iac {
					j++
				}
				j++
			}
			i = j + 1
		default:
			i++
		}
	}
	return out
}

// letters returns n bytes cycling through from..from+26 (e.g. 'A' or 'a'):
// text that needs no Telnet escaping.
func letters(n int, from byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = from + byte(i%26)
	}
	return b
}
