package wasmhost

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/sdk/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Instance is one instantiated plugin.
type Instance struct {
	m      *Module
	mod    api.Module
	mem    api.Memory
	ctx    context.Context    // the context of calls: no Done, so wazero starts no watcher per call
	initCx context.Context    // instantiation's, cancelled by the watchdog
	cancel context.CancelFunc // cancels initCx
	live   atomic.Pointer[api.Module]

	fConfigure, fOpen, fData, fControl, fTick, fClose, fExport, fImport api.Function

	inBuf, inCap uint32
	stack        [4]uint64
	out          []abi.Emission // collected emissions of the last call (no Emitter)
	arena        []byte         // their bytes
	emitter      Emitter        // the running call's Emitter, or nil: collect
	hostCall     HostCallFunc   // serves the import "call"; nil: none
	keptAns      []byte         // an answer that did not fit, for the retry (see abi.CallTooSmall)
	keptSID      uint32
	left, big    int64 // emission budget left to the running call: data streams, state+reply
	budget       int64 // the running call's data-stream budget
	stderr       *tailBuffer
	callStart    atomic.Int64 // monoNow of the running call's start; 0 when idle
	abortedAt    atomic.Int64 // monoNow when the watchdog aborted the running call; 0 if not
	dead         error
}

type instKey struct{}

// Instantiate starts a fresh instance and configures it with cfg (JSON, may
// be empty). A failure here means the plugin cannot serve.
func (m *Module) Instantiate(ctx context.Context, cfg []byte) (*Instance, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("plugin module is closed")
	}
	m.mu.Unlock()
	inst := &Instance{m: m, stderr: &tailBuffer{limit: m.opts.StderrLimit}}
	inst.ctx = context.WithValue(context.Background(), instKey{}, inst)
	inst.initCx, inst.cancel = context.WithCancel(inst.ctx)
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(abi.InitializeExport).
		WithStdout(inst.stderr).
		WithStderr(inst.stderr)
	if m.opts.Sys {
		mc = mc.WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader)
	}
	inst.callStart.Store(monoNow())
	m.ensureWatchdog()
	m.track(inst, true)
	mod, err := m.rt.InstantiateModule(inst.initCx, m.compiled, mc)
	inst.callStart.Store(0)
	if err != nil {
		m.track(inst, false)
		inst.cancel()
		return nil, &TrapError{Plugin: m.Manifest.Name, Op: "instantiate", Err: err, Stderr: inst.stderr.String()}
	}
	inst.mod = mod
	inst.live.Store(&mod)
	inst.mem = mod.Memory()
	inst.fConfigure = mod.ExportedFunction(abi.ConfigureExport)
	inst.fOpen = mod.ExportedFunction(abi.OpenExport)
	inst.fData = mod.ExportedFunction(abi.DataExport)
	inst.fControl = mod.ExportedFunction(abi.ControlExport)
	inst.fTick = mod.ExportedFunction(abi.TickExport)
	inst.fClose = mod.ExportedFunction(abi.CloseExport)
	inst.fExport = mod.ExportedFunction(abi.StateExportExport)
	inst.fImport = mod.ExportedFunction(abi.StateImportExport)
	if inst.mem == nil {
		inst.Close()
		return nil, fmt.Errorf("plugin %s exports no memory", m.Manifest.Name)
	}
	ptr, err := inst.call("in_buf", mod.ExportedFunction(abi.InBufExport))
	if err != nil {
		return nil, err
	}
	capv, err := inst.call("in_cap", mod.ExportedFunction(abi.InCapExport))
	if err != nil {
		return nil, err
	}
	inst.inBuf, inst.inCap = uint32(ptr), uint32(capv)
	if inst.inCap < 1024 || uint64(inst.inBuf)+uint64(inst.inCap) > uint64(inst.mem.Size()) {
		inst.Close()
		return nil, fmt.Errorf("plugin %s: input buffer [%d, +%d) is invalid", m.Manifest.Name, inst.inBuf, inst.inCap)
	}
	if _, err := inst.callStatus("on_configure", inst.fConfigure, cfg); err != nil {
		inst.Close()
		return nil, err
	}
	return inst, nil
}

