package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// Spec says how to open a session of any kind: a link (Dial), a plugin
// chain and a screen, options, and what to show in listings.
type Spec struct {
	// ID is normally empty (a new ULID is made); a restart passes the id
	// of the session it replaces, which must be gone from the registry.
	ID    string
	Kind  Kind
	Name  string // optional, unique among its owner's live sessions (see ValidName)
	Owner string // who may see and use it (see owner.go)
	Peer  Peer   // shown in listings
	// Cols and Rows are the screen size (default 80x24).
	Cols, Rows int
	// Plugins is the chain, from the peer toward the user (e.g. telnet,
	// then a dialect).
	Plugins []string
	// Screen is an optional plugin fed exactly what the raw buffer gets
	// (SPEC SES-5); what it sends toward the peer (answers to terminal
	// queries) travels through the whole chain.
	Screen string
	// Options is the JSON every plugin's on_open gets.
	Options []byte
	// Reopen, if set, starts the same thing again under the given id
	// (Registry.Restart).
	Reopen func(ctx context.Context, id string) (*Session, error)
	// OnEvent, if set, sees each event the chain emits, decoded, before
	// it is recorded (and before its text is masked); returning true
	// consumes it. Channel emissions come to it too, as events with an
	// *abi.ChannelData body: one it does not consume is dropped (bulk
	// data is never recorded). What e's body points to is valid only
	// during the call.
	OnEvent func(e *Event) bool
	// OnInput, if set, vets every Send before anything of it is written
	// (SSH shells: command rules); an error refuses the whole input.
	OnInput func(p []byte) error
	// LineCheck, if set, checks each line as the screen shows it when
	// Enter is pressed (linecheck.go); it needs a screen.
	LineCheck *LineCheck
	// Dial makes the link. It runs after the plugins are attached, so a
	// plugin that cannot open costs no connection.
	Dial func(ctx context.Context) (link.Link, error)
}

// Open opens a session of any kind: reserve a slot (limits, name), attach
// the plugins, dial the link, register and start the session. The plugins'
// output made while opening (a dialect's first command, Telnet's opening
// negotiation) is routed through the chain as soon as the session starts.
func (r *Registry) Open(ctx context.Context, attach Attacher, spec Spec) (*Session, error) {
	if spec.Name != "" {
		if err := ValidName(spec.Name); err != nil {
			return nil, err
		}
	}
	if spec.Dial == nil {
		return nil, errors.New("session spec has no Dial")
	}
	if spec.Cols <= 0 {
		spec.Cols = 80
	}
	if spec.Rows <= 0 {
		spec.Rows = 24
	}
	if err := CheckSize(spec.Cols, spec.Rows); err != nil {
		return nil, err
	}
	spec.Owner = r.reopenOwner(spec.ID, spec.Owner)
	release, err := r.reserve(spec.Owner, spec.Name)
	if err != nil {
		return nil, err
	}
	defer release()
	kind := abiKind(spec.Kind)
	chain := make([]Binding, 0, len(spec.Plugins))
	closeAll := func() {
		for _, b := range chain {
			b.Close()
		}
	}
	for _, n := range spec.Plugins {
		b, err := attach(n, kind, spec.Options)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("plugin %q: %w", n, err)
		}
		chain = append(chain, b)
	}
	var screen Binding
	if spec.Screen != "" {
		if screen, err = attach(spec.Screen, kind, spec.Options); err != nil {
			closeAll()
			return nil, fmt.Errorf("screen plugin %q: %w", spec.Screen, err)
		}
		chain = append(chain, screen) // closed with the chain on failure
	}
	l, err := spec.Dial(ctx)
	if err != nil {
		closeAll()
		return nil, err
	}
	if screen != nil {
		chain = chain[:len(chain)-1]
	}
	s := newSession(r.cfg, spec, l, chain, screen)
	if screen != nil {
		s.reattachScreen = func() (Binding, error) { return attach(spec.Screen, kind, spec.Options) }
	}
	if err := r.add(s); err != nil {
		l.Close()
		for _, b := range s.bindings() {
			b.Close()
		}
		return nil, err
	}
	s.start()
	return s, nil
}

func abiKind(k Kind) abi.Kind {
	return abi.ParseKind(string(k))
}
