package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// version is one compiled plugin version and its pool of instances.
type version struct {
	r      *Registry
	p      *plugin // set when published
	src    *source
	man    abi.Manifest
	sha    string
	mod    *wasmhost.Module
	config []byte
	// hasState: the module exports state_export/state_import (seen in the
	// canary), so sessions may migrate to or from it.
	hasState bool

	createMu sync.Mutex // serializes instance creation

	mu       sync.Mutex
	insts    []*instance // live instances
	sessions int
	retired  bool
	closed   bool
	traps    []time.Time // recent traps, within CrashLoopWindow
	backoff  time.Duration
	until    time.Time // no new instance before this
	lastTrap error
}

// instance is one wasm instance of a version. Every call into it holds mu.
type instance struct {
	v  *version
	wi *wasmhost.Instance

	mu      sync.Mutex
	dead    error // set when poisoned (a *wasmhost.TrapError) or closed
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
)

// backoffError says a version is crash-looping and will not start an
// instance before until.
type backoffError struct {
	until  time.Time
	last   error
	traps  int
	window time.Duration
}

func (e *backoffError) Error() string {
	return fmt.Sprintf("plugin is crash-looping (%d failures within %v); next instance in %v",
		e.traps, e.window, max(time.Until(e.until), 0).Round(time.Millisecond))
}

func (e *backoffError) Unwrap() error { return ErrUnavailable }

// canary instantiates and configures the module and opens and closes a
// throwaway session: a version that cannot do that is never published.
func (v *version) canary() error {
	wi, err := v.mod.Instantiate(context.Background(), v.config)
	if err != nil {
		return err
	}
	defer wi.Close()
	v.hasState = wi.HasState()
	if _, err := wi.Open(1, abi.KindTelnet, nil); err != nil {
		return err
	}
	if _, err := wi.CloseSession(1); err != nil {
		return err
	}
	return nil
}

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
		Current:     v.p != nil && v.p.current.Load() == v,
		Sessions:    sessions,
		Instances:   insts,
		Description: v.man.Description,
	}
}

// acquire pins one more session to an instance of v: an idle one, else a new
// one while the pool has room, else the least loaded. fresh says the
// instance was just created. It fails with errRetired once v is not
// current, and with a *backoffError while v is crash-looping and would need
// a new instance.
func (v *version) acquire() (in *instance, fresh bool, err error) {
	v.createMu.Lock()
	defer v.createMu.Unlock()
	v.mu.Lock()
	if v.retired || v.closed {
		v.mu.Unlock()
		return nil, false, errRetired
	}
	var best *instance
	for _, c := range v.insts {
		if c.wi.Stuck() {
			continue // an unguarded call ran past the deadline (see stuck)
		}
		if best == nil || c.load < best.load {
			best = c
		}
	}
	poolFull := len(v.insts) >= v.r.cfg.PoolSize
	backingOff := time.Now().Before(v.until)
	if best != nil && (best.load == 0 || poolFull || backingOff) {
		best.load++
		v.sessions++
		v.mu.Unlock()
		return best, false, nil
	}
	if backingOff {
		err := &backoffError{until: v.until, last: v.lastTrap, traps: len(v.traps), window: v.r.cfg.CrashLoopWindow}
		v.mu.Unlock()
		return nil, false, err
	}
	v.mu.Unlock()

	wi, err := v.mod.Instantiate(context.Background(), v.config)
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
		return nil, false, fmt.Errorf("plugin %s %s: new instance: %w", v.man.Name, v.man.Version, err)
	}
	in = &instance{v: v, wi: wi, sids: make(map[uint32]*Binding), lastTick: time.Now()}
	v.mu.Lock()
	if v.closed || v.retired {
		v.mu.Unlock()
		wi.Close()
		return nil, false, errRetired
	}
	in.load = 1
	v.sessions++
	v.insts = append(v.insts, in)
	v.mu.Unlock()
	v.r.wake()
	return in, true, nil
}

// release unpins one session from in; the last session of a retired version
// closes it.
func (v *version) release(in *instance) {
	v.mu.Lock()
	in.load--
	v.sessions--
	closeNow := v.retired && v.sessions == 0 && !v.closed
	v.mu.Unlock()
	if closeNow {
		v.close()
	}
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
	v.mu.Unlock()
	for _, in := range insts {
		in.mu.Lock()
		if in.dead == nil {
			in.dead = errInstanceClosed
			in.wi.Close()
		}
		in.mu.Unlock()
	}
	v.mod.Close(context.Background())
	v.r.mu.Lock()
	delete(v.r.versions, v)
	v.r.mu.Unlock()
	v.r.log.Info("plugin version closed", "plugin", v.man.Name, "version", v.man.Version)
	v.r.notify(v.change(Closed, nil))
}

// recordTrapLocked counts a trap towards the crash-loop back-off.
func (v *version) recordTrapLocked(te *wasmhost.TrapError) {
	cfg := &v.r.cfg
	now := time.Now()
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

// poisonLocked retires an instance after a trap: wasmhost has closed it;
// it leaves the pool and is never called again. Its sessions move on their
// next call. Called with in.mu held.
func (in *instance) poisonLocked(te *wasmhost.TrapError) {
	if in.dead != nil {
		return
	}
	in.dead = te
	v := in.v
	v.mu.Lock()
	for i, c := range v.insts {
		if c == in {
			v.insts = append(v.insts[:i], v.insts[i+1:]...)
			break
		}
	}
	if !v.closed {
		v.recordTrapLocked(te)
	}
	v.mu.Unlock()
	v.r.logTrap(v, te)
}

// stuck handles an instance whose call ran past the deadline without being
// aborted (only possible when plugins are compiled unguarded): it leaves the
// pool and its sessions fail over, without waiting for its lock, which the
// runaway call holds. Safe to call without in.mu.
func (in *instance) stuck() error {
	err := &wasmhost.TrapError{Plugin: in.v.man.Name, Op: "call",
		Err: fmt.Errorf("call exceeded the %v deadline and cannot be aborted (unguarded)", in.v.r.cfg.CallTimeout)}
	v := in.v
	v.mu.Lock()
	for i, c := range v.insts {
		if c == in {
			v.insts = append(v.insts[:i], v.insts[i+1:]...)
			if !v.closed {
				v.recordTrapLocked(err)
			}
			v.mu.Unlock()
			v.r.logTrap(v, err)
			return err
		}
	}
	v.mu.Unlock()
	return err
}

// trapped poisons in if err is a trap, and says whether it was.
func (in *instance) trapped(err error) bool {
	var te *wasmhost.TrapError
	if errors.As(err, &te) {
		in.poisonLocked(te)
		return true
	}
	return false
}

// allocSID returns a session id not in use on this instance. Called with
// in.mu held.
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
