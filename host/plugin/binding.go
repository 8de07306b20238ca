package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

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

	mu        sync.Mutex // serializes calls; guards everything below up to amu
	closed    bool
	v         *version  // nil while detached
	inst      *instance // nil while detached
	sid       uint32
	lost      error    // why the binding is detached
	noMigrate *version // a version this session cannot migrate to
	notified  string   // the last reattach failure reported (see shouldReport)
	out       []abi.Emission
	buf       []byte

	ver     atomic.Pointer[version] // for Plugin()
	aclosed atomic.Bool
	pending atomic.Bool // asyncQ is not empty

	amu    sync.Mutex // guards async, asyncQ, asyncN, ckpt
	async  func([]abi.Emission)
	asyncQ []abi.Emission
	asyncN int
	ckpt   []byte
}

// Attach opens a session on the current version of plugin name, with kind
// and JSON options passed to on_open. Emissions the plugin makes while
// opening go to the OnAsync callback, or, until one is set, in front of the
// next call's emissions.
func (r *Registry) Attach(name string, kind abi.Kind, opts []byte) (*Binding, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	p := r.lookup(name)
	if p == nil || p.current.Load() == nil {
		avail := r.names()
		list := "none"
		if len(avail) > 0 {
			list = strings.Join(avail, ", ")
		}
		return nil, fmt.Errorf("%w %q (available: %s)", ErrUnknownPlugin, name, list)
	}
	b := &Binding{r: r, p: p, kind: kind, opts: append([]byte(nil), opts...)}
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
			// Crash-looping: the session starts detached and fails open
			// until an instance can be made.
			b.lost = be.last
			r.log.Warn("plugin session attached while the plugin backs off", "plugin", name, "version", v.man.Version)
			return b, nil
		case err != nil:
			return nil, err
		}
		in.mu.Lock()
		if in.dead != nil {
			lastErr = in.dead
			in.mu.Unlock()
			v.release(in)
			continue
		}
		sid := in.allocSID()
		ems, err := in.wi.Open(sid, kind, b.opts)
		if err != nil {
			in.trapped(err)
			in.mu.Unlock()
			v.release(in)
			lastErr = err
			var se *wasmhost.StatusError
			if errors.As(err, &se) {
				break // the plugin refused these options: no retry
			}
			continue
		}
		in.sids[sid] = b
		b.v, b.inst, b.sid = v, in, sid
		b.queueAsync(ems)
		in.mu.Unlock()
		return b, nil
	}
	return nil, fmt.Errorf("plugin %s: open session: %w", name, lastErr)
}

// Plugin names the plugin and the version the session is on now.
func (b *Binding) Plugin() (name, version string) {
	if v := b.ver.Load(); v != nil {
		return b.p.name, v.man.Version
	}
	return b.p.name, ""
}

// OnAsync sets the callback that receives emissions made outside a call on
// this Binding: on_open's (during Attach) and on_tick's. Emissions queued
// before it was set are delivered at once. The callback runs on the
// Registry's tick goroutine (or the caller's); it may call the Binding.
func (b *Binding) OnAsync(f func([]abi.Emission)) {
	b.amu.Lock()
	b.async = f
	var q []abi.Emission
	if f != nil {
		q = b.asyncQ
		b.asyncQ, b.asyncN = nil, 0
		b.pending.Store(false)
	}
	b.amu.Unlock()
	if len(q) > 0 {
		f(q)
	}
}

// deliverAsync hands emissions (owned by the callee) to the callback, or
// queues them.
func (b *Binding) deliverAsync(ems []abi.Emission) {
	if len(ems) == 0 || b.aclosed.Load() {
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
		b.pending.Store(true)
	}
}

// queueAsync copies on_open's emissions (arena-backed) into the async
// queue; state emissions become the checkpoint. Called with the instance
// locked.
func (b *Binding) queueAsync(ems []abi.Emission) {
	b.amu.Lock()
	defer b.amu.Unlock()
	var keep []abi.Emission
	for _, e := range ems {
		if e.Stream == abi.State {
			b.ckpt = append(b.ckpt[:0], e.Data...)
			continue
		}
		keep = append(keep, abi.Emission{SID: e.SID, Stream: e.Stream, Data: clone(e.Data)})
	}
	b.enqueueLocked(keep)
}

func clone(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}

