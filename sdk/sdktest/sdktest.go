// Package sdktest runs one set of plugin tests twice: natively, against the
// plugin's Factory driven by sdk.Runtime, and inside wazero, against the
// built .wasm driven by internal/wasmhost. Both sides answer through the same
// Plugin interface with the same emissions and errors, so a test written
// once proves the plugin behaves the same in both worlds.
package sdktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

// Plugin is one plugin instance, native or wasm.
type Plugin interface {
	Open(sid uint32, kind abi.Kind, opts []byte) ([]abi.Emission, error)
	Data(sid uint32, dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error)
	Control(sid uint32, req []byte) ([]abi.Emission, error)
	Tick(nowMs int64) (int64, []abi.Emission, error)
	CloseSession(sid uint32) ([]abi.Emission, error)
	ExportState(sid uint32) ([]byte, []abi.Emission, error)
	ImportState(sid uint32, state []byte) ([]abi.Emission, error)
	// SetHostCall sets what answers the plugin's host calls (nil: none,
	// the default).
	SetHostCall(h wasmhost.HostCallFunc)
}

// Both runs fn as subtest "native" with f, and as subtest "wasm" with the
// module at wasmPath, each configured with cfg.
func Both(t *testing.T, f sdk.Factory, wasmPath string, cfg []byte, fn func(t *testing.T, p Plugin)) {
	t.Helper()
	t.Run("native", func(t *testing.T) {
		p := Native(f)
		if st := p.rt.Configure(cfg); st < 0 {
			t.Fatalf("configure: status %d: %s", st, p.logText())
		}
		fn(t, p)
	})
	t.Run("wasm", func(t *testing.T) {
		inst := Wasm(t, wasmPath, cfg)
		fn(t, inst)
	})
}

// Wasm compiles and instantiates the module at path; it is closed when the
// test ends. The instance gets the real clocks and random source, as in
// termhost.
func Wasm(t testing.TB, path string, cfg []byte) *wasmhost.Instance {
	t.Helper()
	return WasmWith(t, path, cfg, wasmhost.Options{})
}

// WasmWith is Wasm with options (a benchmark compares guarded and
// unguarded builds); the test cache is used unless opts names one, and Sys
// is always granted.
func WasmWith(t testing.TB, path string, cfg []byte, opts wasmhost.Options) *wasmhost.Instance {
	t.Helper()
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read plugin: %v", err)
	}
	ctx := context.Background()
	if opts.Cache == nil {
		opts.Cache = sharedCache()
	}
	opts.Sys = true
	m, err := wasmhost.Compile(ctx, wasm, opts)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	t.Cleanup(func() { m.Close(ctx) })
	inst, err := m.Instantiate(ctx, cfg)
	if err != nil {
		t.Fatalf("instantiate %s: %v", path, err)
	}
	t.Cleanup(func() { inst.Close() })
	return inst
}

// NativePlugin drives a Factory in-process with wasmhost's semantics.
type NativePlugin struct {
	rt  *sdk.Runtime
	out []abi.Emission
}

// Native returns a NativePlugin for f (not yet configured).
func Native(f sdk.Factory) *NativePlugin {
	n := &NativePlugin{}
	n.rt = sdk.NewRuntime(f, func(sid uint32, s abi.Stream, p []byte) {
		n.out = append(n.out, abi.Emission{SID: sid, Stream: s, Data: append([]byte(nil), p...)})
	})
	return n
}

// SetHostCall sets what answers the plugin's host calls.
func (n *NativePlugin) SetHostCall(h wasmhost.HostCallFunc) {
	if h == nil {
		n.rt.SetHostCall(nil)
		return
	}
	// The same bounds and copies as the host's import.
	n.rt.SetHostCall(func(sid uint32, req []byte) ([]byte, error) {
		if len(req) > abi.MaxCallRequest {
			return nil, fmt.Errorf("host call refused: the request (%d bytes) is malformed or larger than %d bytes", len(req), abi.MaxCallRequest)
		}
		ans, err := h(sid, append([]byte(nil), req...))
		switch {
		case err != nil:
			reason := err.Error()
			return nil, &sdk.RefusedError{Reason: reason[:min(len(reason), abi.MaxCallReason)]}
		case len(ans) > abi.MaxCallAnswer:
			return nil, &sdk.RefusedError{Reason: "the host's answer is too long"}
		}
		return append([]byte{}, ans...), nil
	})
}

// Configure passes the instance configuration.
func (n *NativePlugin) Configure(cfg []byte) error {
	return n.status("on_configure", n.rt.Configure(cfg))
}

func (n *NativePlugin) logText() string {
	var parts []string
	for _, e := range n.out {
		if e.Stream == abi.Log {
			parts = append(parts, string(e.Data))
		}
	}
	return strings.Join(parts, "; ")
}

func (n *NativePlugin) status(op string, st int32) error {
	switch {
	case st == abi.ErrNoState:
		return wasmhost.ErrNoState
	case st < 0:
		return &wasmhost.StatusError{Op: op, Status: st, Log: n.logText()}
	}
	return nil
}

func (n *NativePlugin) Open(sid uint32, kind abi.Kind, opts []byte) ([]abi.Emission, error) {
	n.out = nil
	err := n.status("on_open", n.rt.Open(sid, kind, opts))
	return n.out, err
}

func (n *NativePlugin) Data(sid uint32, dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error) {
	n.out = nil
	a := n.rt.Data(sid, dir, p)
	if a < 0 {
		return abi.Action(a), n.out, n.status("on_data", a)
	}
	return abi.Action(a), n.out, nil
}

func (n *NativePlugin) Control(sid uint32, req []byte) ([]abi.Emission, error) {
	n.out = nil
	err := n.status("on_control", n.rt.Control(sid, req))
	return n.out, err
}

func (n *NativePlugin) Tick(now int64) (int64, []abi.Emission, error) {
	n.out = nil
	next := n.rt.Tick(now)
	return next, n.out, nil
}

func (n *NativePlugin) CloseSession(sid uint32) ([]abi.Emission, error) {
	n.out = nil
	n.rt.Close(sid)
	return n.out, nil
}

func (n *NativePlugin) ExportState(sid uint32) ([]byte, []abi.Emission, error) {
	n.out = nil
	if err := n.status("state_export", n.rt.StateExport(sid)); err != nil {
		return nil, n.out, err
	}
	for _, e := range n.out {
		if e.Stream == abi.State {
			return e.Data, n.out, nil
		}
	}
	return nil, n.out, errors.New("state_export emitted no state")
}

func (n *NativePlugin) ImportState(sid uint32, state []byte) ([]abi.Emission, error) {
	n.out = nil
	err := n.status("state_import", n.rt.StateImport(sid, state))
	return n.out, err
}

// Collect concatenates the data of every emission on stream s, treating a
// Continue action as the chunk passing on unchanged.
func Collect(ems []abi.Emission, s abi.Stream) []byte {
	var b []byte
	for _, e := range ems {
		if e.Stream == s {
			b = append(b, e.Data...)
		}
	}
	return b
}

// Apply returns what a Data call produced on the stream the chunk travels
// on: the emissions on that stream, plus the chunk itself when the action
// was Continue.
func Apply(dir abi.Dir, p []byte, a abi.Action, ems []abi.Emission) []byte {
	s := wasmhost.PassStream(dir)
	b := Collect(ems, s)
	if a == abi.Continue {
		b = append(b, p...)
	}
	return b
}
