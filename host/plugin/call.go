package plugin

import (
	"errors"
	"fmt"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// Error is a plugin failure that ends the session: the plugin is
// fail-closed (its manifest's failure policy) and it trapped, hung or ran
// out of memory. Fatal reports true.
type Error struct {
	Plugin, Version string
	Err             error
}

func (e *Error) Error() string {
	return fmt.Sprintf("plugin %s %s failed: %s; the session was closed (this plugin fails closed: its stream is never passed through unprocessed)",
		e.Plugin, e.Version, describe(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

// Fatal says the session cannot go on.
func (e *Error) Fatal() bool { return true }

// errPassThrough: the call could not be served (the plugin failed and no
// working instance took over) and its input passes on unprocessed; a
// plugin_failed event says so.
var errPassThrough = errors.New("passed through unprocessed")

// emitter adapts a call's emissions to the session's Sink: state snapshots
// become the checkpoint, everything else goes on.
type emitter struct {
	b *Binding
	s wasmhost.Sink
}

func (e *emitter) Emit(_ uint32, stream abi.Stream, p []byte) {
	if stream == abi.State {
		e.b.setCheckpoint(p)
		return
	}
	e.s.Emit(stream, p)
}

// Data passes one chunk through the plugin; its emissions reach s while the
// call runs. A chunk the plugin lets pass (Continue) with no emissions
// costs no copy. If the plugin fails, a fail-open plugin's session goes on
// (see the package documentation): the result is then Continue, with a
// plugin_failed event on s; a fail-closed plugin's session gets an *Error.
// A plugin's deliberate error status is returned as a
// *wasmhost.StatusError.
func (b *Binding) Data(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
	var a abi.Action
	err := b.do(s, "chunk", func(in *instance) error {
		var err error
		a, err = in.wi.DataTo(b.sid, dir, p, &b.em)
		return err
	})
	if errors.Is(err, errPassThrough) {
		return abi.Continue, nil
	}
	return a, err
}

// Control sends a JSON control request (resize, interrupt, query …); the
// answer is the Reply emission on s. If the plugin fails the session fails
// over as for Data and the request is tried once more.
func (b *Binding) Control(req []byte, s wasmhost.Sink) error {
	err := b.do(s, "control request", func(in *instance) error {
		ems, err := in.wi.Control(b.sid, req)
		if !isTrap(err) {
			b.forward(s, ems)
		}
		return err
	})
	if errors.Is(err, errPassThrough) {
		name, _ := b.Plugin()
		return fmt.Errorf("plugin %s: %w", name, ErrUnavailable)
	}
	return err
}

// do is the one call wrapper: it runs call on the session's instance, with
// the binding's emitter aimed at s, and handles what can go wrong. A new
// current version is migrated to first (at this chunk boundary). If the
// instance is lost (trap, deadline, memory cap, or stuck), a fail-closed
// plugin's session gets an *Error; a fail-open one moves to a working
// instance (on_open, state_import of its checkpoint) and call is tried once
// more there, else errPassThrough; each such failure is reported to s as a
// plugin_failed event.
func (b *Binding) do(s wasmhost.Sink, what string, call func(in *instance) error) error {
	b.lock()
	defer b.unlock()
	if b.closed.Load() {
		return ErrBindingClosed
	}
	if b.r.closed.Load() {
		return ErrClosed
	}
	b.em.s = s
	defer func() { b.em.s = nil }()
	if cur := b.p.current.Load(); cur != b.v && b.v != nil && cur != nil {
		b.migrate(cur, s)
	} else if b.v != nil {
		b.compact(s)
	}
	cause := b.lost
	if in := b.inst; in != nil {
		lost, err := b.attempt(in, s, call)
		if !lost {
			return err
		}
		cause = err
	}
	if b.r.closed.Load() {
		return ErrClosed
	}
	if !b.FailOpen() {
		b.leave(false)
		if cause == nil {
			cause = errors.New("no instance")
		}
		b.lost = cause
		name, ver := b.Plugin()
		return &Error{Plugin: name, Version: ver, Err: cause}
	}
	outcome, err := b.reattach(s)
	if err != nil {
		if b.r.closed.Load() {
			return ErrClosed
		}
		if cause != nil {
			b.lost = cause
		}
		if b.shouldReport(err) {
			b.failed(s, b.lost, failOutcome(err, "the "+what+" passed through unprocessed"))
		}
		return errPassThrough
	}
	lost, err := b.attempt(b.inst, s, call)
	if lost {
		b.failed(s, err, outcome+"; the "+what+" failed again there and passed through unprocessed")
		return errPassThrough
	}
	b.failed(s, cause, outcome)
	return err
}

// attempt runs call on in. lost reports that the instance is (now)
// unusable; err is then why, and what the attempt emitted is discarded.
func (b *Binding) attempt(in *instance, s wasmhost.Sink, call func(*instance) error) (lost bool, err error) {
	if in.wi.Stuck() {
		return true, in.stuck()
	}
	if err := in.lock(); err != nil {
		if in.wi.Stuck() {
			return true, in.stuck()
		}
		return true, err
	}
	defer in.unlock()
	if in.dead != nil {
		return true, in.dead
	}
	err = call(in)
	if in.trapped(err) {
		s.Discard()
		return true, err
	}
	return false, err
}

func isTrap(err error) bool {
	var te *wasmhost.TrapError
	return errors.As(err, &te)
}

func isStatus(err error) bool {
	var se *wasmhost.StatusError
	return errors.As(err, &se)
}

// ExportState returns the session's state (state_export), e.g. to keep an
// ended session's screen without keeping it in an instance.
func (b *Binding) ExportState() ([]byte, error) {
	var st []byte
	err := b.do(discard{}, "state export", func(in *instance) error {
		var err error
		st, _, err = in.wi.ExportState(b.sid)
		return err
	})
	if errors.Is(err, errPassThrough) {
		name, _ := b.Plugin()
		return nil, fmt.Errorf("plugin %s: %w", name, ErrUnavailable)
	}
	return st, err
}

// ImportState restores the session from a state ExportState returned.
func (b *Binding) ImportState(st []byte) error {
	err := b.do(discard{}, "state import", func(in *instance) error {
		_, err := in.wi.ImportState(b.sid, st)
		return err
	})
	if errors.Is(err, errPassThrough) {
		name, _ := b.Plugin()
		return fmt.Errorf("plugin %s: %w", name, ErrUnavailable)
	}
	return err
}

// discard is a sink for calls whose emissions nobody wants.
type discard struct{}

func (discard) Emit(abi.Stream, []byte) {}
func (discard) Discard()                {}
