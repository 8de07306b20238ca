package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// Test plugins, built once per test binary by TestMain.
var (
	builtDir   string // where the .wasm files are
	testCache  string // compilation cache shared by the tests (persistent)
	upperSrc   = "../../sdk/examples/upper"
	counterSrc = "./testdata/counter"
)

const (
	upper1   = "upper-1.0.0.wasm"
	upper2   = "upper-2.0.0.wasm"
	counter1 = "counter-1.0.0.wasm"
	counter2 = "counter-2.0.0.wasm"
)

var verbose = flag.Bool("plugin.log", false, "show the registry's logs")

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		dir, err := os.MkdirTemp("", "hostplugin-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		builtDir = dir
		if base, err := testCacheBase(); err == nil {
			// Persistent, so repeated runs do not pay wazero's compile of
			// the Go plugins again (it is slow under -race).
			testCache = filepath.Join(base, "termhost", "wazero-test-hostplugin")
		} else {
			testCache = filepath.Join(dir, "cache")
		}
		start := time.Now()
		if err := buildAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, "building test plugins:", err)
			return 1
		}
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "test plugins built and compiled in %v\n", time.Since(start).Round(time.Millisecond))
		}
		return m.Run()
	}()
	os.Exit(code)
}

// buildAll builds the test plugins (two at a time) and compiles them into
// the shared cache.
func buildAll(dir string) error {
	jobs := []struct{ src, version, out string }{
		{counterSrc, "1.0.0", counter1},
		{upperSrc, "1.0.0", upper1},
		{counterSrc, "2.0.0", counter2},
		{upperSrc, "2.0.0", upper2},
	}
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = buildPlugin(j.src, j.version, filepath.Join(dir, j.out))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	files := make([]string, len(jobs))
	for i, j := range jobs {
		files[i] = filepath.Join(dir, j.out)
	}
	// Compile in a separate process built without -race: wazero's compiler
	// is about ten times slower under the race detector, and the cache
	// entries do not depend on it. If that fails, compile here.
	// The cache is per wazero version, which the tool must see as this
	// test binary does.
	ldflags := "-ldflags=-X=github.com/tetratelabs/wazero/internal/version.version=" + wazeroVersion()
	cmd := exec.Command("go", append([]string{"run", ldflags, "./testdata/warmcache", testCache}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "warming the compilation cache out of process failed (%v): %s\n", err, out)
		for _, f := range files {
			reg, err := Open(context.Background(), Config{
				Embedded: fstest.MapFS{filepath.Base(f): {Data: mustRead(f)}},
				CacheDir: testCache,
				Logger:   slog.New(slog.DiscardHandler),
			})
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			reg.Close()
		}
	}
	return nil
}

// buildPlugin does what sdk/cmd/wasmbuild does (go build for wasip1, then
// the manifest as a custom section), and also sets main.version, so a test
// plugin can print the version it was built as.
func buildPlugin(pkg, version, out string) error {
	raw, err := os.ReadFile(filepath.Join(pkg, "manifest.json"))
	if err != nil {
		return err
	}
	var man abi.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return err
	}
	man.Version, man.ABI = version, abi.Version
	section, err := json.Marshal(man)
	if err != nil {
		return err
	}
	tmp := out + ".build"
	cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared",
		"-ldflags=-buildid= -X main.version="+version, "-o", tmp, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	wasm, err := os.ReadFile(tmp)
	os.Remove(tmp)
	if err != nil {
		return err
	}
	return os.WriteFile(out, wasmhost.AppendCustomSection(wasm, abi.ManifestSection, section), 0o644)
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

func mustRead(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return b
}

func built(name string) []byte { return mustRead(filepath.Join(builtDir, name)) }

// embedded makes an embedded FS from built plugins: "x-1.0.0.wasm" is
// embedded as "x.wasm".
func embedded(names ...string) fs.FS {
	m := fstest.MapFS{}
	for _, n := range names {
		base := n[:strings.IndexByte(n, '-')] + ".wasm"
		m[base] = &fstest.MapFile{Data: built(n)}
	}
	return m
}

// --- a tiny hand-assembled plugin (no Go runtime: compiles in
// milliseconds), to test the cache and malformed plugins.

type wfn struct {
	name            string
	params, results []byte
	body            []byte // without the final end
}

const (
	i32 = 0x7f
	i64 = 0x7e
)

func i32const(v int32) []byte { return appendSLEB([]byte{0x41}, int64(v)) }

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func tinyExports(openStatus int32) []wfn {
	return []wfn{
		{abi.VersionExport, nil, nil, nil},
		{abi.InBufExport, nil, []byte{i32}, i32const(1024)},
		{abi.InCapExport, nil, []byte{i32}, i32const(65536)},
		{abi.ConfigureExport, []byte{i32}, []byte{i32}, i32const(0)},
		{abi.OpenExport, []byte{i32, i32, i32}, []byte{i32}, i32const(openStatus)},
		{abi.DataExport, []byte{i32, i32, i32}, []byte{i32}, i32const(int32(abi.Continue))},
		{abi.ControlExport, []byte{i32, i32}, []byte{i32}, i32const(0)},
		{abi.TickExport, []byte{i64}, []byte{i64}, []byte{0x42, 0}},
		{abi.CloseExport, []byte{i32}, nil, nil},
	}
}