// Module returns the compiled module this instance runs.
func (i *Instance) Module() *Module { return i.m }

// Err is non-nil once the instance is poisoned.
func (i *Instance) Err() error { return i.dead }

// Stderr returns the tail of what the guest printed.
func (i *Instance) Stderr() string { return i.stderr.String() }

// MemSize is the size of the instance's linear memory in bytes (it only
// grows).
func (i *Instance) MemSize() uint32 { return i.mem.Size() }

// HasState says whether the plugin exports state_export/state_import.
func (i *Instance) HasState() bool { return i.m.hasState }

// Close closes the instance. Safe to call more than once.
func (i *Instance) Close() error {
	if i.dead == nil {
		i.dead = errors.New("instance closed")
	}
	i.m.track(i, false)
	i.cancel()
	if i.mod != nil {
		return i.mod.Close(context.Background())
	}
	return nil
}

func (i *Instance) poison(op string, err error) error {
	if i.abortedAt.Load() != 0 {
		err = fmt.Errorf("call exceeded the %v deadline: %w", i.m.opts.CallTimeout, err)
	}
	te := &TrapError{Plugin: i.m.Manifest.Name, Op: op, Err: err, Stderr: i.stderr.String()}
	i.Close()
	i.dead = te
	i.out, i.arena = nil, nil // give the memory back
	return te
}

// Stuck reports that a call of this instance is still running although the
// watchdog aborted it: an unguarded module cannot be stopped (a guarded one
// returns at its next loop back-edge). The host should stop routing
// sessions to it; the calling goroutine stays blocked.
func (i *Instance) Stuck() bool {
	at := i.abortedAt.Load()
	if at == 0 || i.callStart.Load() == 0 {
		return false
	}
	return !i.m.Guarded || monoNow()-at > int64(2*i.m.opts.CallTimeout)
}

// monoEpoch is what monoNow counts from.
var monoEpoch = time.Now()

// monoNow is a monotonic clock in nanoseconds, never 0: a call's start is
// taken twice per chunk, and time.Since reads one clock where time.Now
// reads two (the wall clock too).
func monoNow() int64 { return int64(time.Since(monoEpoch)) + 1 }

// call runs f with args and returns stack[0].
func (i *Instance) call(op string, f api.Function, args ...uint64) (uint64, error) {
	if i.dead != nil {
		return 0, i.dead
	}
	copy(i.stack[:], args)
	i.callStart.Store(monoNow())
	err := f.CallWithStack(i.ctx, i.stack[:])
	i.callStart.Store(0)
	if err != nil {
		return 0, i.poison(op, err)
	}
	return i.stack[0], nil
}

// Emission budgets: what one call may emit before it counts as a failure
// (SPEC PLG-4: a plugin that floods must not take the host's memory).
const (
	// EmitFactor and EmitBase bound the bytes a call may emit on the data
	// streams (to_user, to_peer, event, log): EmitFactor times its input
	// plus EmitBase.
	EmitFactor = 4
	EmitBase   = 1 << 20
	// EmitBig bounds state snapshots and control replies of one call.
	EmitBig = 16 << 20
	// keepArena is the most collected-emission memory kept between calls.
	keepArena = 1 << 20
)

// begin prepares a call: emissions go to e (nil: collected), within a
// budget for n bytes of input.
func (i *Instance) begin(e Emitter, n int) {
	i.emitter = e
	i.keptAns = nil
	i.budget = int64(n)*EmitFactor + EmitBase
	i.left, i.big = i.budget, EmitBig
	if cap(i.arena) > keepArena {
		i.arena = nil
	}
	i.out, i.arena = i.out[:0], i.arena[:0]
}

