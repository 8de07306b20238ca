// Package wasmhost is the host side of termhost plugin ABI v1 on wazero: it
// compiles a plugin, checks its ABI marker and manifest, instantiates it with
// the termhost imports, and turns each export call into a list of
// emissions. It has no policy: pools, fail-over and hot reload live in the
// termhost host (host/plugin); the SDK's test harness uses this package
// directly.
//
// An Instance is not safe for concurrent use; callers serialize calls, as
// the ABI requires. Emissions returned by a call are valid until the next
// call on the same instance.
package wasmhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/termhost/termhost/sdk/abi"
)

// Options tune compilation and instances. The zero value is usable.
type Options struct {
	// Cache, when set, keeps compiled machine code (e.g. on disk) so a later
	// Compile of the same bytes is fast.
	Cache wazero.CompilationCache
	// MemoryLimitMiB caps each instance's linear memory. Default 64.
	MemoryLimitMiB uint32
	// CallTimeout aborts (and poisons) an instance whose call runs longer.
	// Default 2s. Only a guarded module can be aborted mid-call.
	CallTimeout time.Duration
	// Guard compiles termination checks into the module (wazero's
	// WithCloseOnContextDone) so a runaway call can be stopped at the
	// deadline. It costs a check at every loop back-edge, and Go-compiled
	// wasm loops for all control flow: plain-text throughput of the telnet
	// plugin drops about tenfold. Unguarded, a call that never returns
	// cannot be stopped; the watchdog then only reports it.
	Guard bool
	// Sys grants the real wall clock, monotonic clock and crypto/rand. Without
	// it the guest sees wazero's deterministic fakes.
	Sys bool
	// StderrLimit bounds the captured stdout+stderr of an instance. Default 16 KiB.
	StderrLimit int
}

func (o *Options) defaults() {
	if o.MemoryLimitMiB == 0 {
		o.MemoryLimitMiB = 64
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Second
	}
	if o.StderrLimit <= 0 {
		o.StderrLimit = 16 << 10
	}
}

// StatusError is a negative status returned deliberately by the plugin. It
// does not poison the instance.
type StatusError struct {
	Op     string
	Status int32
	Log    string // log lines the plugin emitted during the call
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("plugin %s returned status %d", e.Op, e.Status)
	if e.Log != "" {
		msg += ": " + e.Log
	}
	return msg
}

// ErrNoState is returned by ExportState/ImportState when the plugin does not
// support state transfer.
var ErrNoState = errors.New("plugin does not support state export/import")

// TrapError is a failed call: a trap, panic, out-of-memory or deadline. The
// instance is poisoned and closed.
type TrapError struct {
	Plugin string
	Op     string
	Err    error
	Stderr string // tail of what the guest wrote to stdout/stderr
}

func (e *TrapError) Error() string {
	msg := fmt.Sprintf("plugin %s: %s failed: %v", e.Plugin, e.Op, e.Err)
	if e.Stderr != "" {
		msg += "; plugin stderr: " + e.Stderr
	}
	return msg
}

func (e *TrapError) Unwrap() error { return e.Err }

// Module is one compiled plugin version.
type Module struct {
	Manifest abi.Manifest
	SHA256   string
	Size     int
	Guarded  bool // compiled with termination checks (Options.Guard)

	opts     Options
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	hasState bool

	mu        sync.Mutex
	instances map[*Instance]struct{}
	stopWatch chan struct{}
	watchDone chan struct{}
	closed    bool
}

