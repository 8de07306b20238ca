package plugin

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// maxPending bounds the bytes of asynchronous emissions a Binding queues
// while no OnAsync callback is set.
const maxPending = 256 << 10

// Binding is one session's attachment to a plugin. It is safe for
// concurrent use; calls are serialized.
type Binding struct {
	r    *Registry
	p    *plugin
	kind abi.Kind
	opts []byte

	sem chan struct{} // serializes calls; guards everything below up to ver
	// The instance the session is pinned to (nil while detached).
	v         *version
	inst      *instance
	sid       uint32
	lost      error     // why the binding is detached
	noMigrate *version  // a version this session cannot migrate to
	noCompact *instance // an instance compact does not move the session from
	notified  string    // the last reattach failure reported (see shouldReport)
	em        emitter   // the running call's emitter

	ver      atomic.Pointer[version] // for Plugin()
	closed   atomic.Bool
	resets   atomic.Uint64 // times the session was reopened on another instance (see Resets)
	hostCall atomic.Pointer[func([]byte) ([]byte, error)]

	amu    sync.Mutex // guards async, asyncQ, asyncN, ckpt
	async  func([]abi.Emission)
	asyncQ []abi.Emission
	asyncN int
	ckpt   []byte
}

// Attach opens a session of the given kind on the current version of
// plugin name, with JSON options passed to on_open. Emissions the plugin
// makes while opening go to the OnAsync callback, once one is set.
func (r *Registry) Attach(name string, kind abi.Kind, opts []byte) (*Binding, error) {
	if !r.readyFor(name) {
		return nil, ErrClosed
	}
	p := r.lookup(name)
	if p == nil || p.current.Load() == nil {
		if pl := r.pending[name]; pl != nil && pl.err != nil {
			return nil, fmt.Errorf("%w %q: it did not load: %w", ErrUnknownPlugin, name, pl.err)
		}
		avail := r.names()
		list := "none"
		if len(avail) > 0 {
			list = strings.Join(avail, ", ")
		}
		return nil, fmt.Errorf("%w %q (available: %s)", ErrUnknownPlugin, name, list)
	}
	if v := p.current.Load(); v != nil && !v.man.Handles(kind) {
		return nil, fmt.Errorf("plugin %q does not handle %s sessions (it declares %s)", name, kind, strings.Join(v.man.Sessions, ", "))
	}
	b := &Binding{r: r, p: p, kind: kind, opts: append([]byte(nil), opts...), sem: make(chan struct{}, 1)}
	b.em.b = b
	var lastErr error
	for try := 0; try < 3; try++ {
		v := p.current.Load()
		if v == nil {
			return nil, fmt.Errorf("%w %q: it was unloaded", ErrUnknownPlugin, name)
		}
		b.ver.Store(v)
		in, _, err := v.acquire()
		var be *backoffError
		switch {
		case errors.Is(err, errRetired):
			lastErr = err
			continue
		case errors.As(err, &be):
			if !v.man.FailOpen() {
				return nil, fmt.Errorf("plugin %s: %w", name, err)
			}
			// Crash-looping: the session starts detached and fails open
			// until an instance can be made.
			b.lost = be.last
			r.log.Warn("plugin session attached while the plugin backs off", "plugin", name, "version", v.man.Version)
			return b, nil
		case err != nil:
			return nil, err
		}
		if err := in.lock(); err != nil {
			v.release(in)
			lastErr = err
			continue
		}
		err = b.openOn(v, in, nil, queueSink{b})
		in.unlock()
		if err == nil {
			return b, nil
		}
		v.release(in)
		lastErr = err
		var se *wasmhost.StatusError
		if errors.As(err, &se) {
			// The plugin refused these options: no retry.
			return nil, fmt.Errorf("plugin %s: open session: %w: %w", name, ErrRefused, err)
		}
	}
	return nil, fmt.Errorf("plugin %s: open session: %w", name, lastErr)
}

// openOn opens the session on in (locked): on_open with the session's
// options, then, if ck is not nil, state_import of that snapshot. Output
// of on_open goes to s — unless the state import succeeds, which
// supersedes it (only its events and logs go on). Every place that puts a
// session on an instance (attach, fail-over, migration) comes here.
func (b *Binding) openOn(v *version, in *instance, ck []byte, s wasmhost.Sink) error {
	if in.dead != nil {
		return in.dead
	}
	sid := in.allocSID()
	in.sids[sid] = b // before on_open: its host calls find the session
	ems, err := in.wi.Open(sid, b.kind, b.opts)
	if err != nil {
		delete(in.sids, sid)
		in.trapped(err)
		return err
	}
	b.v, b.inst, b.sid, b.lost, b.notified = v, in, sid, nil, ""
	b.ver.Store(v)
	if ck == nil || !in.wi.HasState() {
		b.forward(s, ems)
		return nil
	}
	held := cloneEmissions(ems) // the import reuses the instance's buffers
	ems, err = in.wi.ImportState(sid, ck)
	if in.trapped(err) {
		return err // the binding stays on the dead instance; its next call moves it
	}
	if err != nil {
		b.forward(s, held)
		b.forward(s, ems)
		return &importError{err}
	}
	for _, e := range held {
		if e.Stream != abi.ToUser && e.Stream != abi.ToPeer {
			s.Emit(e.Stream, e.Data)
		}
	}
	b.forward(s, ems)
	b.setCheckpoint(ck)
	return nil
}

// importError says a session was opened but its state could not be
// restored: it goes on from a fresh start.
type importError struct{ err error }

func (e *importError) Error() string { return "state import failed: " + e.err.Error() }