// put copies p into the guest's input buffer, first asking the guest for a
// larger one (in_grow) when p does not fit and the plugin can grow it.
func (i *Instance) put(p []byte) error {
	if uint32(len(p)) > i.inCap {
		if err := i.grow(uint32(len(p))); err != nil {
			return err
		}
	}
	if len(p) > 0 && !i.mem.Write(i.inBuf, p) {
		return i.poison("write input", errors.New("input buffer out of range"))
	}
	return nil
}

// grow asks the guest for an input buffer of at least n bytes.
func (i *Instance) grow(n uint32) error {
	f := i.mod.ExportedFunction(abi.InGrowExport)
	if f == nil {
		return fmt.Errorf("%d bytes exceed the plugin's input buffer (%d) and it cannot grow it (no in_grow)", n, i.inCap)
	}
	ptr, err := i.call("in_grow", f, uint64(n))
	if err != nil {
		return err
	}
	if uint32(ptr) == 0 {
		return fmt.Errorf("%d bytes exceed the plugin's input buffer (%d): it refused to grow it", n, i.inCap)
	}
	if uint64(uint32(ptr))+uint64(n) > uint64(i.mem.Size()) {
		return i.poison("in_grow", fmt.Errorf("new input buffer [%d, +%d) is out of range", uint32(ptr), n))
	}
	i.inBuf, i.inCap = uint32(ptr), n
	return nil
}

// callStatus puts p at in_buf, calls f(args..., len(p)) and turns a negative
// status into a StatusError.
func (i *Instance) callStatus(op string, f api.Function, p []byte, args ...uint64) (int32, error) {
	if err := i.put(p); err != nil {
		return 0, err
	}
	st, err := i.call(op, f, append(args, uint64(len(p)))...)
	if err != nil {
		return 0, err
	}
	s := int32(uint32(st))
	if s < 0 {
		if s == abi.ErrNoState {
			return s, ErrNoState
		}
		return s, &StatusError{Op: op, Status: s, Log: i.logText()}
	}
	return s, nil
}

func (i *Instance) logText() string {
	var b []byte
	for _, e := range i.out {
		if e.Stream == abi.Log {
			if len(b) > 0 {
				b = append(b, "; "...)
			}
			b = append(b, e.Data...)
		}
	}
	return string(b)
}

// Open opens session sid with JSON options.
func (i *Instance) Open(sid uint32, kind abi.Kind, opts []byte) ([]abi.Emission, error) {
	i.begin(nil, len(opts))
	_, err := i.callStatus("on_open", i.fOpen, opts, uint64(sid), uint64(kind))
	return i.out, err
}

// Data passes one chunk and returns the emissions, valid until the next
// call. See DataTo.
func (i *Instance) Data(sid uint32, dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error) {
	a, err := i.DataTo(sid, dir, p, nil)
	return a, i.out, err
}

// DataTo passes one chunk; every emission goes to e while the call runs (a
// view of guest memory: the only copy out of the plugin is the one e
// makes). With a nil e they are collected as Data returns them.
//
// Chunks larger than the guest's buffer are passed in pieces; a piece the
// plugin lets pass (Continue) is then emitted on the chunk's own stream,
// and the result is Consumed (or Close). An outbound chunk is never cut
// between a CR and the LF after it: a protocol encodes CR LF differently
// from a bare CR (Telnet: CR NUL), so the pair must reach it in one call.
func (i *Instance) DataTo(sid uint32, dir abi.Dir, p []byte, e Emitter) (abi.Action, error) {
	if uint32(len(p)) <= i.inCap {
		i.begin(e, len(p))
		return i.data(sid, dir, p)
	}
	final := abi.Consumed
	for len(p) > 0 {
		n := min(len(p), int(i.inCap))
		if dir == abi.Outbound && n < len(p) && n > 1 && p[n-1] == '\r' && p[n] == '\n' {
			n--
		}
		i.begin(e, n)
		a, err := i.data(sid, dir, p[:n])
		if err != nil {
			return a, err
		}
		switch a {
		case abi.Continue:
			i.pass(sid, PassStream(dir), p[:n])
		case abi.Close:
			final = abi.Close
		}
		if final != abi.Close {
			// At rest or not is what the last piece left it.
			final = abi.Consumed
			if a == abi.Settled {
				final = abi.Settled
			}
		}
		p = p[n:]
	}
	return final, nil
}