var requiredExports = []struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
}{
	{abi.VersionExport, nil, nil},
	{abi.InBufExport, nil, []api.ValueType{api.ValueTypeI32}},
	{abi.InCapExport, nil, []api.ValueType{api.ValueTypeI32}},
	{abi.ConfigureExport, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{abi.OpenExport, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{abi.DataExport, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{abi.ControlExport, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{abi.TickExport, []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI64}},
	{abi.CloseExport, []api.ValueType{api.ValueTypeI32}, nil},
}

// ReadManifest returns the manifest of a plugin without compiling or running
// it, by scanning the module's custom sections.
func ReadManifest(wasm []byte) (abi.Manifest, error) {
	var m abi.Manifest
	raw, err := customSection(wasm, abi.ManifestSection)
	if err != nil {
		return m, err
	}
	return parseManifest(raw)
}

func parseManifest(raw []byte) (abi.Manifest, error) {
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("manifest section %q is not valid JSON: %w", abi.ManifestSection, err)
	}
	switch {
	case m.Name == "":
		return m, fmt.Errorf("manifest: \"name\" is empty")
	case m.Version == "":
		return m, fmt.Errorf("manifest: \"version\" is empty")
	case m.ABI != abi.Version:
		return m, fmt.Errorf("manifest: \"abi\" is %d; this host speaks ABI %d", m.ABI, abi.Version)
	case m.Kind != "protocol" && m.Kind != "screen" && m.Kind != "dialect":
		return m, fmt.Errorf("manifest: \"kind\" is %q; expected protocol, screen or dialect", m.Kind)
	}
	return m, nil
}

// customSection finds a custom section by name in a wasm binary.
func customSection(wasm []byte, name string) ([]byte, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module (bad magic)")
	}
	p := wasm[8:]
	for len(p) > 0 {
		id := p[0]
		size, n := uleb(p[1:])
		if n == 0 || uint64(len(p)-1-n) < size {
			return nil, errors.New("truncated WebAssembly module")
		}
		body := p[1+n : 1+n+int(size)]
		p = p[1+n+int(size):]
		if id != 0 {
			continue
		}
		nl, m := uleb(body)
		if m == 0 || uint64(len(body)-m) < nl {
			return nil, errors.New("malformed custom section")
		}
		if string(body[m:m+int(nl)]) == name {
			return body[m+int(nl):], nil
		}
	}
	return nil, fmt.Errorf("no %q custom section: not a termhost plugin (build it with sdk/cmd/wasmbuild)", name)
}

func uleb(p []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(p) && i < 10; i++ {
		v |= uint64(p[i]&0x7f) << (7 * i)
		if p[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// Compile validates and compiles a plugin. It does not run any guest code.
func Compile(ctx context.Context, wasm []byte, opts Options) (*Module, error) {
	opts.defaults()
	man, err := ReadManifest(wasm)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	cfg := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(opts.MemoryLimitMiB * 16).
		WithCloseOnContextDone(opts.Guard)
	if opts.Cache != nil {
		cfg = cfg.WithCompilationCache(opts.Cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	fail := func(err error) (*Module, error) {
		rt.Close(ctx)
		return nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("wasi: %w", err))
	}
	_, err = rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostEmit),
		[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).Export(abi.EmitImport).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(hostNow), nil, []api.ValueType{api.ValueTypeI64}).Export(abi.NowImport).
		Instantiate(ctx)
	if err != nil {
		return fail(fmt.Errorf("host module: %w", err))
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return fail(fmt.Errorf("plugin %s: compile: %w", man.Name, err))
	}
	exports := compiled.ExportedFunctions()
	for _, want := range requiredExports {
		f, ok := exports[want.name]
		if !ok {
			return fail(fmt.Errorf("plugin %s: missing export %q (ABI v%d)", man.Name, want.name, abi.Version))
		}
		if !sameTypes(f.ParamTypes(), want.params) || !sameTypes(f.ResultTypes(), want.results) {
			return fail(fmt.Errorf("plugin %s: export %q has the wrong signature", man.Name, want.name))
		}
	}
	_, hasExp := exports[abi.StateExportExport]
	_, hasImp := exports[abi.StateImportExport]
	m := &Module{
		Manifest:  man,
		SHA256:    hex.EncodeToString(sum[:]),
		Size:      len(wasm),
		Guarded:   opts.Guard,
		opts:      opts,
		rt:        rt,
		compiled:  compiled,
		hasState:  hasExp && hasImp,
		instances: make(map[*Instance]struct{}),
	}
	return m, nil
}

func sameTypes(a, b []api.ValueType) bool {
	return bytes.Equal(a, b)
}

// Close closes every instance and frees the compiled code.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	stop, done := m.stopWatch, m.watchDone
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return m.rt.Close(ctx)
}

// Instances reports how many live instances the module has.
func (m *Module) Instances() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.instances)
}

