package session

import (
	"context"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/termhost/termhost/host/ansi"
)

// Reason says why a wait returned (SPEC SES-7).
type Reason string

const (
	ReasonImmediate Reason = "immediate" // no wait was asked for
	ReasonMatched   Reason = "matched"
	ReasonPrompt    Reason = "prompt"
	ReasonIdle      Reason = "idle"
	ReasonExit      Reason = "exit"
	ReasonEOF       Reason = "eof"
	ReasonTimeout   Reason = "timeout"
)

// WaitSpec is what to wait for; any satisfied condition ends the wait.
type WaitSpec struct {
	Until   *regexp.Regexp // matches new output (escape sequences ignored)
	Prompt  bool           // a plugin marked a prompt in new output
	Idle    time.Duration  // quiet this long after at least one new byte
	Exit    bool           // the peer went away / the process exited
	Timeout time.Duration  // overall limit; clamped to the server ceiling
}

// Empty says whether nothing at all is waited for.
func (w WaitSpec) Empty() bool {
	return w.Until == nil && !w.Prompt && w.Idle <= 0 && !w.Exit && w.Timeout <= 0
}

// WaitCeiling is the timeout a wait asking for d actually gets: d clamped
// to the server's ceiling (which is also the default).
func (s *Session) WaitCeiling(d time.Duration) time.Duration {
	if d <= 0 || d > s.cfg.MaxWait {
		return s.cfg.MaxWait
	}
	return d
}

// untilWindow bounds how much new output an until pattern is matched
// against, so a flood cannot make every wake-up quadratic.
const untilWindow = 256 << 10

// Wait blocks until spec is satisfied for output after offset from, and
// returns why, and the timeout it actually used. Cancelling ctx (e.g. MCP
// notifications/cancelled) stops it with ctx's error.
func (s *Session) Wait(ctx context.Context, from uint64, spec WaitSpec) (Reason, time.Duration, error) {
	timeout := s.WaitCeiling(spec.Timeout)
	if spec.Empty() {
		return ReasonImmediate, 0, nil
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	deadline := time.Now().Add(timeout)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var scanned uint64 // until: head offset already matched without success
	for {
		s.mu.Lock()
		ch := s.watchLocked()
		head := s.buf.Head()
		ended := s.state == StateTerminated || s.state == StateTerminating
		lastRx := s.lastRx
		prompt := spec.Prompt && len(s.prompts) > 0 && s.prompts[len(s.prompts)-1] > from
		s.mu.Unlock()

		if spec.Until != nil && head > from && head != scanned {
			scanned = head
			start := from
			if head-start > untilWindow {
				start = head - untilWindow
			}
			p, _, _ := s.buf.Read(start, 0)
			if spec.Until.Match(ansi.Strip(p)) {
				return ReasonMatched, timeout, nil
			}
		}
		if prompt {
			return ReasonPrompt, timeout, nil
		}
		if ended {
			if spec.Exit {
				return ReasonExit, timeout, nil
			}
			return ReasonEOF, timeout, nil
		}
		now := time.Now()
		var idle *time.Timer
		var idleC <-chan time.Time
		if spec.Idle > 0 && head > from {
			quiet := now.Sub(lastRx)
			if quiet >= spec.Idle {
				return ReasonIdle, timeout, nil
			}
			idle = time.NewTimer(spec.Idle - quiet)
			idleC = idle.C
		}
		if !now.Before(deadline) {
			return ReasonTimeout, timeout, nil
		}
		select {
		case <-ch:
		case <-idleC:
		case <-timer.C:
			return ReasonTimeout, timeout, nil
		case <-ctx.Done():
			return "", timeout, ctx.Err()
		}
		if idle != nil {
			idle.Stop()
		}
	}
}

// ReadOptions control a read of the default cursor.
type ReadOptions struct {
	Wait     WaitSpec
	MaxBytes int  // <= 0: 64 KiB
	UTF8     bool // never split a multi-byte character across reads
	Peek     bool // do not advance the cursor
}

// ReadResult is what a read returns.
type ReadResult struct {
	Data      []byte
	Reason    Reason
	TimeoutMs int64
	Evicted   uint64 // bytes lost to eviction before they were read
	HasMore   bool   // more unread bytes remain (MaxBytes was reached)
	Events    []Event
	Alive     bool
}

const defaultMaxBytes = 64 << 10

// Read waits per opts.Wait, then returns new output since the last read and
// advances the cursor past it.
func (s *Session) Read(ctx context.Context, opts ReadOptions) (ReadResult, error) {
	s.mu.Lock()
	from := s.cursor
	s.mu.Unlock()
	reason, used, err := s.Wait(ctx, from, opts.Wait)
	if err != nil {
		return ReadResult{}, err
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = defaultMaxBytes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	from = s.cursor // another reader may have moved it while we waited
	p, next, evicted := s.buf.Read(from, limit+utf8.UTFMax)
	head := s.buf.Head()
	res := ReadResult{Reason: reason, TimeoutMs: used.Milliseconds(), Evicted: evicted}
	alive := s.state != StateTerminated && s.state != StateTerminating
	res.Alive = alive
	truncated := len(p) > limit
	if truncated {
		p = p[:limit]
	}
	if opts.UTF8 && (truncated || alive) {
		// Hold back a character whose remaining bytes are not in p (not
		// read yet, or not arrived yet).
		p = p[:utf8Cut(p)]
	}
	next = from + evicted + uint64(len(p))
	if from+evicted > next { // defensive; cannot happen
		next = from + evicted
	}
	res.Data = p
	res.HasMore = next < head
	res.Events = nil
	for _, e := range s.events {
		if e.Offset > from && e.Offset <= next {
			res.Events = append(res.Events, e)
		}
	}
	if !opts.Peek {
		s.cursor = next
	}
	s.lastActive = time.Now()
	return res, nil
}

// utf8Cut returns the length of p without a trailing incomplete UTF-8
// sequence.
func utf8Cut(p []byte) int {
	for back := 1; back <= utf8.UTFMax && back <= len(p); back++ {
		c := p[len(p)-back]
		if c < 0x80 {
			return len(p) // ASCII: nothing pending
		}
		if !utf8.RuneStart(c) {
			continue
		}
		// c starts a sequence of the length its leading bits announce.
		need := 0
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		default:
			return len(p) // invalid lead byte: nothing to wait for
		}
		if back < need {
			return len(p) - back // incomplete: hold it back
		}
		return len(p)
	}
	return len(p)
}
