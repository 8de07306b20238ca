package main

import (
	"errors"
	"net"
	"sync"
	"time"
)

// maxBuffered bounds the peer's bytes waiting in the guest. Every export
// lets x/crypto read all it was given before returning (settle), so this
// is only reached if the SSH machinery stopped reading: the session then
// fails closed rather than grow.
const maxBuffered = 4 << 20

var errBuffered = errors.New("ssh: the peer's data is not being read (more than 4 MiB waiting)")

// pipeConn is the net.Conn x/crypto/ssh runs on: the host owns the socket,
// on_data feeds what it read (feed), and what x/crypto writes is emitted
// toward the peer.
type pipeConn struct {
	mu     sync.Mutex
	cond   sync.Cond
	in     []byte
	off    int
	closed bool
	err    error // why reads end, once closed
	write  func(p []byte)
	local  addr
	remote addr
}

func newPipeConn(write func([]byte)) *pipeConn {
	c := &pipeConn{write: write, local: addr("termhost")}
	c.cond.L = &c.mu
	return c
}

// dialed sets the address the host dialed (known at op start; bytes may
// arrive before it).
func (c *pipeConn) dialed(remote string) {
	c.mu.Lock()
	c.remote = addr(remote)
	c.mu.Unlock()
}

// feed adds bytes read from the socket.
func (c *pipeConn) feed(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.err
	}
	if len(c.in)-c.off+len(p) > maxBuffered {
		return errBuffered
	}
	if c.off == len(c.in) {
		c.in, c.off = c.in[:0], 0
	}
	c.in = append(c.in, p...)
	c.cond.Broadcast()
	return nil
}

func (c *pipeConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.off == len(c.in) && !c.closed {
		c.cond.Wait()
	}
	if c.off == len(c.in) {
		return 0, c.err
	}
	n := copy(p, c.in[c.off:])
	c.off += n
	return n, nil
}

func (c *pipeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	c.write(p)
	return len(p), nil
}

// shut ends the connection: reads return err once the buffer is empty —
// or at once, dropping it, when drop is set.
func (c *pipeConn) shut(err error, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed, c.err = true, err
	}
	if drop {
		clear(c.in)
		c.in, c.off = nil, 0
	}
	c.cond.Broadcast()
}

func (c *pipeConn) Close() error {
	c.shut(net.ErrClosed, true)
	return nil
}

func (c *pipeConn) LocalAddr() net.Addr { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.remote
}
func (c *pipeConn) SetDeadline(t time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { return nil }

// addr is a net.Addr with the address the host dialed.
type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }
