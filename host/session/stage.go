package session

import (
	"fmt"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// A Stage is a filter a session's traffic passes through besides its
// plugin chain, declared in its Spec (Spec.Stages) rather than as a hook
// per feature. What a stage filters is the interfaces it implements:
//
//   - OutputStage: the bytes the chain passes toward the buffer (masking
//     the server's secrets; Registry.Open puts it first in every session's
//     stages, so no kind can leave it out: SPEC TRUST-2);
//   - InputStage: what is sent, before anything of it is written (an SSH
//     shell's command rules on the typed-line model);
//   - EventStage: the events the chain emits, before they are recorded
//     (an exec-only SSH session's channel output);
//   - *LineCheck: typed lines, as the screen shows them at Enter.
//
// Stages of a kind run in the order the Spec names them.
type Stage interface {
	// StageName says what the stage is, for errors and logs.
	StageName() string
}

// An OutputStage filters the bytes the chain passes toward the buffer,
// chunk by chunk; it may hold a tail back until the next chunk says what
// it is (the engine passes it on once the peer has been quiet for
// Config.UTF8Hold). Its methods are called with the chain lock held.
type OutputStage interface {
	Stage
	// Filter returns what of p passes on now. The result may alias the
	// stage's own memory until its next call.
	Filter(p []byte) []byte
	// Flush returns everything held back, holding nothing any more.
	Flush() []byte
	// HeldSince is when the stage last held bytes back; zero when it
	// holds none.
	HeldSince() time.Time
	// Save remembers the stage's state at the start of a plugin call;
	// Restore goes back to it when what the call emitted is discarded.
	Save()
	Restore()
}

// An InputStage vets what is sent (Session.Send) before anything of it is
// written; an error refuses the whole input.
type InputStage interface {
	Stage
	CheckInput(p []byte) error
}

// An EventStage sees each event the chain emits, decoded, before it is
// recorded (and before its text is masked); returning true consumes it.
// Channel emissions come to it too, as events with an *abi.ChannelData
// body: one no stage consumes is dropped (bulk data is never recorded).
// What the event's body points to is valid only during the call.
type EventStage interface {
	Stage
	FilterEvent(e *Event) bool
}

// InputFunc is an InputStage made of a function.
type InputFunc func(p []byte) error

func (InputFunc) StageName() string           { return "input" }
func (f InputFunc) CheckInput(p []byte) error { return f(p) }

// EventFunc is an EventStage made of a function.
type EventFunc func(e *Event) bool

func (EventFunc) StageName() string           { return "event" }
func (f EventFunc) FilterEvent(e *Event) bool { return f(e) }

// StageName: a LineCheck is a stage of its own kind (linecheck.go).
func (*LineCheck) StageName() string { return "linecheck" }

// stageSet is a spec's stages sorted into the places the engine runs
// them (the Session fields of the same names).
type stageSet struct {
	outputs   []OutputStage
	onInput   func(p []byte) error
	onEvent   func(e *Event) bool
	lineCheck *LineCheck
}

// sortStages sorts stages by where they run; a stage that filters
// nothing a session has, or a second line check, is an error.
func sortStages(stages []Stage) (stageSet, error) {
	var s stageSet
	var inputs []InputStage
	var events []EventStage
	for _, st := range stages {
		used := false
		if o, ok := st.(OutputStage); ok {
			s.outputs = append(s.outputs, o)
			used = true
		}
		if in, ok := st.(InputStage); ok {
			inputs = append(inputs, in)
			used = true
		}
		if ev, ok := st.(EventStage); ok {
			events = append(events, ev)
			used = true
		}
		if lc, ok := st.(*LineCheck); ok {
			if s.lineCheck != nil {
				return s, fmt.Errorf("session spec: a second line check (stage %q)", st.StageName())
			}
			s.lineCheck, used = lc, true
		}
		if !used {
			return s, fmt.Errorf("session spec: stage %q filters nothing a session has", st.StageName())
		}
	}
	if len(inputs) > 0 {
		s.onInput = func(p []byte) error {
			for _, in := range inputs {
				if err := in.CheckInput(p); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if len(events) > 0 {
		s.onEvent = func(ev *Event) bool {
			for _, e := range events {
				if e.FilterEvent(ev) {
					return true
				}
			}
			return false
		}
	}
	return s, nil
}

// stage puts bytes for the buffer through the output stages. Caller holds
// the chain lock.
func (s *Session) stage(p []byte) {
	held := false
	for _, o := range s.outputs {
		p = o.Filter(p)
		held = held || !o.HeldSince().IsZero()
	}
	s.stageBuf(p)
	if held {
		s.armRelease()
	}
}

// stageBuf stages p in the buffer and notes whether text held back for a
// screen at rest stays plain text (walker.holdText). Caller holds the
// chain lock.
func (s *Session) stageBuf(p []byte) {
	s.buf.Stage(p)
	if s.screenRest && !s.w.notText && !abi.IsText(p) {
		s.w.notText = true
	}
}

// heldSince is when an output stage began holding what it holds now
// (the earliest; zero: nothing is held). Caller holds the chain lock.
func (s *Session) heldSince() time.Time {
	var at time.Time
	for _, o := range s.outputs {
		if h := o.HeldSince(); !h.IsZero() && (at.IsZero() || h.Before(at)) {
			at = h
		}
	}
	return at
}

// flushHeld stages what the output stages hold, each stage's rest going
// through the stages after it. Caller holds the chain lock.
func (s *Session) flushHeld() {
	for i, o := range s.outputs {
		p := o.Flush()
		if len(p) == 0 {
			continue
		}
		for _, next := range s.outputs[i+1:] {
			p = next.Filter(p)
		}
		s.stageBuf(p)
	}
}

// saveStages and restoreStages bracket a plugin call (walker.begin and
// Discard). Caller holds the chain lock.
func (s *Session) saveStages() {
	for _, o := range s.outputs {
		o.Save()
	}
}

func (s *Session) restoreStages() {
	for _, o := range s.outputs {
		o.Restore()
	}
}

// armRelease makes sure held bytes are passed on once the peer has been
// quiet for the hold time. Caller holds the chain lock.
func (s *Session) armRelease() {
	if s.holdTimer != nil {
		s.holdTimer.Reset(s.cfg.UTF8Hold)
		return
	}
	s.holdTimer = time.AfterFunc(s.cfg.UTF8Hold, s.releaseHeld)
}

// releaseHeld passes on what the output stages hold back once the peer
// has been quiet for the hold time, through a walk of its own so the
// screen and waiters see it.
func (s *Session) releaseHeld() {
	select {
	case <-s.released:
		return
	case s.chainSem <- struct{}{}:
	}
	defer s.unlockChain()
	select {
	case <-s.released:
		return // release flushed what it could; the plugins are gone
	default:
	}
	at := s.heldSince()
	if at.IsZero() {
		return
	}
	if wait := s.cfg.UTF8Hold - time.Since(at); wait > 0 {
		s.holdTimer.Reset(wait)
		return
	}
	w := &s.w
	w.reset()
	s.flushHeld()
	w.run()
	s.submit(w.commit(false))
}