// Instance is one instantiated plugin.
type Instance struct {
	m      *Module
	mod    api.Module
	mem    api.Memory
	ctx    context.Context
	cancel context.CancelFunc

	fConfigure, fOpen, fData, fControl, fTick, fClose, fExport, fImport api.Function

	inBuf, inCap uint32
	stack        [4]uint64
	out          []abi.Emission
	arena        []byte
	stderr       *tailBuffer
	callStart    atomic.Int64 // unix nanos of the running call; 0 when idle
	timedOut     atomic.Bool
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
	inst.ctx, inst.cancel = context.WithCancel(context.WithValue(context.Background(), instKey{}, inst))
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(abi.InitializeExport).
		WithStdout(inst.stderr).
		WithStderr(inst.stderr)
	if m.opts.Sys {
		mc = mc.WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader)
	}
	inst.callStart.Store(time.Now().UnixNano())
	m.ensureWatchdog()
	m.track(inst, true)
	mod, err := m.rt.InstantiateModule(inst.ctx, m.compiled, mc)
	inst.callStart.Store(0)
	if err != nil {
		m.track(inst, false)
		inst.cancel()
		return nil, &TrapError{Plugin: m.Manifest.Name, Op: "instantiate", Err: err, Stderr: inst.stderr.String()}
	}
	inst.mod = mod
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
	if _, err := inst.callStatus("on_configure", inst.fConfigure, cfg, 0); err != nil {
		inst.Close()
		return nil, err
	}
	return inst, nil
}

func (m *Module) track(inst *Instance, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if add {
		m.instances[inst] = struct{}{}
	} else {
		delete(m.instances, inst)
	}
}

// ensureWatchdog starts the goroutine that aborts calls running past the
// deadline. One per module; it ends when the module closes.
func (m *Module) ensureWatchdog() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopWatch != nil {
		return
	}
	m.stopWatch, m.watchDone = make(chan struct{}), make(chan struct{})
	period := m.opts.CallTimeout / 4
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				m.mu.Lock()
				for inst := range m.instances {
					if s := inst.callStart.Load(); s != 0 && now.UnixNano()-s > int64(m.opts.CallTimeout) {
						inst.timedOut.Store(true)
						inst.cancel()
					}
				}
				m.mu.Unlock()
			}
		}
	}(m.stopWatch, m.watchDone)
}

// Module returns the compiled module this instance runs.
func (i *Instance) Module() *Module { return i.m }

// Err is non-nil once the instance is poisoned.
func (i *Instance) Err() error { return i.dead }

// Stderr returns the tail of what the guest printed.
func (i *Instance) Stderr() string { return i.stderr.String() }

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
	if i.timedOut.Load() {
		err = fmt.Errorf("call exceeded %v deadline: %w", i.m.opts.CallTimeout, err)
	}
	te := &TrapError{Plugin: i.m.Manifest.Name, Op: op, Err: err, Stderr: i.stderr.String()}
	i.Close()
	i.dead = te
	return te
}

// call runs f with the arguments already in i.stack and returns stack[0].
func (i *Instance) call(op string, f api.Function, args ...uint64) (uint64, error) {
	if i.dead != nil {
		return 0, i.dead
	}
	copy(i.stack[:], args)
	i.callStart.Store(time.Now().UnixNano())
	err := f.CallWithStack(i.ctx, i.stack[:])
	i.callStart.Store(0)
	if err != nil {
		return 0, i.poison(op, err)
	}
	return i.stack[0], nil
}

func (i *Instance) reset() {
	i.out = i.out[:0]
	i.arena = i.arena[:0]
}

// put copies p into the guest's input buffer.
func (i *Instance) put(p []byte) error {
	if uint32(len(p)) > i.inCap {
		return fmt.Errorf("%d bytes exceed the plugin's input buffer (%d)", len(p), i.inCap)
	}
	if len(p) > 0 && !i.mem.Write(i.inBuf, p) {
		return i.poison("write input", errors.New("input buffer out of range"))
	}
	return nil
}

// callStatus puts p at in_buf, calls f(args..., len(p)) and turns a negative
// status into a StatusError.
func (i *Instance) callStatus(op string, f api.Function, p []byte, args ...uint64) (int32, error) {
	if err := i.put(p); err != nil {
		return 0, err
	}
	var st uint64
	var err error
	switch len(args) {
	case 0:
		st, err = i.call(op, f, uint64(len(p)))
	case 1:
		st, err = i.call(op, f, args[0], uint64(len(p)))
	case 2:
		st, err = i.call(op, f, args[0], args[1], uint64(len(p)))
	}
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
	i.reset()
	_, err := i.callStatus("on_open", i.fOpen, opts, uint64(sid), uint64(kind))
	return i.out, err
}

