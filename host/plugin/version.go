package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// version is one plugin version and its instances. Its compiled module
// is there while it has instances; with an on-disk compilation cache it
// is closed once no session has used it for Config.IdleUnload (and right
// after the initial load's check), and compiled again from the cache by
// the next session (see acquire and unloadIdle).
type version struct {
	r      *Registry
	p      *plugin // set when published
	src    *source
	man    abi.Manifest
	sha    string
	opts   wasmhost.Options // how it compiles (guarded or not)
	config []byte
	// data are the bytes of a version from the plugin directory, kept:
	// the file may have changed since they were checked. An embedded
	// version reads its bytes from the binary again.
	data []byte
	// trusted: first-party, or pinned by the user (see trust.go); only
	// then are its host calls answered.
	trusted bool
	// hasState: the module exports state_export/state_import (seen in the
	// canary), so sessions may migrate to or from it.
	hasState bool
	// unchecked: an embedded version not yet compiled nor checked in a
	// canary (prepare); its first compile does both (module).
	unchecked bool

	createMu sync.Mutex // serializes instance creation

	mu sync.Mutex
	// mod is the compiled module, nil while unloaded. Set and cleared
	// with createMu held too, so instance creation sees it steady.
	mod      *wasmhost.Module
	unload   *time.Timer // pending unloadIdle, while no session uses v
	insts    []*instance // live instances
	sessions int
	retired  bool
	closed   bool
	traps    []time.Time // recent traps, within CrashLoopWindow
	backoff  time.Duration
	until    time.Time // no new instance before this
	lastTrap error
}

// instance is one wasm instance of a version. Every call into it holds its
// lock.
type instance struct {
	v  *version
	wi *wasmhost.Instance

	sem     chan struct{} // the instance's lock (see lock)
	dead    error         // set when poisoned (a *wasmhost.TrapError) or closed
	sids    map[uint32]*Binding
	nextSID uint32

	load int // sessions pinned here; guarded by v.mu

	// Owned by the tick goroutine.
	wantTick int64 // Unix ms the plugin asked for, 0 = none
	lastTick time.Time
}

var (
	errRetired        = errors.New("plugin version is no longer current")
	errInstanceClosed = errors.New("plugin instance closed")
	errBusy           = errors.New("plugin instance is busy past its deadline")
)

