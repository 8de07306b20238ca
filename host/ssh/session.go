package ssh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// Options open an SSH connection as a session: the host dials TCP and
// owns every secret; the ssh plugin, first in the chain, speaks the
// protocol and asks the host (HostCall) for passwords, signatures and
// host-key verdicts (SPEC SSH-8).
type Options struct {
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
	// recorded, and the exec channels' output (a session.EventFunc);
	// returning true consumes it.
	OnEvent func(e *session.Event) bool
	// OnInput vets what is typed into the shell (a session.InputFunc).
	OnInput func(p []byte) error
	// OnOpen, if set, is told when the session is in the registry (its
	// TCP connection made), before the SSH handshake.
	OnOpen func()
	// LineCheck checks typed lines as the screen shows them (a stage).
	LineCheck *session.LineCheck
	// Shell opens an interactive shell on a PTY channel, whose output is
	// the session's output (SPEC SSH-9); without it the session only runs
	// exec channels (ssh_execute).
	Shell   bool
	Term    string
	Cols    int
	Rows    int
	Plugins []string // chain after "ssh" (a dialect)
	// Dialect attaches the dialect plugin (session.Spec.Dialect).
	Dialect string
	// Record records the session from its start (session.Spec.Record).
	Record bool
}

// ErrSSH is a failed SSH connection: dial, handshake, host key or
// authentication; the message says which.
var ErrSSH = errors.New("SSH connection failed")

// Plugin is the ssh plugin, first in the chain of every SSH session.
const Plugin = "ssh"

// Open opens an SSH session and waits until it is connected (and its
// shell channel open, with Shell), or fails within the connect timeout.
func Open(ctx context.Context, r *session.Registry, attach session.Attacher, o Options) (*session.Session, error) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	o.Cols, o.Rows = session.DefaultSize(o.Cols, o.Rows)
	opts, _ := json.Marshal(map[string]any{"term": o.Term, "cols": o.Cols, "rows": o.Rows})
	// The connect timeout starts at the dial: compiling or starting the
	// plugins before it (a cold cache, a loaded machine) is not the
	// network's time (issue 34: a 10 s compile once left nothing to
	// connect with). Open itself is bounded by the caller's context.
	var deadline time.Time
	// The plugin reports the connection's end as a "closed" event (after
	// an "error" one when it failed): the session ends with its reason.
	var self atomic.Pointer[session.Session]
	onEvent := func(e *session.Event) bool {
		if o.OnEvent != nil && o.OnEvent(e) {
			return true
		}
		if c, ok := e.Body.(*abi.Closed); ok {
			if s := self.Load(); s != nil {
				go s.End(fmt.Errorf("SSH connection closed: %s", c.Reason))
			}
		}
		return false
	}
	// The ssh binding answers its host calls with HostCall from the
	// start.
	withHostCall := func(name string, kind abi.Kind, opts []byte) (session.Binding, error) {
		b, err := attach(name, kind, opts)
		if err != nil || name != Plugin {
			return b, err
		}
		hc, ok := b.(interface {
			SetHostCall(func([]byte) ([]byte, error))
		})
		if !ok {
			b.Close()
			return nil, errors.New("the ssh plugin binding cannot take host calls")
		}
		hc.SetHostCall(o.HostCall)
		return b, nil
	}
	stages := []session.Stage{session.EventFunc(onEvent)}
	if o.OnInput != nil {
		stages = append(stages, session.InputFunc(o.OnInput))
	}
	if o.LineCheck != nil {
		stages = append(stages, o.LineCheck)
	}
	s, err := r.Open(ctx, withHostCall, session.Spec{
		Kind: session.KindSSH, Name: o.Name, Owner: o.Owner,
		Peer: session.Peer{Host: link.UnbracketHost(o.Host), Port: o.Port},
		Cols: o.Cols, Rows: o.Rows, Options: opts,
		Plugins: append([]string{Plugin}, o.Plugins...), Screen: o.Shell, Dialect: o.Dialect, Record: o.Record,
		Stages: stages,
		Dial: func(ctx context.Context) (link.Link, error) {
			deadline = time.Now().Add(o.Timeout)
			return link.DialTCP(ctx, o.Host, o.Port, o.Timeout)
		},
	})
	if err != nil {
		if errors.Is(err, session.ErrLimit) || errors.Is(err, session.ErrNameTaken) || errors.Is(err, session.ErrInvalidName) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrSSH, err)
	}
	self.Store(s)
	if o.OnOpen != nil {
		o.OnOpen()
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	fail := func(err error) (*session.Session, error) {
		r.Remove(s.ID)
		return nil, err
	}
	seq := s.LastSeq()
	start := map[string]any{"op": "start", "host": o.Host, "port": o.Port}
	for k, v := range o.Start {
		start[k] = v
	}
	req, _ := json.Marshal(start)
	if _, _, err := s.Control(ctx, req, false); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrSSH, err))
	}
	ev, err := s.AwaitEvent(ctx, seq, abi.TypeConnected, abi.TypeError, abi.TypeClosed)
	if errors.Is(err, context.Canceled) {
		return fail(fmt.Errorf("%w: cancelled while connecting to %s", ErrSSH, s.Peer))
	}
	if err != nil {
		return fail(fmt.Errorf("%w: no answer from %s within %s (%v)", ErrSSH, s.Peer, o.Timeout, s.EndReason(err)))
	}
	if ev.Type != abi.TypeConnected {
		return fail(fmt.Errorf("%w: %s", ErrSSH, eventMessage(ev)))
	}
	if !o.Shell {
		return s, nil
	}
	seq = s.LastSeq()
	req, _ = json.Marshal(map[string]any{"op": "shell", "ch": ShellChannel, "term": o.Term, "cols": o.Cols, "rows": o.Rows})
	if _, _, err := s.Control(ctx, req, false); err != nil {
		return fail(fmt.Errorf("%w: opening the shell: %v", ErrSSH, err))
	}
	ev, err = s.AwaitEvent(ctx, seq, abi.TypeOpened, abi.TypeError, abi.TypeClosed, abi.TypeChannelClosed)
	if err != nil {
		return fail(fmt.Errorf("%w: the server did not open a shell within %s (%v)", ErrSSH, o.Timeout, s.EndReason(err)))
	}
	if ev.Type != abi.TypeOpened {
		return fail(fmt.Errorf("%w: the server refused a shell: %s", ErrSSH, eventMessage(ev)))
	}
	return s, nil
}

// ShellChannel is the channel number of an SSH session's shell.
const ShellChannel = 1

// eventMessage is an error or closed event's message.
func eventMessage(ev session.Event) string {
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
