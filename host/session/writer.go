package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/termhost/termhost/host/link"
)

// batch is what one walk through the chain sends to the peer: written in
// one Write call with the batch's deadline, so a Telnet command is never
// split between writes and a failure leaves an exact prefix on the wire.
type batch struct {
	data     []byte
	deadline time.Time
	done     chan struct{} // closed when finished; nil when nobody waits

	mu        sync.Mutex
	n         int   // bytes written
	err       error // why not all of them
	started   bool
	cancelled bool
}

// finish records the outcome and wakes the waiter.
func (b *batch) finish(n int, err error) {
	b.mu.Lock()
	b.n, b.err = n, err
	b.mu.Unlock()
	if b.done != nil {
		close(b.done)
	}
}

// result is how much was written and why not all.
func (b *batch) result() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n, b.err
}

// cancel withdraws a batch the writer has not started; it reports whether
// it was withdrawn.
func (b *batch) cancel() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return false
	}
	b.cancelled = true
	return true
}

// writer owns the write side of a link: one goroutine writes batches in
// order. Its queue is bounded in bytes and never blocks a submitter: a full
// queue is an error at once (the peer is not reading).
type writer struct {
	link    link.Link
	max     int           // queued bytes beyond which submit fails (one batch is always admitted)
	timeout time.Duration // the write deadline, for messages

	mu      sync.Mutex
	q       []*batch
	queued  int
	writing bool  // a batch is being written (by the goroutine or a sender)
	closed  error // set once the writer stops: every later submit fails with it
	wake    chan struct{}
	quit    chan struct{}
	stopped chan struct{}
}

