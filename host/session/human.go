package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// A person at the live view (host/mcp view.go) can take a session's
// keyboard from the agent and give it back. While a person holds it, the
// agent's input — Send, SendCredential, Interrupt: every input tool, and
// the device layer's commands and logins on top of them — is refused with
// ErrHumanControl, the person's keys go in through SendHuman, and a wait
// that ends reports ReasonHuman (unless the session ended). Both moments
// are recorded in the session's event list as a HumanControl event, which
// reads show and a recorder can mark.

// ErrHumanControl is the agent's input refused while a person holds the
// session's keyboard. Retryable: wait_for {human: "released"} waits for
// the hand-back.
var ErrHumanControl = errors.New("a person has taken control of this session in the live view")

// Reasons a wait gives about the person.
const (
	// ReasonHuman: the wait ended (any way but the session's end) while
	// a person holds the keyboard.
	ReasonHuman Reason = "human"
	// ReasonReleased: the person gave the keyboard back (or nobody held
	// it when a WaitSpec.Released wait began).
	ReasonReleased Reason = "released"
)

// TypeHumanControl is the event type of a HumanControl event (a host
// event: no plugin emits it).
const TypeHumanControl abi.EventType = "human_control"

// HumanControl is the host event of a person taking the keyboard (Taken)
// or giving it back.
type HumanControl struct {
	Taken bool
}

// EventType is TypeHumanControl.
func (HumanControl) EventType() abi.EventType { return TypeHumanControl }

// AppendEvent appends the event as its JSON object.
func (h HumanControl) AppendEvent(b []byte) []byte {
	b = append(b, `{"type":"human_control","control":`...)
	if h.Taken {
		return append(b, `"taken"}`...)
	}
	return append(b, `"given back"}`...)
}

// HumanHolder reports who holds the keyboard ("" and false: the agent).
func (s *Session) HumanHolder() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.human, s.human != ""
}

// TakeControl gives the keyboard to the person by (an id of the viewer's
// own, never empty). It is refused when another person holds it, or when
// the session has ended. Taking it twice is a no-op.
func (s *Session) TakeControl(by string) error {
	if by == "" {
		return errors.New("TakeControl needs the viewer's id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == StateTerminated || s.state == StateTerminating:
		return ErrDisconnected
	case s.human == by:
		return nil
	case s.human != "":
		return fmt.Errorf("%w (another viewer holds it)", ErrHumanControl)
	}
	s.human = by
	s.humanEventLocked(true)
	return nil
}

// GiveBack returns the keyboard to the agent if by holds it, and reports
// whether it did.
func (s *Session) GiveBack(by string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if by == "" || s.human != by {
		return false
	}
	s.human = ""
	s.humanEventLocked(false)
	return true
}

// humanEventLocked records a HumanControl event at the end of the output
// and wakes waiters. Caller holds mu.
func (s *Session) humanEventLocked(taken bool) {
	s.addEventsLocked([]Event{{Offset: s.buf.Head(), Type: TypeHumanControl, At: time.Now(), Body: &HumanControl{Taken: taken}}})
	s.notifyLocked()
}

// humanRefusal is the error for the agent's input while a person holds
// the keyboard, nil otherwise.
func (s *Session) humanRefusal() error {
	if _, held := s.HumanHolder(); held {
		return fmt.Errorf("%w; your input is refused until they give it back (retry after wait_for {human: \"released\"})", ErrHumanControl)
	}
	return nil
}

// SendHuman writes the keys of the person holding the keyboard (by) to
// the peer through the chain, as Send does, but past the agent's input
// stages (the rules are the agent's; the person is whoever holds the
// token). Refused when by does not hold the keyboard.
func (s *Session) SendHuman(ctx context.Context, by string, p []byte) error {
	if holder, _ := s.HumanHolder(); by == "" || holder != by {
		return errors.New("take control first: the keyboard is the agent's")
	}
	return s.send(ctx, p, false, true, nil)
}

// Changed returns a channel closed at the next change of the session:
// output or events committed, a state change, control taken or given.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watchLocked()
}

// ViewScreen asks the screen plugin questions (ask may call q several
// times) with the chain held, so every answer reflects the same output:
// the bytes before the returned offset. A viewer that then streams the
// output from that offset (ReadRange) sees what the agent sees.
func (s *Session) ViewScreen(ctx context.Context, ask func(q func(req []byte) ([]byte, error)) error) (at uint64, err error) {
	if s.screen == nil {
		return 0, fmt.Errorf("%w: this session has no screen", ErrUnsupported)
	}
	if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
		return 0, err
	}
	defer s.unlockChain()
	at = s.buf.Head()
	s.mu.Lock()
	gone, frozen := s.screenGone, s.frozen
	s.mu.Unlock()
	if gone {
		return 0, fmt.Errorf("%w: the session's screen was released", ErrExpired)
	}
	q := func(req []byte) ([]byte, error) {
		if frozen != nil {
			return s.askFrozen(frozen, req)
		}
		s.screenUp()
		return s.ask(s.screen, req)
	}
	return at, ask(q)
}

// Owner is the session's owner (owner.go), for the live view, which shows
// a person the sessions of their token.
func (s *Session) Owner() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner
}
