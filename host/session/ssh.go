package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// SSHOptions open an SSH connection as a session: the host dials TCP and
// owns every secret; the ssh plugin, first in the chain, speaks the
// protocol and asks the host (HostCall) for passwords, signatures and
// host-key verdicts (SPEC SSH-8).
type SSHOptions struct {
	Host    string
	Port    int
	Timeout time.Duration // connect timeout, covering dial, handshake and authentication (default 10 s)
	Name    string
	Owner   string
	// Start is the plugin's start request without its "op" (user, auth
	// methods, host-key algorithms…).
	Start map[string]any
	// HostCall answers the plugin's synchronous requests. It runs while
	// the session's chain is busy: it must not call back into the session.
	HostCall func(req []byte) ([]byte, error)
	// OnEvent sees every event the chain emits, decoded, before it is
	// recorded, and the exec channels' output (Spec.OnEvent); returning
	// true consumes it.
	OnEvent func(e *Event) bool
	// OnInput vets what is typed into the shell (Spec.OnInput).
	OnInput func(p []byte) error
	// LineCheck checks typed lines as the screen shows them (Spec.LineCheck).
	LineCheck *LineCheck
	// Shell opens an interactive shell on a PTY channel, whose output is
	// the session's output (SPEC SSH-9); without it the session only runs
	// exec channels (ssh_execute).
	Shell   bool
	Term    string
	Cols    int
	Rows    int
	Plugins []string // chain after "ssh" (a dialect)
	Screen  string
	// Dialect: as TelnetOptions.Dialect.
	Dialect string
}

// ErrSSH is a failed SSH connection: dial, handshake, host key or
// authentication; the message says which.
var ErrSSH = errors.New("SSH connection failed")

// OpenSSH opens an SSH session and waits until it is connected (and its
// shell channel open, with Shell), or fails within the connect timeout.
func (r *Registry) OpenSSH(ctx context.Context, attach Attacher, o SSHOptions) (*Session, error) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	o.Cols, o.Rows = orDefault(o.Cols, 80), orDefault(o.Rows, 24)
	om := map[string]any{"term": o.Term, "cols": o.Cols, "rows": o.Rows}
	plugins := withDialect(append([]string{"ssh"}, o.Plugins...), o.Dialect, om)
	opts, _ := json.Marshal(om)
	deadline := time.Now().Add(o.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The plugin reports the connection's end as a "closed" event (after
	// an "error" one when it failed): the session ends with its reason.
	var self atomic.Pointer[Session]
	onEvent := func(e *Event) bool {
		if o.OnEvent != nil && o.OnEvent(e) {
			return true
		}
		if c, ok := e.Body.(*abi.Closed); ok {
			if s := self.Load(); s != nil {
				go s.end(fmt.Errorf("SSH connection closed: %s", c.Reason))
			}
		}
		return false
	}
	s, err := r.Open(ctx, attach, Spec{
		Kind: KindSSH, Name: o.Name, Owner: o.Owner,
		Peer: Peer{Host: link.UnbracketHost(o.Host), Port: o.Port},
		Cols: o.Cols, Rows: o.Rows, Options: opts,
		Plugins: plugins, Screen: o.Screen,
		OnEvent: onEvent, OnInput: o.OnInput, LineCheck: o.LineCheck,
		Dial: func(ctx context.Context) (link.Link, error) {
			return link.DialTCP(ctx, o.Host, o.Port, time.Until(deadline))
		},
	})
	if err != nil {
		if errors.Is(err, ErrLimit) || errors.Is(err, ErrNameTaken) || errors.Is(err, ErrInvalidName) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrSSH, err)
	}
	self.Store(s)
	fail := func(err error) (*Session, error) {
		r.Remove(s.ID)
		return nil, err
	}
	if len(s.chain) == 0 {
		return fail(fmt.Errorf("%w: no ssh plugin in the chain", ErrSSH))
	}
	hc, ok := s.chain[0].(interface {
		SetHostCall(func([]byte) ([]byte, error))
	})
	if !ok {
		return fail(fmt.Errorf("%w: the ssh plugin binding cannot take host calls", ErrSSH))
	}
	hc.SetHostCall(o.HostCall)
	seq := s.lastSeq()
	start := map[string]any{"op": "start", "host": o.Host, "port": o.Port}
	for k, v := range o.Start {
		start[k] = v
	}
	req, _ := json.Marshal(start)
	if _, _, err := s.Control(ctx, req, false); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrSSH, err))
	}
	ev, err := s.awaitEvent(ctx, seq, abi.TypeConnected, abi.TypeError, abi.TypeClosed)
	if errors.Is(err, context.Canceled) {
		return fail(fmt.Errorf("%w: cancelled while connecting to %s", ErrSSH, s.Peer))
	}
	if err != nil {
		return fail(fmt.Errorf("%w: no answer from %s within %s (%v)", ErrSSH, s.Peer, o.Timeout, s.endReason(err)))
	}
	if ev.Type != abi.TypeConnected {
		return fail(fmt.Errorf("%w: %s", ErrSSH, eventMessage(ev)))
	}
	if !o.Shell {
		return s, nil
	}
	seq = s.lastSeq()
	req, _ = json.Marshal(map[string]any{"op": "shell", "ch": ShellChannel, "term": o.Term, "cols": o.Cols, "rows": o.Rows})
	if _, _, err := s.Control(ctx, req, false); err != nil {
		return fail(fmt.Errorf("%w: opening the shell: %v", ErrSSH, err))
	}
	ev, err = s.awaitEvent(ctx, seq, abi.TypeOpened, abi.TypeError, abi.TypeClosed, abi.TypeChannelClosed)
	if err != nil {
		return fail(fmt.Errorf("%w: the server did not open a shell within %s (%v)", ErrSSH, o.Timeout, s.endReason(err)))
	}
	if ev.Type != abi.TypeOpened {
		return fail(fmt.Errorf("%w: the server refused a shell: %s", ErrSSH, eventMessage(ev)))
	}
	return s, nil
}