func newWriter(l link.Link, max int, timeout time.Duration) *writer {
	return &writer{link: l, max: max, timeout: timeout, wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
}

// submit queues b. It never blocks.
func (w *writer) submit(b *batch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed != nil {
		return w.closed
	}
	if w.queued > 0 && w.queued+len(b.data) > w.max {
		return fmt.Errorf("%w: %d bytes are still waiting to be written to it (at most %d may wait); try again when it reads",
			ErrPeerStalled, w.queued, w.max)
	}
	w.q = append(w.q, b)
	w.queued += len(b.data)
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// run writes queued batches until close.
func (w *writer) run() {
	defer close(w.stopped)
	for {
		w.mu.Lock()
		var b *batch
		if len(w.q) > 0 && !w.writing {
			b = w.q[0]
			w.q[0] = nil
			w.q = w.q[1:]
			w.writing = true
		}
		w.mu.Unlock()
		if b == nil {
			select {
			case <-w.wake:
				continue
			case <-w.quit:
				return
			}
		}
		b.mu.Lock()
		skip := b.cancelled
		b.started = true
		b.mu.Unlock()
		if skip {
			w.done(b, true)
			b.finish(0, errors.New("cancelled before it was written"))
			continue
		}
		n, err := w.write(context.Background(), b)
		w.done(b, true)
		b.finish(n, err)
	}
}

// done ends a write: the next may start.
func (w *writer) done(b *batch, queued bool) {
	w.mu.Lock()
	if queued {
		w.queued -= len(b.data)
	}
	w.writing = false
	more := len(w.q) > 0
	w.mu.Unlock()
	if more {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// reserve takes b's place in the order of writes, without blocking: when
// nothing is queued or being written (the common case of a tool call's
// send) the caller is to write b itself with writeReserved — spared the
// hand-off to the writer goroutine and back — else b is queued. Callers
// reserve while they hold the chain lock, so batches reach the peer in the
// order the chain made them (an SSH packet stream allows no reordering),
// and write after releasing it.
func (w *writer) reserve(b *batch) (inline bool, err error) {
	w.mu.Lock()
	if w.closed != nil {
		w.mu.Unlock()
		return false, w.closed
	}
	_, bounded := w.link.(link.WriteDeadliner)
	if len(w.q) > 0 || w.writing || !bounded {
		// Busy, or a link whose writes cannot be bounded: the writer
		// goroutine writes it and the caller's wait is bounded instead.
		w.mu.Unlock()
		return false, w.submit(b)
	}
	w.writing = true
	b.started = true
	w.mu.Unlock()
	return true, nil
}

// writeReserved writes a batch reserve kept for the caller. Cancelling
// ctx during the write cuts it short at once.
func (w *writer) writeReserved(ctx context.Context, b *batch) {
	n, err := w.write(ctx, b)
	w.done(b, false)
	b.finish(n, err)
}

// pumpSlice bounds how long the pump itself writes a reply (a pager's
// answer, an option reply) before the rest goes to the writer goroutine:
// the pump must get back to reading a peer that does not read.
const pumpSlice = time.Millisecond

// writeFromPump writes a reply batch reserve kept for the pump: the
// common case (a socket with room) costs one write and no hand-off; what
// the peer does not take within pumpSlice is queued, ahead of anything
// submitted meanwhile, for the writer goroutine.
func (w *writer) writeFromPump(b *batch) {
	d := w.link.(link.WriteDeadliner)
	if time.Now().After(b.deadline) {
		w.done(b, false)
		b.finish(0, fmt.Errorf("%w: its turn to be written came after its deadline", ErrPeerStalled))
		return
	}
	n, all, err := w.writeNow(b)
	if !all && err == nil {
		dl := time.Now().Add(pumpSlice)
		if b.deadline.Before(dl) {
			dl = b.deadline
		}
		d.SetWriteDeadline(dl)
		var m int
		m, err = w.link.Write(b.data[n:])
		n += m
	}
	if err != nil && n < len(b.data) && isTimeout(err) {
		rest := &batch{data: b.data[n:], deadline: b.deadline, done: b.done}
		w.mu.Lock()
		w.q = append([]*batch{rest}, w.q...)
		w.queued += len(rest.data)
		w.writing = false
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	w.done(b, false)
	if err != nil {
		err = failed(b, n, err)
	}
	b.finish(n, err)
}

// writeNow writes what of b the link takes at once, if it can (a
// link.NowWriter): all says b was written whole. Its error is the link's.
func (w *writer) writeNow(b *batch) (n int, all bool, err error) {
	nw, ok := w.link.(link.NowWriter)
	if !ok || len(b.data) == 0 {
		return 0, len(b.data) == 0, nil
	}
	n, err = nw.WriteNow(b.data)
	return n, err == nil && n == len(b.data), err
}

// late is the error of a batch whose turn came after its deadline.
func (w *writer) late() error {
	return fmt.Errorf("%w: its turn to be written came after its %v deadline; nothing of it was written", ErrPeerStalled, w.timeout)
}

// write writes b under its deadline: what the link takes at once first
// (the common case: no deadline set, no cancellation armed — each cost a
// timer and allocations per tool call's send), then the rest. ctx ending
// while the rest waits cuts the write short.
func (w *writer) write(ctx context.Context, b *batch) (int, error) {
	if time.Now().After(b.deadline) {
		return 0, w.late()
	}
	n, all, err := w.writeNow(b)
	switch {
	case err != nil:
		return n, failed(b, n, err)
	case all:
		return n, nil
	}
	d, bounded := w.link.(link.WriteDeadliner)
	if !bounded || ctx.Done() == nil {
		return w.writeRest(b, n)
	}
	stop := context.AfterFunc(ctx, func() { d.SetWriteDeadline(time.Now()) })
	n, err = w.writeRest(b, n)
	stop()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("cancelled while being written, after %d of %d bytes: %w", n, len(b.data), ctx.Err())
	}
	return n, err
}

// failed is the error of a write of b that failed after n bytes.
func failed(b *batch, n int, err error) error {
	return fmt.Errorf("write to the peer failed after %d of %d bytes: %w", n, len(b.data), err)
}

// writeRest writes b from byte off on, under b's deadline; n counts from
// the start of b.
func (w *writer) writeRest(b *batch, off int) (int, error) {
	if d, ok := w.link.(link.WriteDeadliner); ok {
		d.SetWriteDeadline(b.deadline)
	}
	n, err := w.link.Write(b.data[off:])
	n += off
	if err == nil {
		return n, nil
	}
	if isTimeout(err) {
		return n, fmt.Errorf("%w: the write timed out after %v with %d of %d bytes written", ErrPeerStalled, w.timeout, n, len(b.data))
	}
	return n, failed(b, n, err)
}

// close stops the writer: queued batches fail with err, and so does every
// later submit. A write in progress ends when the link is closed.
func (w *writer) close(err error) {
	w.mu.Lock()
	if w.closed != nil {
		w.mu.Unlock()
		return
	}
	w.closed = err
	q := w.q
	w.q, w.queued = nil, 0
	close(w.quit)
	w.mu.Unlock()
	for _, b := range q {
		b.finish(0, err)
	}
}

// isTimeout says whether a write failed at its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}