// begin starts a call: checks the binding is usable, resets the output,
// prepends queued async emissions and migrates to a new version if one was
// published. Called with b.mu held.
func (b *Binding) begin() error {
	if b.closed {
		return ErrBindingClosed
	}
	if b.r.closed.Load() {
		return ErrClosed
	}
	b.out = b.out[:0]
	b.buf = b.buf[:0]
	if b.pending.Load() {
		b.amu.Lock()
		b.out = append(b.out, b.asyncQ...)
		b.asyncQ, b.asyncN = nil, 0
		b.pending.Store(false)
		b.amu.Unlock()
	}
	if cur := b.p.current.Load(); cur != b.v && b.v != nil && cur != nil {
		b.migrate(cur)
	}
	return nil
}

// copyOut appends the instance's emissions to the binding's output, copying
// their bytes into the binding's buffer; state emissions are kept as the
// checkpoint instead. Called with the instance locked.
func (b *Binding) copyOut(ems []abi.Emission) {
	for _, e := range ems {
		if e.Stream == abi.State {
			b.setCheckpoint(e.Data)
			continue
		}
		var data []byte
		if e.Data != nil {
			start := len(b.buf)
			b.buf = append(b.buf, e.Data...)
			data = b.buf[start:len(b.buf):len(b.buf)]
		}
		b.out = append(b.out, abi.Emission{SID: e.SID, Stream: e.Stream, Data: data})
	}
}

// dropPayload removes to_user and to_peer emissions from b.out[from:]:
// what on_open said is superseded by the state imported after it.
func (b *Binding) dropPayload(from int) {
	keep := b.out[:from]
	for _, e := range b.out[from:] {
		if e.Stream != abi.ToUser && e.Stream != abi.ToPeer {
			keep = append(keep, e)
		}
	}
	b.out = keep
}

func (b *Binding) setCheckpoint(p []byte) {
	b.amu.Lock()
	b.ckpt = append(b.ckpt[:0], p...)
	b.amu.Unlock()
}

func (b *Binding) checkpoint() []byte {
	b.amu.Lock()
	defer b.amu.Unlock()
	if b.ckpt == nil {
		return nil
	}
	return clone(b.ckpt)
}

func (b *Binding) result() []abi.Emission {
	if len(b.out) == 0 {
		return nil
	}
	return b.out
}

// Data passes one chunk through the plugin. The emissions are valid until
// the next call on this Binding. A chunk the plugin lets pass with no
// emissions returns (Continue, nil, nil) without copying anything. If the
// plugin fails, the session fails open (see the package documentation) and
// the emissions carry a plugin_failed event; the error is non-nil only for
// a plugin's error status or a closed Binding/Registry.
func (b *Binding) Data(dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.begin(); err != nil {
		return abi.Continue, nil, err
	}
	cause := b.lost
	if in := b.inst; in != nil {
		a, lost, err := b.callData(in, dir, p)
		if !lost {
			return a, b.result(), err
		}
		cause = err
	}
	if b.r.closed.Load() {
		return abi.Continue, nil, ErrClosed
	}
	// The instance is gone: fail over and try the chunk once more.
	mark := len(b.out)
	outcome, err := b.reattach()
	if err != nil {
		if b.r.closed.Load() {
			return abi.Continue, nil, ErrClosed
		}
		if cause != nil {
			b.lost = cause
		}
		if b.shouldReport(err) {
			b.insertEvent(mark, b.lost, failOutcome(err, "chunk passed through unprocessed"))
		}
		return abi.Continue, b.result(), nil
	}
	a, lost, err := b.callData(b.inst, dir, p)
	if lost {
		b.insertEvent(mark, err, outcome+"; the chunk failed again there and passed through unprocessed")
		return abi.Continue, b.result(), nil
	}
	b.insertEvent(mark, cause, outcome)
	return a, b.result(), err
}

