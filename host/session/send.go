package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// Send writes p to the peer through the chain (outbound: e.g. telnet
// doubles 0xFF) and waits until the bytes are written. It always answers
// within the write deadline (Config.WriteTimeout) or when ctx ends: with
// nil (everything was written), or an error that says how much was
// written. Nothing written after an error of the same send.
func (s *Session) Send(ctx context.Context, p []byte) error {
	return s.send(ctx, p, true, false, nil)
}

// sendRaw is Send without the input hook (a secret is not a command line
// to vet, and must not be kept as one).
func (s *Session) sendRaw(ctx context.Context, p []byte) error {
	return s.send(ctx, p, false, false, nil)
}

// send walks p toward the peer. human says the keys are those of the
// person holding the keyboard (SendHuman); anyone else's are refused while
// a person holds it. shown, when not nil, is what a recording shows of p
// instead (a secret's mask).
func (s *Session) send(ctx context.Context, p []byte, vet, human bool, shown []byte) error {
	if !s.Alive() {
		return s.disconnectedErr()
	}
	if !human {
		if err := s.humanRefusal(); err != nil {
			return err
		}
	}
	s.sends.Add(1)
	if vet && s.lineCheck != nil && s.lineCheck.Active() {
		return s.sendChecked(ctx, p) // linecheck.go
	}
	start := time.Now()
	deadline := start.Add(s.cfg.WriteTimeout)
	if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
		return err
	}
	if vet && s.onInput != nil {
		if err := s.onInput(p); err != nil {
			s.unlockChain()
			return err
		}
	}
	if b := s.rec.Load(); b != nil {
		s.recordInput(b.r, p, shown)
	}
	w := &s.w
	w.reset()
	w.stack = append(w.stack, step{i: len(s.chain) - 1, dir: abi.Outbound, data: p})
	w.run()
	b := w.commit(true)
	inline, err := s.reserve(b)
	s.unlockChain()
	s.touchAt(start)
	if err != nil {
		return err
	}
	return s.deliver(ctx, b, inline, deadline)
}

// reserve takes a batch's place in the order of writes (see
// writer.reserve); the caller holds the chain lock.
func (s *Session) reserve(b *batch) (inline bool, err error) {
	if b == nil {
		return false, nil
	}
	return s.wr.reserve(b)
}

// deliver writes a batch someone waits for, whose place reserve took, and
// returns how it went: written from this goroutine when it was reserved
// inline, else through the writer's queue, waiting at most until deadline
// (plus a moment for the writer to report) or until ctx ends.
func (s *Session) deliver(ctx context.Context, b *batch, inline bool, deadline time.Time) error {
	if b == nil {
		return nil // the chain consumed the input: nothing to write
	}
	if inline {
		s.wr.writeReserved(ctx, b)
		return s.result(b)
	}
	t := time.NewTimer(time.Until(deadline) + 250*time.Millisecond)
	defer t.Stop()
	select {
	case <-b.done:
		return s.result(b)
	case <-ctx.Done():
		if b.cancel() {
			return fmt.Errorf("cancelled before anything was written: %w", ctx.Err())
		}
		return fmt.Errorf("cancelled while being written (some bytes may have reached the peer): %w", ctx.Err())
	case <-t.C:
		if b.cancel() {
			return fmt.Errorf("%w: nothing was written within %v (earlier output is still waiting for it)", ErrPeerStalled, s.cfg.WriteTimeout)
		}
		return fmt.Errorf("%w: the write did not finish within %v", ErrPeerStalled, s.cfg.WriteTimeout)
	}
}

// result is how a written batch went, said for the caller.
func (s *Session) result(b *batch) error {
	n, err := b.result()
	if err != nil && !s.Alive() {
		return fmt.Errorf("%w after %d of %d bytes were written: %v", s.disconnectedErr(), n, len(b.data), err)
	}
	return err
}

// Control sends a JSON control request (e.g. {"op":"interrupt"}) to the
// chain's plugins, last first, and returns the first reply. With broadcast
// every plugin (and the screen) gets it (resize); otherwise the first that
// accepts it wins. Bytes the plugins emit toward the peer are written
// before Control returns. handled says whether any plugin accepted it.
func (s *Session) Control(ctx context.Context, req []byte, broadcast bool) (reply []byte, handled bool, err error) {
	if !s.Alive() {
		return nil, false, s.disconnectedErr()
	}
	deadline := time.Now().Add(s.cfg.WriteTimeout)
	if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
		return nil, false, err
	}
	s.catchUpScreen() // a resize or question comes after every byte so far
	w := &s.w
	w.reset()
	var firstErr error
	bs := s.chain
	if broadcast {
		bs = s.bindings()
	}
	for i := len(bs) - 1; i >= 0; i-- {
		w.calls++
		w.begin(i)
		if err := bs[i].Control(req, w); err != nil {
			var f interface{ Fatal() bool }
			if errors.As(err, &f) && f.Fatal() {
				w.fatal = err
				break
			}
			w.Discard()
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		handled = true
		w.queue(step{}, false)
		w.run()
		if !broadcast {
			break
		}
	}
	s.syncScreen() // a control request may have moved the screen to a new instance
	reply = w.reply
	b := w.commit(true)
	inline, err := s.reserve(b)
	s.unlockChain()
	if err != nil {
		return nil, handled, err
	}
	if !handled {
		if inline {
			s.wr.writeReserved(ctx, b) // what a failed plugin emitted before it failed was discarded; anything else still goes
		}
		return nil, false, firstErr
	}
	return reply, true, s.deliver(ctx, b, inline, deadline)
}

// Interrupt delivers the kind's interrupt (SPEC SES-10): op is
// "interrupt", "break" or "ayt". The chain's plugins get it first (Telnet:
// IAC IP, IAC BRK, IAC AYT; SSH: a signal request); if none takes it, a
// link that can signal does (PTY: SIGINT to the foreground process group).
func (s *Session) Interrupt(ctx context.Context, op string) error {
	if err := s.humanRefusal(); err != nil {
		return err
	}
	req, _ := json.Marshal(map[string]string{"op": op})
	_, handled, err := s.Control(ctx, req, false)
	if handled || (err != nil && !s.Alive()) {
		return err
	}
	if sig, ok := s.link.(link.Signaler); ok && op == "interrupt" {
		return sig.Signal("interrupt")
	}
	if err == nil {
		err = errors.New("no plugin takes it")
	}
	return fmt.Errorf("%w: %s (%v)", ErrUnsupported, op, err)
}

// Resize changes the session's screen size: the link's window (PTY), the
// plugins (Telnet re-sends NAWS) and the screen.
func (s *Session) Resize(ctx context.Context, cols, rows int) error {
	if !s.Alive() {
		return s.disconnectedErr()
	}
	if err := CheckSize(cols, rows); err != nil {
		return err
	}
	s.mu.Lock()
	s.cols, s.rows = cols, rows
	s.mu.Unlock()
	if r := s.recorder(); r != nil {
		r.Resize(cols, rows)
	}
	if r, ok := s.link.(link.Resizer); ok {
		if err := r.Resize(cols, rows); err != nil {
			return fmt.Errorf("resize the peer's window: %w", err)
		}
	}
	req, _ := json.Marshal(map[string]any{"op": "resize", "cols": cols, "rows": rows})
	_, _, err := s.Control(ctx, req, true)
	return err
}