// pass emits a host-side emission (a piece the plugin let through).
func (i *Instance) pass(sid uint32, s abi.Stream, p []byte) {
	if i.emitter != nil {
		i.emitter.Emit(sid, s, p)
		return
	}
	i.out = append(i.out, abi.Emission{SID: sid, Stream: s, Data: p})
}

// PassStream is the stream a chunk of direction dir continues on.
func PassStream(dir abi.Dir) abi.Stream {
	if dir == abi.Outbound {
		return abi.ToPeer
	}
	return abi.ToUser
}

func (i *Instance) data(sid uint32, dir abi.Dir, p []byte) (abi.Action, error) {
	if err := i.put(p); err != nil {
		return 0, err
	}
	r, err := i.call("on_data", i.fData, uint64(sid), uint64(dir), uint64(len(p)))
	if err != nil {
		return 0, err
	}
	a := abi.Action(int32(uint32(r)))
	switch {
	case a < 0:
		return a, &StatusError{Op: "on_data", Status: int32(a), Log: i.logText()}
	case a > abi.Settled:
		return a, &StatusError{Op: "on_data", Status: int32(a), Log: fmt.Sprintf("unknown action %d", a)}
	}
	return a, nil
}

// Control sends a JSON control request; the reply, if any, is the Reply
// emission.
func (i *Instance) Control(sid uint32, req []byte) ([]abi.Emission, error) {
	i.begin(nil, len(req))
	_, err := i.callStatus("on_control", i.fControl, req, uint64(sid))
	return i.out, err
}

// Tick lets time pass; it returns the next wanted tick (Unix ms) or 0.
func (i *Instance) Tick(nowMs int64) (int64, []abi.Emission, error) {
	i.begin(nil, 0)
	r, err := i.call("on_tick", i.fTick, uint64(nowMs))
	return int64(r), i.out, err
}

// CloseSession tells the plugin session sid ended.
func (i *Instance) CloseSession(sid uint32) ([]abi.Emission, error) {
	i.begin(nil, 0)
	_, err := i.call("on_close", i.fClose, uint64(sid))
	return i.out, err
}

// ExportState returns the session's state snapshot.
func (i *Instance) ExportState(sid uint32) ([]byte, []abi.Emission, error) {
	i.begin(nil, 0)
	if !i.m.hasState {
		return nil, nil, ErrNoState
	}
	if _, err := i.callStatus("state_export", i.fExport, nil, uint64(sid)); err != nil {
		return nil, i.out, err
	}
	var st []byte
	for _, e := range i.out {
		if e.Stream == abi.State {
			st = append([]byte(nil), e.Data...)
		}
	}
	if st == nil {
		return nil, i.out, fmt.Errorf("plugin %s: state_export emitted no state", i.m.Manifest.Name)
	}
	return st, i.out, nil
}

// ImportState restores session sid (already opened) from a snapshot.
func (i *Instance) ImportState(sid uint32, state []byte) ([]abi.Emission, error) {
	i.begin(nil, len(state))
	if !i.m.hasState {
		return nil, ErrNoState
	}
	_, err := i.callStatus("state_import", i.fImport, state, uint64(sid))
	return i.out, err
}

// abort stops the running call of a guarded instance: closing the module
// sets the flag its termination checks test at every loop back-edge (calls
// run with a context that has no Done channel, so wazero does not start a
// goroutine per call to watch one). An unguarded instance cannot be
// stopped, and its module is not closed under the running call.
func (i *Instance) abort() {
	i.cancel() // during instantiation
	if m := i.live.Load(); m != nil && i.m.Guarded {
		(*m).CloseWithExitCode(context.Background(), 124)
	}
}