// lock takes the instance for one call. It waits at most as long as a call
// may run (plus a margin): an unguarded call that never returns must not
// take every session sharing the instance with it.
func (in *instance) lock() error {
	select {
	case in.sem <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(2*in.v.r.cfg.CallTimeout + 100*time.Millisecond)
	defer t.Stop()
	select {
	case in.sem <- struct{}{}:
		return nil
	case <-t.C:
		return errBusy
	}
}

func (in *instance) unlock() { <-in.sem }

// backoffError says a version is crash-looping and will not start an
// instance before until, left from when it was made.
type backoffError struct {
	until  time.Time
	left   time.Duration
	last   error
	traps  int
	window time.Duration
}

func (e *backoffError) Error() string {
	return fmt.Sprintf("plugin is crash-looping (%d failures within %v); next instance in %v",
		e.traps, e.window, max(e.left, 0).Round(time.Millisecond))
}

func (e *backoffError) Unwrap() error { return ErrUnavailable }

func (v *version) change(k ChangeKind, err error) Change {
	return Change{Kind: k, Name: v.man.Name, Version: v.man.Version, SHA256: v.sha, Source: v.src.origin, Err: err}
}

func (v *version) info() Info {
	v.mu.Lock()
	sessions, insts := v.sessions, len(v.insts)
	v.mu.Unlock()
	return Info{
		Name:        v.man.Name,
		Version:     v.man.Version,
		Kind:        v.man.Kind,
		SHA256:      v.sha,
		Source:      v.src.origin,
		Trusted:     v.trusted,
		Current:     v.p != nil && v.p.current.Load() == v,
		Sessions:    sessions,
		Instances:   insts,
		Description: v.man.Description,
	}
}

// acquire pins one more session to an instance of v: for a pooled plugin
// an idle one, else a new one while the pool has room, else the least
// loaded; for a plugin with one instance per session always a new one.
// fresh says the instance was just created. It fails with errRetired once
// v is not current, and with a *backoffError while v is crash-looping and
// would need a new instance.
func (v *version) acquire() (in *instance, fresh bool, err error) {
	v.createMu.Lock()
	defer v.createMu.Unlock()
	v.mu.Lock()
	if v.retired || v.closed {
		v.mu.Unlock()
		return nil, false, errRetired
	}
	if v.unload != nil {
		v.unload.Stop()
		v.unload = nil
	}
	now := v.r.cfg.Now()
	backingOff := now.Before(v.until)
	if !v.man.PerSession() {
		var best *instance
		limit := v.man.SessionsPerInstance
		for _, c := range v.insts {
			if c.wi.Stuck() {
				continue // an unguarded call ran past the deadline (see stuck)
			}
			if limit > 0 && c.load >= limit {
				continue // full: the pool grows instead
			}
			if best == nil || c.load < best.load {
				best = c
			}
		}
		poolFull := len(v.insts) >= v.r.cfg.PoolSize
		if best != nil && (best.load == 0 || poolFull || backingOff) {
			best.load++
			v.sessions++
			v.mu.Unlock()
			return best, false, nil
		}
	}
	if backingOff {
		err := &backoffError{until: v.until, left: v.until.Sub(now), last: v.lastTrap, traps: len(v.traps), window: v.r.cfg.CrashLoopWindow}
		v.mu.Unlock()
		return nil, false, err
	}
	v.mu.Unlock()
	defer func() {
		if err != nil {
			v.mu.Lock()
			v.idleLocked()
			v.mu.Unlock()
		}
	}()

	in, err = v.instantiate()
	if err != nil {
		return nil, false, err
	}
	v.mu.Lock()
	if v.closed || v.retired {
		v.mu.Unlock()
		in.wi.Close()
		return nil, false, errRetired
	}
	in.load = 1
	v.sessions++
	v.insts = append(v.insts, in)
	v.mu.Unlock()
	v.r.wake()
	return in, true, nil
}

// warm makes one idle instance of a pooled plugin that has none (see
// Registry.Warm), compiling it first if it is not.
func (v *version) warm() {
	if v.man.PerSession() {
		return
	}
	v.createMu.Lock()
	defer v.createMu.Unlock()
	v.mu.Lock()
	busy := v.closed || v.retired || len(v.insts) > 0
	v.mu.Unlock()
	if busy {
		return
	}
	in, err := v.instantiate()
	if err != nil {
		v.idle()
		return
	}
	v.mu.Lock()
	if v.closed || v.retired {
		v.mu.Unlock()
		in.wi.Close()
		return
	}
	v.insts = append(v.insts, in)
	v.idleLocked()
	v.mu.Unlock()
	v.r.wake()
}

// instantiate makes a new instance of v (compiling v first if it is not):
// a trap while it starts counts toward v's crash loop. Called with
// createMu held; the caller adds it to v.insts.
func (v *version) instantiate() (*instance, error) {
	mod, err := v.module()
	if err != nil {
		return nil, err
	}
	wi, err := mod.Instantiate(context.Background(), v.config)
	if err != nil {
		var te *wasmhost.TrapError
		if errors.As(err, &te) {
			v.mu.Lock()
			if !v.closed {
				v.recordTrapLocked(te)
			}
			v.mu.Unlock()
			v.r.logTrap(v, te)
		}
		return nil, fmt.Errorf("plugin %s %s: new instance: %w", v.man.Name, v.man.Version, err)
	}
	in := &instance{v: v, wi: wi, sem: make(chan struct{}, 1), sids: make(map[uint32]*Binding), lastTick: time.Now()}
	wi.SetHostCall(in.serveCall)
	return in, nil
}

// module returns v's compiled module, compiling it again if it was
// unloaded: from the on-disk cache, which keeps its machine code, this
// costs decoding and validating the module (tens of milliseconds), not a
// compile. The bytes compiled must be those checked when v was loaded
// (pins, canary): their sha256 is compared. Called with createMu held.
func (v *version) module() (*wasmhost.Module, error) {
	v.mu.Lock()
	m, closed := v.mod, v.closed || v.retired
	v.mu.Unlock()
	if closed {
		return nil, errRetired
	}
	if m != nil {
		return m, nil
	}
	start := time.Now()
	data := v.data
	if data == nil {
		if v.src.embedded == "" {
			return nil, fmt.Errorf("plugin %s %s: its bytes are gone", v.man.Name, v.man.Version)
		}
		var err error
		if data, err = fs.ReadFile(v.r.cfg.Embedded, v.src.embedded); err != nil {
			return nil, fmt.Errorf("plugin %s %s: read: %w", v.man.Name, v.man.Version, err)
		}
	}
	v.mu.Lock()
	unchecked := v.unchecked
	v.mu.Unlock()
	if unchecked {
		// One first compile at a time: each passes through 50–100 MiB of
		// heap (see prepare).
		v.r.firstCompile.Lock()
		defer v.r.firstCompile.Unlock()
	}
	m, err := wasmhost.Compile(context.Background(), data, v.opts)
	if err != nil {
		return nil, fmt.Errorf("plugin %s %s: compile: %w", v.man.Name, v.man.Version, err)
	}
	if m.SHA256 != v.sha {
		m.Close(context.Background())
		return nil, fmt.Errorf("plugin %s %s: its bytes changed since they were checked (sha256 %s, checked %s)",
			v.man.Name, v.man.Version, short(m.SHA256), short(v.sha))
	}
	v.mu.Lock()
	if v.closed || v.retired {
		v.mu.Unlock()
		m.Close(context.Background())
		return nil, errRetired
	}
	v.mod = m
	v.mu.Unlock()
	if unchecked {
		if err := v.canary(); err != nil {
			v.mu.Lock()
			v.mod = nil
			v.mu.Unlock()
			m.Close(context.Background())
			return nil, fmt.Errorf("plugin %s %s: canary: %w", v.man.Name, v.man.Version, err)
		}
		v.mu.Lock()
		v.unchecked = false
		v.mu.Unlock()
		v.r.checked(v)
		go v.r.pruneCache() // records the check in the cache's index
		v.r.giveBack()      // the compile's passing heap
	}
	v.r.log.Debug("plugin compiled for a session", "plugin", v.man.Name, "version", v.man.Version, "took", time.Since(start))
	return m, nil
}

// idleLocked schedules unloadIdle once v has no session, if unloading is
// on (an on-disk cache gives the compiled code back). Called with v.mu
// held.
func (v *version) idleLocked() {
	d := v.r.cfg.IdleUnload
	if v.sessions > 0 || v.mod == nil || v.closed || v.unload != nil || !v.r.unloads() {
		return
	}
	v.unload = time.AfterFunc(d, v.unloadIdle)
}

// idle schedules unloadIdle if no session uses v.
func (v *version) idle() {
	v.mu.Lock()
	v.idleLocked()
	v.mu.Unlock()
}

// unloadIdle closes v's idle instances and its compiled module if no
// session uses it: they are most of what a plugin costs (its machine code
// is mapped, not in the Go heap; its decoded module is), and the next
// session compiles it again from the cache.
func (v *version) unloadIdle() {
	v.createMu.Lock()
	defer v.createMu.Unlock()
	v.mu.Lock()
	v.unload = nil
	if v.closed || v.sessions > 0 || v.mod == nil {
		v.mu.Unlock()
		return
	}
	insts, mod := v.insts, v.mod
	v.insts, v.mod = nil, nil
	v.mu.Unlock()
	for _, in := range insts {
		in.close()
	}
	mod.Close(context.Background())
	v.r.log.Debug("plugin unloaded: no session uses it", "plugin", v.man.Name, "version", v.man.Version)
	v.r.giveBack()
}

// idleMemKeep is the most linear memory an idle pooled instance keeps.
const idleMemKeep = 16 << 20

// release unpins one session from in. An instance of a per-session plugin
// is closed with its session; the last session of a retired version closes
// the version.
func (v *version) release(in *instance) {
	v.mu.Lock()
	in.load--
	v.sessions--
	// Idle instances beyond the pool's size (grown for sessionsPerInstance)
	// are closed too: their memory goes back at once.
	// An idle instance whose memory grew large (a screen that held
	// scrollbacks) is closed as well: wasm memory never shrinks.
	closeInst := in.load == 0 && (v.man.PerSession() || len(v.insts) > v.r.cfg.PoolSize ||
		in.wi.MemSize() > idleMemKeep) && v.removeLocked(in)
	closeNow := v.retired && v.sessions == 0 && !v.closed
	if v.sessions == 0 && !closeNow {
		v.idleLocked()
	}
	v.mu.Unlock()
	if closeInst {
		in.close()
		v.r.giveBack()
	}
	if closeNow {
		v.close()
	}
}

// removeLocked takes in out of the pool; it reports whether it was there.
func (v *version) removeLocked(in *instance) bool {
	for i, c := range v.insts {
		if c == in {
			v.insts = append(v.insts[:i], v.insts[i+1:]...)
			return true
		}
	}
	return false
}

// close closes the instance once no call runs in it. An instance whose
// call never returns (unguarded) cannot be closed: it is left to its
// goroutine, out of every pool.
func (in *instance) close() {
	if in.lock() != nil {
		in.v.r.log.Warn("plugin instance not closed: a call in it never returned", "plugin", in.v.man.Name, "version", in.v.man.Version)
		return
	}
	if in.dead == nil {
		in.dead = errInstanceClosed
	}
	in.wi.Close()
	in.unlock()
}

// retire marks v as no longer current; it closes at once if no session
// uses it, else when its last session leaves.
func (v *version) retire() {
	v.mu.Lock()
	v.retired = true
	sessions := v.sessions
	closeNow := sessions == 0 && !v.closed
	v.mu.Unlock()
	v.r.log.Info("plugin version retired", "plugin", v.man.Name, "version", v.man.Version, "sessions", sessions)
	v.r.notify(v.change(Retired, nil))
	if closeNow {
		v.close()
	}
}

// close closes every instance and the module. Safe to call more than once.
func (v *version) close() {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.closed = true
	insts := v.insts
	v.insts = nil
	mod := v.mod
	v.mod = nil
	if v.unload != nil {
		v.unload.Stop()
		v.unload = nil
	}
	v.mu.Unlock()
	for _, in := range insts {
		in.close()
	}
	if mod != nil {
		mod.Close(context.Background())
	}
	v.r.mu.Lock()
	delete(v.r.versions, v)
	v.r.mu.Unlock()
	v.r.log.Info("plugin version closed", "plugin", v.man.Name, "version", v.man.Version)
	v.r.notify(v.change(Closed, nil))
}

// recordTrapLocked counts a trap towards the crash-loop back-off.
func (v *version) recordTrapLocked(te *wasmhost.TrapError) {
	cfg := &v.r.cfg
	now := cfg.Now()
	keep := v.traps[:0]
	for _, t := range v.traps {
		if now.Sub(t) < cfg.CrashLoopWindow {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		v.backoff = 0 // quiet for a whole window: start over
	}
	v.traps = append(keep, now)
	v.lastTrap = te
	if len(v.traps) >= cfg.CrashLoopTraps {
		if v.backoff == 0 {
			v.backoff = cfg.BackoffMin
		} else {
			v.backoff = min(2*v.backoff, cfg.BackoffMax)
		}
		v.until = now.Add(v.backoff)
		v.r.log.Warn("plugin crash loop: backing off", "plugin", v.man.Name, "version", v.man.Version,
			"traps", len(v.traps), "window", cfg.CrashLoopWindow, "backoff", v.backoff)
	}
}

// retireInstance takes a failed instance out of the pool, once: the first
// caller counts the failure towards the crash-loop back-off and logs it;
// later callers (other sessions of the instance noticing the same failure)
// do not count it again.
func (in *instance) retireInstance(te *wasmhost.TrapError) {
	v := in.v
	v.mu.Lock()
	first := v.removeLocked(in)
	if first && !v.closed {
		v.recordTrapLocked(te)
	}
	v.mu.Unlock()
	if first {
		v.r.logTrap(v, te)
	}
}

// trapped poisons in if err is a trap, and says whether it was. Called
// with in locked.
func (in *instance) trapped(err error) bool {
	if err == nil {
		return false // without the errors.As below, whose target escapes: a call allocated it
	}
	var te *wasmhost.TrapError
	if !errors.As(err, &te) {
		return false
	}
	if in.dead == nil {
		in.dead = te
		in.retireInstance(te)
	}
	return true
}

// stuck handles an instance whose call ran past the deadline and could not
// be aborted (only possible when plugins are compiled unguarded): it leaves
// the pool and its sessions fail over, without waiting for its lock, which
// the runaway call holds. Safe to call without the lock.
func (in *instance) stuck() error {
	err := &wasmhost.TrapError{Plugin: in.v.man.Name, Op: "call",
		Err: fmt.Errorf("call exceeded the %v deadline and cannot be aborted (compiled without termination checks)", in.v.r.cfg.CallTimeout)}
	in.retireInstance(err)
	return err
}

// serveCall routes a host call of session sid to its Binding's handler.
// It runs inside a call on in, which holds in's lock (so sids is stable).
// The caller is the version this instance runs (not the binding's name,
// nor its version of the moment, which a migration changes after on_open):
// an untrusted one is refused before any handler sees the request.
func (in *instance) serveCall(sid uint32, req []byte) ([]byte, error) {
	if !in.v.trusted {
		return nil, in.v.errUntrustedHostCall()
	}
	b := in.sids[sid]
	if b == nil {
		return nil, errNoHostCall
	}
	h := b.hostCall.Load()
	if h == nil {
		return nil, errNoHostCall
	}
	return (*h)(req)
}

var errNoHostCall = errors.New("this session takes no host calls")

// allocSID returns a session id not in use on this instance. Called with
// in locked.
func (in *instance) allocSID() uint32 {
	for {
		in.nextSID++
		if in.nextSID == 0 {
			continue
		}
		if _, used := in.sids[in.nextSID]; !used {
			return in.nextSID
		}
	}
}

func (r *Registry) logTrap(v *version, te *wasmhost.TrapError) {
	r.log.Error("plugin instance failed", "plugin", v.man.Name, "version", v.man.Version,
		"op", te.Op, "error", te.Err, "stderr", te.Stderr)
}
