package plugin

import (
	"embed"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// tiny is a hand-assembled plugin (it compiles in milliseconds, even
// under -race and without a cache) named tiny, of version v.
func tiny(v string) []byte { return tinyPlugin(tinyManifest("tiny", v), tinyExports(0)) }

func tinyFS(v string) fstest.MapFS { return fstest.MapFS{"tiny.wasm": {Data: tiny(v)}} }

// version says which version b runs.
func versionOf(b *Binding) string { _, v := b.Plugin(); return v }

// compiled says whether the current version of name has its module.
func compiled(r *Registry, name string) bool {
	v := r.current(name)
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mod != nil
}

func waitUnloaded(t *testing.T, r *Registry, name string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); compiled(r, name); {
		if time.Now().After(deadline) {
			t.Fatalf("%s still compiled with no session", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With an on-disk cache, a plugin is compiled when a session needs it
// and unloaded (module and idle instances) once none has used it for
// IdleUnload; the next session compiles it again from the cache.
func TestIdleVersionUnloads(t *testing.T) {
	r := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: t.TempDir(), IdleUnload: 50 * time.Millisecond})
	if compiled(r, "tiny") {
		t.Fatal("compiled after the load, before any session")
	}
	for round := 1; round <= 2; round++ {
		b, err := r.Attach("tiny", abi.KindTelnet, nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got, _ := send(t, b, "c"); got != "c" {
			t.Fatalf("round %d: %q", round, got)
		}
		time.Sleep(150 * time.Millisecond) // in use: not unloaded
		if !compiled(r, "tiny") {
			t.Fatalf("round %d: unloaded under a live session", round)
		}
		b.Close()
		waitUnloaded(t, r, "tiny")
		if in, _ := findInfo(r, "tiny", "1.0.0"); in.Instances != 0 || !in.Current {
			t.Fatalf("round %d, unloaded: %+v", round, in)
		}
	}
	// Prepare compiles ahead of a session; unused, it goes again.
	r.Prepare("tiny")
	for deadline := time.Now().Add(5 * time.Second); !compiled(r, "tiny"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Prepare did not compile")
		}
	}
	waitUnloaded(t, r, "tiny")
}

// Warm makes one idle instance ahead of a session (a device session's
// dialect): the session that attaches takes it instead of making one, and
// unused it goes with the module.
func TestWarmMakesAnIdleInstance(t *testing.T) {
	r := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: t.TempDir(), IdleUnload: 200 * time.Millisecond})
	instances := func() int { in, _ := findInfo(r, "tiny", "1.0.0"); return in.Instances }
	r.Warm("tiny")
	for deadline := time.Now().Add(5 * time.Second); instances() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Warm made no instance: %d", instances())
		}
	}
	r.Warm("tiny") // one is there: no second
	b, err := r.Attach("tiny", abi.KindTelnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := send(t, b, "c"); got != "c" || instances() != 1 {
		t.Fatalf("the session on the warm instance: %q, %d instances", got, instances())
	}
	b.Close()
	r.Warm("tiny")
	waitUnloaded(t, r, "tiny")
	if n := instances(); n != 0 {
		t.Fatalf("%d instances after the unload", n)
	}
}

// Without an on-disk cache nothing gives the compiled code back: it stays.
func TestNoUnloadWithoutDiskCache(t *testing.T) {
	r := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: "off", IdleUnload: 10 * time.Millisecond})
	b := attach(t, r, "tiny", "")
	b.Close()
	time.Sleep(100 * time.Millisecond)
	if !compiled(r, "tiny") {
		t.Fatal("unloaded with no disk cache")
	}
}