// callData runs on_data on in. lost reports that the instance is (now)
// unusable; err is then the reason.
func (b *Binding) callData(in *instance, dir abi.Dir, p []byte) (a abi.Action, lost bool, err error) {
	if in.wi.Stuck() {
		return abi.Continue, true, in.stuck()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.dead != nil {
		return abi.Continue, true, in.dead
	}
	a, ems, err := in.wi.Data(b.sid, dir, p)
	if err != nil {
		if in.trapped(err) {
			return abi.Continue, true, err
		}
		b.copyOut(ems)
		return a, false, err
	}
	if a == abi.Continue && len(ems) == 0 {
		return a, false, nil
	}
	b.copyOut(ems)
	return a, false, nil
}

// Control sends a JSON control request (resize, query …); the answer is the
// Reply emission. If the plugin fails, the session fails over as for Data
// and the request is tried once more.
func (b *Binding) Control(req []byte) ([]abi.Emission, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.begin(); err != nil {
		return nil, err
	}
	cause := b.lost
	if in := b.inst; in != nil {
		lost, err := b.callControl(in, req)
		if !lost {
			return b.result(), err
		}
		cause = err
	}
	if b.r.closed.Load() {
		return nil, ErrClosed
	}
	mark := len(b.out)
	outcome, err := b.reattach()
	if err != nil {
		if b.r.closed.Load() {
			return nil, ErrClosed
		}
		if cause != nil {
			b.lost = cause
		}
		if b.shouldReport(err) {
			b.insertEvent(mark, b.lost, failOutcome(err, "control request not delivered"))
		}
		return b.result(), fmt.Errorf("plugin %s: %w: %v", b.p.name, ErrUnavailable, err)
	}
	lost, err := b.callControl(b.inst, req)
	if lost {
		b.insertEvent(mark, err, outcome+"; the control request failed again there")
		return b.result(), fmt.Errorf("plugin %s: %w: %v", b.p.name, ErrUnavailable, err)
	}
	b.insertEvent(mark, cause, outcome)
	return b.result(), err
}

func (b *Binding) callControl(in *instance, req []byte) (lost bool, err error) {
	if in.wi.Stuck() {
		return true, in.stuck()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.dead != nil {
		return true, in.dead
	}
	ems, err := in.wi.Control(b.sid, req)
	if in.trapped(err) {
		return true, err
	}
	b.copyOut(ems)
	return false, err
}

// Close ends the session: on_close on the plugin, then the instance slot is
// released (and a draining version with no sessions left is closed).
// Idempotent.
func (b *Binding) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.aclosed.Store(true)
	if b.inst == nil {
		return
	}
	in := b.inst
	if !in.wi.Stuck() { // a runaway unguarded call holds the lock for good
		in.mu.Lock()
		if in.dead == nil {
			_, err := in.wi.CloseSession(b.sid)
			in.trapped(err)
		}
		delete(in.sids, b.sid)
		in.mu.Unlock()
	}
	b.v.release(in)
	b.v, b.inst = nil, nil
}

// leave unpins the binding from its (dead) instance.
func (b *Binding) leave() {
	in := b.inst
	if in == nil {
		return
	}
	if !in.wi.Stuck() {
		in.mu.Lock()
		delete(in.sids, b.sid)
		in.mu.Unlock()
	}
	b.v.release(in)
	b.v, b.inst = nil, nil
}

// reattach moves a binding whose instance is gone (or that never had one)
// onto a live instance of the plugin's current version: on_open with the
// same options, then state_import of the newest checkpoint. It returns what
// became of the session, for the plugin_failed event.
func (b *Binding) reattach() (outcome string, err error) {
	b.leave()
	var (
		v     *version
		in    *instance
		fresh bool
	)
	for try := 0; ; try++ {
		v = b.p.current.Load()
		if v == nil {
			b.lost = fmt.Errorf("plugin %q is no longer loaded", b.p.name)
			return "", b.lost
		}
		in, fresh, err = v.acquire()
		if errors.Is(err, errRetired) && try < 3 {
			continue
		}
		if err != nil {
			return "", err
		}
		break
	}
	where := "another instance"
	if fresh {
		where = "a fresh instance"
	}
	ck := b.checkpoint()

	in.mu.Lock()
	if in.dead == nil {
		outcome, err = b.openOn(v, in, where, ck)
		if err == nil {
			in.mu.Unlock()
			return outcome, nil
		}
	} else {
		err = in.dead
	}
	in.mu.Unlock()
	if b.inst != in {
		v.release(in) // the session never got onto in
	}
	return "", err
}

// openOn opens the session on in (locked) and restores the checkpoint.
func (b *Binding) openOn(v *version, in *instance, where string, ck []byte) (string, error) {
	sid := in.allocSID()
	mark := len(b.out)
	ems, err := in.wi.Open(sid, b.kind, b.opts)
	if err != nil {
		in.trapped(err)
		return "", err
	}
	in.sids[sid] = b
	b.v, b.inst, b.sid, b.lost, b.notified = v, in, sid, nil, ""
	b.ver.Store(v)
	b.copyOut(ems)
	if ck == nil || !in.wi.HasState() {
		return "reopened without state on " + where, nil
	}
	ems, err = in.wi.ImportState(sid, ck)
	if in.trapped(err) {
		return "", err // the binding stays on the dead instance; its next call moves it
	}
	b.copyOut(ems)
	if err != nil {
		return fmt.Sprintf("reopened without state on %s (state import failed: %v)", where, err), nil
	}
	b.dropPayload(mark)
	return "restored on " + where + " from checkpoint", nil
}

// shouldReport says whether a failure to reattach deserves an event: each
// distinct reason once (a back-off once per back-off step), until the
// session is attached again.
func (b *Binding) shouldReport(err error) bool {
	key := err.Error()
	var be *backoffError
	if errors.As(err, &be) {
		key = "backoff " + be.until.String()
		if b.lost == nil {
			b.lost = be.last
		}
	}
	if key == b.notified {
		return false
	}
	b.notified = key
	return true
}

func failOutcome(err error, what string) string {
	var be *backoffError
	if errors.As(err, &be) {
		return fmt.Sprintf("%s; %v; until then chunks pass through unprocessed", what, be)
	}
	return fmt.Sprintf("%s; no working instance: %v", what, err)
}

// insertEvent inserts a plugin_failed event at position at of b.out.
func (b *Binding) insertEvent(at int, cause error, outcome string) {
	name, ver := b.Plugin()
	ev, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Plugin  string `json:"plugin"`
		Version string `json:"version"`
		Error   string `json:"error"`
		Outcome string `json:"outcome"`
	}{"plugin_failed", name, ver, describe(cause), outcome})
	e := abi.Emission{SID: b.sid, Stream: abi.Event, Data: ev}
	b.out = append(b.out, abi.Emission{})
	copy(b.out[at+1:], b.out[at:])
	b.out[at] = e
	b.r.log.Warn("plugin failed", "plugin", name, "version", ver, "error", describe(cause), "outcome", outcome)
}