// Data passes one chunk. Chunks larger than the guest's buffer are split;
// the result is then always Consumed (or Close).
func (i *Instance) Data(sid uint32, dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error) {
	i.reset()
	if uint32(len(p)) <= i.inCap {
		a, err := i.data(sid, dir, p)
		return a, i.out, err
	}
	final := abi.Consumed
	for len(p) > 0 {
		n := min(uint32(len(p)), i.inCap)
		a, err := i.data(sid, dir, p[:n])
		if err != nil {
			return a, i.out, err
		}
		switch a {
		case abi.Continue:
			i.out = append(i.out, abi.Emission{SID: sid, Stream: PassStream(dir), Data: p[:n]})
		case abi.Close:
			final = abi.Close
		}
		p = p[n:]
	}
	return final, i.out, nil
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
	case a > abi.Close:
		return a, &StatusError{Op: "on_data", Status: int32(a), Log: fmt.Sprintf("unknown action %d", a)}
	}
	return a, nil
}

// Control sends a JSON control request; the reply, if any, is the Reply
// emission.
func (i *Instance) Control(sid uint32, req []byte) ([]abi.Emission, error) {
	i.reset()
	_, err := i.callStatus("on_control", i.fControl, req, uint64(sid))
	return i.out, err
}

// Tick lets time pass; it returns the next wanted tick (Unix ms) or 0.
func (i *Instance) Tick(nowMs int64) (int64, []abi.Emission, error) {
	i.reset()
	r, err := i.call("on_tick", i.fTick, uint64(nowMs))
	return int64(r), i.out, err
}

// CloseSession tells the plugin session sid ended.
func (i *Instance) CloseSession(sid uint32) ([]abi.Emission, error) {
	i.reset()
	_, err := i.call("on_close", i.fClose, uint64(sid))
	return i.out, err
}

// ExportState returns the session's state snapshot.
func (i *Instance) ExportState(sid uint32) ([]byte, []abi.Emission, error) {
	i.reset()
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
	i.reset()
	if !i.m.hasState {
		return nil, ErrNoState
	}
	_, err := i.callStatus("state_import", i.fImport, state, uint64(sid))
	return i.out, err
}

func hostEmit(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*Instance)
	if inst == nil {
		return
	}
	sid, stream, ptr, n := uint32(stack[0]), abi.Stream(uint32(stack[1])), uint32(stack[2]), uint32(stack[3])
	var data []byte
	if n > 0 {
		b, ok := mod.Memory().Read(ptr, n)
		if !ok {
			panic(fmt.Sprintf("emit: [%d, +%d) is outside guest memory", ptr, n))
		}
		start := len(inst.arena)
		inst.arena = append(inst.arena, b...)
		data = inst.arena[start:len(inst.arena):len(inst.arena)]
	}
	if stream > abi.Reply {
		panic(fmt.Sprintf("emit: unknown stream %d", stream))
	}
	inst.out = append(inst.out, abi.Emission{SID: sid, Stream: stream, Data: data})
}

func hostNow(_ context.Context, stack []uint64) {
	stack[0] = uint64(time.Now().UnixMilli())
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

var _ io.Writer = (*tailBuffer)(nil)

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// Stuck reports that a call of this instance ran past the deadline. A
// guarded instance is then aborted; an unguarded one cannot be, and the
// host should stop routing sessions to it.
func (i *Instance) Stuck() bool { return i.timedOut.Load() }

// AppendCustomSection adds a custom section (id 0) at the end of a module.
// Custom sections may appear anywhere; this is how wasmbuild stamps the
// manifest into a module Go built.
func AppendCustomSection(wasm []byte, name string, data []byte) []byte {
	var body []byte
	body = appendULEB(body, uint64(len(name)))
	body = append(body, name...)
	body = append(body, data...)
	wasm = append(wasm, 0)
	wasm = appendULEB(wasm, uint64(len(body)))
	return append(wasm, body...)
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
