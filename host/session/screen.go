package session

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/termhost/termhost/host/link"

	"github.com/termhost/termhost/sdk/abi"
)

// replySink keeps the reply of one control call and drops the rest: a
// screen query changes nothing and sends nothing.
type replySink struct{ reply []byte }

func (r *replySink) Emit(stream abi.Stream, p []byte) {
	if stream == abi.Reply && r.reply == nil {
		r.reply = append([]byte{}, p...)
	}
}

func (r *replySink) Discard() { r.reply = nil }

// HasScreen says whether the session has a screen plugin.
func (s *Session) HasScreen() bool { return s.screen != nil }

// Screen asks the session's screen plugin a question (a JSON control
// request such as {"op":"screen","format":"plain"}) and returns its answer.
// It works on an ended session too, until the session is discarded: the
// final screen stays readable with the buffer. Queries take turns with the
// chain's walks, so an answer reflects whole chunks.
func (s *Session) Screen(ctx context.Context, req []byte) ([]byte, error) {
	if s.screen == nil {
		return nil, fmt.Errorf("%w: this session has no screen", ErrUnsupported)
	}
	if err := s.lockChain(ctx.Done(), s.cfg.WriteTimeout); err != nil {
		return nil, err
	}
	defer s.unlockChain()
	s.mu.Lock()
	gone := s.screenGone
	s.mu.Unlock()
	if gone {
		return nil, fmt.Errorf("%w: the session's screen was released", ErrExpired)
	}
	var sink replySink
	if err := s.screen.Control(req, &sink); err != nil {
		return nil, fmt.Errorf("screen: %w", err)
	}
	if sink.reply == nil {
		return nil, fmt.Errorf("screen: the %s plugin gave no answer", s.screenName())
	}
	return sink.reply, nil
}

func (s *Session) screenName() string {
	n, _ := s.screen.Plugin()
	return n
}

// releaseScreen closes the screen plugin's binding once the session is
// discarded (closed, reaped or expired); until then an ended session's
// final screen stays readable.
func (s *Session) releaseScreen() {
	if s.screen == nil {
		return
	}
	s.mu.Lock()
	gone := s.screenGone
	s.screenGone = true
	s.mu.Unlock()
	if gone {
		return
	}
	if err := s.lockChain(nil, s.cfg.CallGrace); err != nil {
		s.log.Warn("screen released while a call in it does not return", "err", err)
	} else {
		defer s.unlockChain()
	}
	s.screen.Close()
}

// Mark is the position a reader starting now would have: the end of the
// buffer and the last event so far. Waits from a mark see only what comes
// after it.
func (s *Session) Mark() Cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Cursor{Off: s.buf.Head(), Seq: s.nextSeq}
}

// Raw returns up to maxBytes of the most recent output (the raw byte
// stream, escape sequences included), starting at a character boundary,
// without moving any reader's cursor, and whether older bytes were left
// out.
func (s *Session) Raw(maxBytes int) ([]byte, bool) {
	if maxBytes <= 0 {
		maxBytes = defaultMaxBytes
	}
	head, tail := s.buf.Head(), s.buf.Tail()
	from := tail
	if head-tail > uint64(maxBytes) {
		from = head - uint64(maxBytes)
	}
	p, _, _ := s.buf.Read(from, int(head-from))
	cut := 0
	for cut < len(p) && cut < utf8.UTFMax && !utf8.RuneStart(p[cut]) {
		cut++
	}
	return p[cut:], from > tail || cut > 0
}

// AwaitExit waits at most d for the process's exit status (it is
// collected just after the session ends).
func (s *Session) AwaitExit(ctx context.Context, d time.Duration) (link.ExitStatus, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		ex, ch := s.exit, s.watchLocked()
		s.mu.Unlock()
		if ex != nil {
			return *ex, true
		}
		if _, ok := s.link.(link.Exiter); !ok {
			return link.ExitStatus{}, false
		}
		select {
		case <-ch:
		case <-t.C:
			return link.ExitStatus{}, false
		case <-ctx.Done():
			return link.ExitStatus{}, false
		}
	}
}