// describe says briefly what went wrong: the failed call and the last lines
// of the plugin's stderr (a Go panic message, for instance).
func describe(err error) string {
	if err == nil {
		return "instance unavailable"
	}
	var te *wasmhost.TrapError
	if !errors.As(err, &te) {
		return err.Error()
	}
	msg, _, _ := strings.Cut(te.Err.Error(), "\n") // drop wazero's wasm stack trace
	s := te.Op + " failed: " + msg
	if tail := stderrTail(te.Stderr, 3, 400); tail != "" {
		s += "; stderr: " + tail
	}
	return s
}

// stderrTail picks the telling part of a plugin's stderr: a Go panic or
// fatal error message if there is one, else the last n non-empty lines.
func stderrTail(s string, n, max int) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			lines = lines[i : i+1]
			break
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > max {
		out = out[:max] + "…"
	}
	return out
}

// migrate moves the session to version cur at this chunk boundary, if both
// versions can carry state: state_export on the old instance, on_open and
// state_import on a new one, on_close on the old. If that is not possible
// the session stays on its version (which drains). Called with b.mu held.
func (b *Binding) migrate(cur *version) {
	old, oin := b.v, b.inst
	if cur == b.noMigrate || oin == nil || oin.wi.Stuck() {
		return
	}
	log := b.r.log.With("plugin", b.p.name, "from", old.man.Version, "to", cur.man.Version)
	if !old.hasState || !cur.hasState {
		b.noMigrate = cur
		log.Info("plugin session stays on its version until it ends (no state export)")
		return
	}
	oin.mu.Lock()
	if oin.dead != nil {
		oin.mu.Unlock()
		return // the call fails over, onto the current version
	}
	st, _, err := oin.wi.ExportState(b.sid)
	if err != nil {
		if !oin.trapped(err) {
			b.noMigrate = cur
			log.Info("plugin session stays on its version until it ends", "reason", err)
		}
		oin.mu.Unlock()
		return
	}
	oin.mu.Unlock()

	nin, _, err := cur.acquire()
	if err != nil {
		log.Warn("plugin session migration postponed", "error", err)
		return
	}
	nin.mu.Lock()
	fail := func(err error) {
		nin.trapped(err)
		nin.mu.Unlock()
		cur.release(nin)
		b.noMigrate = cur
		log.Warn("plugin session migration failed; it stays on its version", "error", err)
	}
	if nin.dead != nil {
		fail(nin.dead)
		return
	}
	sid := nin.allocSID()
	if _, err := nin.wi.Open(sid, b.kind, b.opts); err != nil {
		fail(err)
		return
	}
	ems, err := nin.wi.ImportState(sid, st)
	if err != nil {
		if !nin.trapped(err) {
			_, cerr := nin.wi.CloseSession(sid)
			nin.trapped(cerr)
		}
		fail(err)
		return
	}
	nin.sids[sid] = b
	mark := len(b.out)
	b.copyOut(ems) // logs of the import; open's bytes are superseded by the state
	b.dropPayload(mark)
	nin.mu.Unlock()

	oin.mu.Lock()
	if oin.dead == nil {
		_, err := oin.wi.CloseSession(b.sid)
		oin.trapped(err)
	}
	delete(oin.sids, b.sid)
	oin.mu.Unlock()
	old.release(oin)

	b.v, b.inst, b.sid = cur, nin, sid
	b.ver.Store(cur)
	b.setCheckpoint(st)
	log.Info("plugin session migrated")
}