// A version that passed its canary, and whose compiled code the cache
// still holds, is not compiled and checked again by the next load; its
// session compiles it from the cache. New bytes are checked.
func TestCheckedVersionsLoadWithoutCompiling(t *testing.T) {
	cache := t.TempDir()
	r1 := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: cache})
	if n := r1.canaries.Load(); n != 1 {
		t.Fatalf("first load ran %d canaries; want 1", n)
	}
	r1.Close()
	r2 := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: cache})
	if n := r2.canaries.Load(); n != 0 {
		t.Fatalf("second load ran %d canaries; want 0 (checked before)", n)
	}
	b := attach(t, r2, "tiny", "")
	if got, _ := send(t, b, "c"); got != "c" {
		t.Fatalf("session: %q", got)
	}
	in, _ := findInfo(r2, "tiny", "1.0.0")
	if in.SHA256 != sha(tiny("1.0.0")) || !in.Trusted {
		t.Errorf("info = %+v", in)
	}
	r2.Close()
	// Other bytes, and other settings, are checked again.
	r3 := open(t, Config{Embedded: tinyFS("2.0.0"), CacheDir: cache})
	if n := r3.canaries.Load(); n != 1 {
		t.Errorf("other bytes: %d canaries; want 1", n)
	}
	r4 := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: cache, PluginConfig: map[string][]byte{"tiny": []byte(`{}`)}})
	if n := r4.canaries.Load(); n != 1 {
		t.Errorf("other configuration: %d canaries; want 1", n)
	}
	r5 := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: cache, CallTimeout: time.Second})
	if n := r5.canaries.Load(); n != 1 {
		t.Errorf("another deadline: %d canaries; want 1", n)
	}
	// A record without its compiled file does not count.
	sub := filepath.Join(cache, wazeroCacheSubdir())
	ents, _ := os.ReadDir(sub)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "termhost-") {
			os.Remove(filepath.Join(sub, e.Name()))
		}
	}
	r6 := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: cache})
	if n := r6.canaries.Load(); n != 1 {
		t.Errorf("compiled file gone: %d canaries; want 1", n)
	}
}

// What a session compiles is what was checked: an embedded plugin whose
// bytes differ from the version's sha256 is refused.
func TestRecompileChecksTheBytes(t *testing.T) {
	fsys := tinyFS("1.0.0")
	r := open(t, Config{Embedded: fsys, CacheDir: t.TempDir(), IdleUnload: 20 * time.Millisecond})
	b := attach(t, r, "tiny", "")
	b.Close()
	waitUnloaded(t, r, "tiny")
	fsys["tiny.wasm"] = &fstest.MapFile{Data: tiny("1.0.1")}
	_, err := r.Attach("tiny", abi.KindTelnet, nil)
	if err == nil || !strings.Contains(err.Error(), "bytes changed") {
		t.Fatalf("Attach = %v; want the bytes refused", err)
	}
	if errors.Is(err, ErrUnknownPlugin) {
		t.Errorf("error %v says unknown plugin", err)
	}
}

// A version from the plugin directory keeps the bytes it was checked
// with: unloaded, then its file overwritten with something rejected, it
// compiles again from what was pinned and checked.
func TestDirVersionKeepsItsBytes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tiny.wasm"), tiny("2.0.0"), 0o644)
	r := open(t, Config{Embedded: tinyFS("1.0.0"), Dir: dir, Pins: pins(tiny("2.0.0")),
		CacheDir: t.TempDir(), IdleUnload: 20 * time.Millisecond})
	b := attach(t, r, "tiny", "")
	b.Close()
	waitUnloaded(t, r, "tiny")
	ch, stop := r.Subscribe()
	defer stop()
	path := writeAtomic(t, dir, "tiny.wasm", []byte("not wasm"))
	waitChange(t, ch, "junk rejected", rejectedFile(path))
	b = attach(t, r, "tiny", "")
	if got, _ := send(t, b, "c"); got != "c" || versionOf(b) != "2.0.0" {
		t.Fatalf("session: %q on %s", got, versionOf(b))
	}
}

// The index keeps the embedded sums of the newest few executables.
func TestIndexKeepsFewBinaries(t *testing.T) {
	idx := readIndex(t.TempDir())
	now := time.Now()
	for i := range maxBinaries + 5 {
		idx.Binaries[strings.Repeat("x", i+1)] = &binaryRecord{Seen: now.Add(time.Duration(i) * time.Second), Sums: map[string]string{"a.wasm": "s"}}
	}
	idx.forget(now.Add(time.Minute))
	if len(idx.Binaries) != maxBinaries || idx.Binaries["x"] != nil || idx.Binaries[strings.Repeat("x", maxBinaries+5)] == nil {
		t.Fatalf("kept %d binaries", len(idx.Binaries))
	}
}

// The sums of embedded plugins are recorded only for the binary's own
// embed.FS (a test's map of files may change under the same names).
func TestExeKeyOnlyForEmbedFS(t *testing.T) {
	if k := exeKey(fstest.MapFS{}); k != "" {
		t.Errorf("exeKey(MapFS) = %q", k)
	}
	var efs embed.FS
	k := exeKey(efs)
	if k == "" {
		t.Fatal("exeKey(embed.FS) is empty")
	}
	idx := readIndex(t.TempDir())
	idx.Binaries[k] = &binaryRecord{Seen: time.Now(), Sums: map[string]string{"vt.wasm": "abc"}}
	if idx.sum(k, "vt.wasm") != "abc" || idx.sum("other", "vt.wasm") != "" || idx.sum("", "vt.wasm") != "" {
		t.Error("sum")
	}
}
