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
	// then a dialect). The registry adds the plugins it names (Plugins)
	// as the fields below ask.
	Plugins []string
	// Screen asks for the registry's screen plugin, fed exactly what the
	// raw buffer gets (SPEC SES-5); what it sends toward the peer
	// (answers to terminal queries) travels through the whole chain.
	Screen bool
	// ShellMarks says the program marks its prompts (an interactive
	// shell started with the integration's rc files): the registry's
	// shell plugin goes first in the chain.
	ShellMarks bool
	// Dialect asks for the registry's dialect plugin after the chain: a
	// dialect name, AutoDialect or DetectDialect ("" or NoDialect: none).
	Dialect string
	// Options is the JSON every plugin's on_open gets.
	Options []byte
	// Reopen, if set, starts the same thing again under the given id
	// (Registry.Restart).
	Reopen func(ctx context.Context, id string) (*Session, error)
	// Stages are the filters the session's traffic passes through besides
	// the chain, in order (stage.go): an InputFunc vetting every Send (SSH
	// shells: command rules), a LineCheck checking each line as the
	// screen shows it at Enter (it needs a screen), an EventFunc seeing
	// events before they are recorded. Open puts the masking of the
	// server's secrets (MaskStage) first, for every session.
	Stages []Stage
	// Record records the session from its start (Config.Record; every
	// session is recorded with Config.RecordAll).
	Record bool
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
	if spec.Record && r.cfg.Record == nil {
		return nil, fmt.Errorf("%w: recording is not available on this server", ErrUnsupported)
	}
	spec.Cols, spec.Rows = DefaultSize(spec.Cols, spec.Rows)
	if err := CheckSize(spec.Cols, spec.Rows); err != nil {
		return nil, err
	}
	// A dialect detected on use joins later, with the options it would
	// have opened with now.
	var joinOpts []byte
	var err error
	join := spec.Dialect == DetectOnUse && r.cfg.Plugins.Dialect != ""
	if spec.Dialect == DetectOnUse {
		now := spec
		now.Dialect = DetectDialect
		if _, joinOpts, err = r.chainFor(now); err != nil && join {
			return nil, err
		}
		spec.Dialect = ""
	}
	plugins, opts, err := r.chainFor(spec)
	if err != nil {
		return nil, err
	}
	stages, err := sortStages(append([]Stage{MaskStage(r.cfg.Secrets)}, spec.Stages...))
	if err != nil {
		return nil, err
	}
	screenName := ""
	if spec.Screen {
		screenName = r.cfg.Plugins.Screen
	}
	spec.Owner = r.reopenOwner(spec.ID, spec.Owner)
	reserved, err := r.reserve(spec.Owner, spec.Name)
	if err != nil {
		return nil, err
	}
	defer reserved.release()
	kind := abiKind(spec.Kind)
	chain := make([]Binding, 0, len(plugins))
	closeAll := func() {
		for _, b := range chain {
			b.Close()
		}
	}
	for _, n := range plugins {
		b, err := attach(n, kind, opts)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("plugin %q: %w", n, err)
		}
		chain = append(chain, b)
	}
	var screen Binding
	if screenName != "" {
		if screen, err = attach(screenName, kind, opts); err != nil {
			closeAll()
			return nil, fmt.Errorf("screen plugin %q: %w", screenName, err)
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
	if spec.ID == "" {
		// Named now, not when registered: a recording asked for at open
		// carries the id in its file name and title.
		spec.ID = r.newID()
	}
	s := newSession(r.cfg, spec, stages, l, chain, screen)
	if screen != nil {
		s.reattachScreen = func() (Binding, error) { return attach(screenName, kind, opts) }
	}
	if join {
		dialect := r.cfg.Plugins.Dialect
		s.joinDialect = func() (Binding, error) { return attach(dialect, kind, joinOpts) }
	}
	if (spec.Record || r.cfg.RecordAll && spec.Screen) && r.cfg.Record != nil {
		if _, err := s.startRecordingLocked(); err != nil {
			if spec.Record {
				l.Close()
				for _, b := range s.bindings() {
					b.Close()
				}
				return nil, err
			}
			r.cfg.Logger.Warn("session not recorded", "err", err)
		}
	}
	if err := r.add(s, reserved); err != nil {
		if rec := s.rec.Swap(nil); rec != nil {
			rec.r.Close()
		}
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