// ShellChannel is the channel number of an SSH session's shell.
const ShellChannel = 1

// eventMessage is an error or closed event's message.
func eventMessage(ev Event) string {
	switch b := ev.Body.(type) {
	case *abi.Error:
		if b.Message != "" {
			return b.Message
		}
	case *abi.Closed:
		if b.Reason != "" {
			return b.Reason
		}
	}
	return string(ev.Type)
}

// endReason explains a failed wait: the session's end error if it ended.
func (s *Session) endReason(err error) string {
	if !s.Alive() {
		if e := s.disconnectedErr(); e != nil {
			return e.Error()
		}
	}
	return err.Error()
}

// lastSeq is the sequence number of the newest event.
func (s *Session) lastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextSeq
}

// awaitEvent waits for the first event after seq of one of the types, or
// for the session's end (an error), or ctx.
func (s *Session) awaitEvent(ctx context.Context, seq uint64, types ...abi.EventType) (Event, error) {
	for {
		s.mu.Lock()
		for _, e := range s.events {
			if e.Seq <= seq {
				continue
			}
			for _, t := range types {
				if e.Type == t {
					s.mu.Unlock()
					return e, nil
				}
			}
		}
		if s.state == StateTerminating || s.state == StateTerminated {
			s.mu.Unlock()
			return Event{}, s.disconnectedErr()
		}
		ch := s.watchLocked()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// AwaitEvent is awaitEvent for callers outside the package.
func (s *Session) AwaitEvent(ctx context.Context, seq uint64, types ...abi.EventType) (Event, error) {
	return s.awaitEvent(ctx, seq, types...)
}

// LastSeq is the sequence number of the newest event.
func (s *Session) LastSeq() uint64 { return s.lastSeq() }
