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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/termhost/termhost/sdk/abi"
)

// Options tune compilation and instances. The zero value is usable.
type Options struct {
	// Cache, when set, keeps compiled machine code (e.g. on disk) so a later
	// Compile of the same bytes is fast. It is shared by the modules
	// compiled with it, and outlives them.
	Cache wazero.CompilationCache
	// CacheDir, when set (and Cache is not), keeps compiled machine code
	// on disk, in a wazero compilation cache of the module's own, closed
	// with it. Closing a module then frees all its code at once: wazero's
	// engine, which a shared Cache keeps alive, still references a closed
	// module's machine code (and decoded module) from a slot of its list
	// of modules until a later compile overwrites it (wazero 1.12).
	CacheDir string
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
	ownCache wazero.CompilationCache // from Options.CacheDir, or nil
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
	var own wazero.CompilationCache
	switch {
	case opts.Cache != nil:
		cfg = cfg.WithCompilationCache(opts.Cache)
	case opts.CacheDir != "":
		if own, err = wazero.NewCompilationCacheWithDir(opts.CacheDir); err != nil {
			return nil, fmt.Errorf("compilation cache: %w", err)
		}
		cfg = cfg.WithCompilationCache(own)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	fail := func(err error) (*Module, error) {
		rt.Close(ctx)
		if own != nil {
			own.Close(ctx)
		}
		return nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("wasi: %w", err))
	}
	_, err = rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostEmit),
		[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).Export(abi.EmitImport).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(hostNow), nil, []api.ValueType{api.ValueTypeI64}).Export(abi.NowImport).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostCall),
		[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32},
		[]api.ValueType{api.ValueTypeI32}).Export(abi.CallImport).
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
			compiled.Close(ctx)
			return fail(fmt.Errorf("plugin %s: missing export %q (ABI v%d)", man.Name, want.name, abi.Version))
		}
		if !sameTypes(f.ParamTypes(), want.params) || !sameTypes(f.ResultTypes(), want.results) {
			compiled.Close(ctx)
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
		ownCache:  own,
		hasState:  hasExp && hasImp,
		instances: make(map[*Instance]struct{}),
	}
	return m, nil
}

func sameTypes(a, b []api.ValueType) bool {
	return bytes.Equal(a, b)
}

// HasState says whether the plugin exports state_export/state_import.
func (m *Module) HasState() bool { return m.hasState }

// Close closes every instance and frees the compiled code. The compiled
// module is closed as well as the runtime: with a compilation cache
// (Options.Cache) wazero's engine outlives the runtime, and it keeps a
// compiled module (its machine code and the decoded module) until that
// module is closed.
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
	err := m.rt.Close(ctx)
	m.compiled.Close(ctx)
	if m.ownCache != nil {
		m.ownCache.Close(ctx)
	}
	return err
}

// Instances reports how many live instances the module has.
func (m *Module) Instances() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.instances)
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
			case <-t.C:
				now := monoNow()
				m.mu.Lock()
				for inst := range m.instances {
					if s := inst.callStart.Load(); s != 0 && now-s > int64(m.opts.CallTimeout) {
						inst.abortedAt.CompareAndSwap(0, now)
						inst.abort()
					}
				}
				m.mu.Unlock()
			}
		}
	}(m.stopWatch, m.watchDone)
}