// tinyPlugin assembles a module exporting fns and a 2-page memory, with a
// manifest section unless manifest is "".
func tinyPlugin(manifest string, fns []wfn) []byte {
	section := func(out []byte, id byte, body []byte) []byte {
		out = append(out, id)
		out = appendULEB(out, uint64(len(body)))
		return append(out, body...)
	}
	vec := func(n int) []byte { return appendULEB(nil, uint64(n)) }
	name := func(b []byte, s string) []byte { return append(appendULEB(b, uint64(len(s))), s...) }

	types := vec(len(fns))
	funcs := vec(len(fns))
	code := vec(len(fns))
	exports := vec(len(fns) + 1)
	for i, f := range fns {
		types = append(types, 0x60)
		types = append(append(types, vec(len(f.params))...), f.params...)
		types = append(append(types, vec(len(f.results))...), f.results...)
		funcs = appendULEB(funcs, uint64(i))
		body := append(append([]byte{0}, f.body...), 0x0b) // no locals
		code = append(appendULEB(code, uint64(len(body))), body...)
		exports = append(name(exports, f.name), 0x00)
		exports = appendULEB(exports, uint64(i))
	}
	exports = append(name(exports, "memory"), 0x02, 0)
	mem := []byte{1, 0x00, 2} // one memory, min 2 pages

	out := []byte("\x00asm\x01\x00\x00\x00")
	out = section(out, 1, types)
	out = section(out, 3, funcs)
	out = section(out, 5, mem)
	out = section(out, 7, exports)
	out = section(out, 10, code)
	if manifest != "" {
		out = wasmhost.AppendCustomSection(out, abi.ManifestSection, []byte(manifest))
	}
	return out
}

func tinyManifest(name, version string) string {
	return fmt.Sprintf(`{"name":%q,"version":%q,"kind":"dialect","abi":1}`, name, version)
}

// --- registry helpers

type tlog struct {
	mu sync.Mutex
	t  testing.TB
	on bool
}

func (w *tlog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	if !*verbose {
		return slog.New(slog.DiscardHandler)
	}
	w := &tlog{t: t, on: true}
	t.Cleanup(func() { w.mu.Lock(); w.on = false; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// open opens a registry with the shared cache and closes it when the test
// ends.
func open(t testing.TB, cfg Config) *Registry {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = testCache
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	r, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func attach(t testing.TB, r *Registry, name string, opts string) *Binding {
	t.Helper()
	b, err := r.Attach(name, abi.KindTelnet, []byte(opts))
	if err != nil {
		t.Fatalf("Attach(%s): %v", name, err)
	}
	t.Cleanup(b.Close)
	return b
}

// writeAtomic writes data to dir/name the way editors and wasmbuild do: a
// temporary file renamed into place.
func writeAtomic(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write(data); err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	dst := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// waitChange waits for a change matching ok.
func waitChange(t testing.TB, ch <-chan Change, what string, ok func(Change) bool) Change {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case c, open := <-ch:
			if !open {
				t.Fatalf("waiting for %s: subscription closed", what)
			}
			if ok(c) {
				return c
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func isChange(k ChangeKind, name, version string) func(Change) bool {
	return func(c Change) bool { return c.Kind == k && c.Name == name && c.Version == version }
}

func rejectedFile(path string) func(Change) bool {
	return func(c Change) bool { return c.Kind == Rejected && c.Source == path }
}

// collect joins the data of the emissions on stream s.
func collect(ems []abi.Emission, s abi.Stream) string {
	var b []byte
	for _, e := range ems {
		if e.Stream == s {
			b = append(b, e.Data...)
		}
	}
	return string(b)
}

type failEvent struct {
	Type, Plugin, Version, Error, Outcome string
}

// failEvents returns the plugin_failed events among ems.
func failEvents(t testing.TB, ems []abi.Emission) []failEvent {
	t.Helper()
	var out []failEvent
	for _, e := range ems {
		if e.Stream != abi.Event {
			continue
		}
		var ev failEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatalf("event %q: %v", e.Data, err)
		}
		if ev.Type == "plugin_failed" {
			out = append(out, ev)
		}
	}
	return out
}

// send sends an inbound chunk and returns what reached the user and the
// plugin_failed events.
func send(t testing.TB, b *Binding, chunk string) (string, []failEvent) {
	t.Helper()
	a, ems, err := data(b, abi.Inbound, []byte(chunk))
	if err != nil {
		t.Fatalf("Data(%q): %v", chunk, err)
	}
	user := collect(ems, abi.ToUser)
	if a == abi.Continue {
		user += chunk
	}
	return user, failEvents(t, ems)
}

func findInfo(r *Registry, name, version string) (Info, bool) {
	for _, in := range r.List() {
		if in.Name == name && in.Version == version {
			return in, true
		}
	}
	return Info{}, false
}

// rec is a Sink that keeps copies of what it is given; Discard forgets
// what came since the last call began.
type rec struct {
	ems  []abi.Emission
	mark int
}

func (r *rec) Emit(s abi.Stream, p []byte) {
	r.ems = append(r.ems, abi.Emission{Stream: s, Data: append([]byte(nil), p...)})
}

func (r *rec) Discard() { r.ems = r.ems[:r.mark] }

// data passes one chunk and returns its emissions.
func data(b *Binding, dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error) {
	var r rec
	a, err := b.Data(dir, p, &r)
	return a, r.ems, err
}

// control sends a control request and returns its emissions.
func control(b *Binding, req []byte) ([]abi.Emission, error) {
	var r rec
	err := b.Control(req, &r)
	return r.ems, err
}