// forward hands collected emissions to s; state snapshots become the
// checkpoint instead.
func (b *Binding) forward(s wasmhost.Sink, ems []abi.Emission) {
	for _, e := range ems {
		if e.Stream == abi.State {
			b.setCheckpoint(e.Data)
			continue
		}
		s.Emit(e.Stream, e.Data)
	}
}

func cloneEmissions(ems []abi.Emission) []abi.Emission {
	out := make([]abi.Emission, len(ems))
	for i, e := range ems {
		out[i] = abi.Emission{SID: e.SID, Stream: e.Stream, Data: clone(e.Data)}
	}
	return out
}

func clone(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}

// Plugin names the plugin and the version the session is on now.
func (b *Binding) Plugin() (name, version string) {
	if v := b.ver.Load(); v != nil {
		return b.p.name, v.man.Version
	}
	return b.p.name, ""
}

// FailOpen says whether the session survives this plugin's failures (the
// manifest's failure policy).
func (b *Binding) FailOpen() bool {
	v := b.ver.Load()
	return v == nil || v.man.FailOpen()
}

// Resets counts the times the session was reopened on another instance
// after a failure: its state there is its newest checkpoint, or nothing. A
// screen, which keeps no checkpoints, is rebuilt by its session from the
// raw buffer when this changes.
func (b *Binding) Resets() uint64 { return b.resets.Load() }

// SetHostCall sets what answers the session's host calls (sdk/ABI.md,
// import "call"): req is one JSON object with an "op" field, valid only
// during the call; an error refuses it, its text being the reason the
// plugin sees. h runs on the goroutine of whatever call into the plugin is
// running (a chunk, a control request, a tick) while that call holds the
// instance, so it must not call this Binding; the plugin's deadline is
// paused while it runs, so it must bound its own time. Without a handler
// every host call is refused. Set it before the first Control; safe for
// concurrent use. It survives fail-over and migration (it belongs to the
// Binding, not to an instance).
func (b *Binding) SetHostCall(h func(req []byte) ([]byte, error)) {
	if h == nil {
		b.hostCall.Store(nil)
		return
	}
	b.hostCall.Store(&h)
}

// OnAsync sets the callback that receives emissions made outside a call on
// this Binding: on_open's (during Attach) and on_tick's. Emissions queued
// before it was set are delivered at once. The callback runs on the
// Registry's tick goroutine (or the caller's) and must not block on the
// Binding.
func (b *Binding) OnAsync(f func([]abi.Emission)) {
	b.amu.Lock()
	b.async = f
	var q []abi.Emission
	if f != nil {
		q = b.asyncQ
		b.asyncQ, b.asyncN = nil, 0
	}
	b.amu.Unlock()
	if len(q) > 0 {
		f(q)
	}
}

// deliverAsync hands emissions (owned by the callee) to the callback, or
// queues them.
func (b *Binding) deliverAsync(ems []abi.Emission) {
	if len(ems) == 0 || b.closed.Load() {
		return
	}
	b.amu.Lock()
	f := b.async
	if f == nil {
		b.enqueueLocked(ems)
	}
	b.amu.Unlock()
	if f != nil {
		f(ems)
	}
}

func (b *Binding) enqueueLocked(ems []abi.Emission) {
	for _, e := range ems {
		if b.asyncN+len(e.Data) > maxPending {
			b.r.log.Warn("plugin emissions dropped: no OnAsync callback and the queue is full", "plugin", b.p.name)
			return
		}
		b.asyncQ = append(b.asyncQ, e)
		b.asyncN += len(e.Data)
	}
}

// queueSink collects emissions of calls made outside a session's call
// (on_open during Attach) for the OnAsync callback.
type queueSink struct{ b *Binding }

func (q queueSink) Emit(s abi.Stream, p []byte) {
	q.b.deliverAsync([]abi.Emission{{Stream: s, Data: clone(p)}})
}

func (q queueSink) Discard() {}

func (b *Binding) setCheckpoint(p []byte) {
	b.amu.Lock()
	b.ckpt = append(b.ckpt[:0], p...)
	b.amu.Unlock()
}

func (b *Binding) checkpoint() []byte {
	b.amu.Lock()
	defer b.amu.Unlock()
	return clone(b.ckpt)
}

// lock takes the binding for one call.
func (b *Binding) lock() { b.sem <- struct{}{} }

func (b *Binding) unlock() { <-b.sem }

// Close ends the session: on_close on the plugin, then the instance slot is
// released (and a draining version with no sessions left is closed).
// Idempotent. It does not wait for a call that never returns (unguarded):
// the slot is then released if and when that call ends.
func (b *Binding) Close() {
	if !b.closed.CompareAndSwap(false, true) {
		return
	}
	b.amu.Lock()
	b.async, b.asyncQ, b.asyncN = nil, nil, 0
	b.amu.Unlock()
	t := time.NewTimer(2*b.r.cfg.CallTimeout + 100*time.Millisecond)
	defer t.Stop()
	select {
	case b.sem <- struct{}{}:
		b.leave(true)
		b.unlock()
	case <-t.C:
		b.r.log.Warn("plugin session closed while a call in it does not return", "plugin", b.p.name)
		go func() {
			b.lock()
			b.leave(true)
			b.unlock()
		}()
	}
}

// leave unpins the binding from its instance, telling the plugin (on_close)
// if tell is set and the instance still works. Called with b locked.
func (b *Binding) leave(tell bool) {
	in := b.inst
	if in == nil {
		return
	}
	if !in.wi.Stuck() && in.lock() == nil {
		if tell && in.dead == nil {
			_, err := in.wi.CloseSession(b.sid)
			in.trapped(err)
		}
		delete(in.sids, b.sid)
		in.unlock()
	}
	b.v.release(in)
	b.v, b.inst = nil, nil
}
