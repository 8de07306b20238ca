package plugin

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// variant is a built test plugin with its manifest edited.
func variant(t *testing.T, name string, edit func(*abi.Manifest)) []byte {
	t.Helper()
	wasm := built(name)
	man, err := wasmhost.ReadManifest(wasm)
	if err != nil {
		t.Fatal(err)
	}
	edit(&man)
	out, err := wasmhost.SetManifest(wasm, man)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func embedOne(name string, wasm []byte) fstest.MapFS {
	return fstest.MapFS{name + ".wasm": &fstest.MapFile{Data: wasm}}
}

// A fail-closed plugin's failure ends the session: the error is fatal and
// the chunk is not passed through.
func TestFailClosed(t *testing.T) {
	wasm := variant(t, counter1, func(m *abi.Manifest) { m.Failure = "closed" })
	r := open(t, Config{Embedded: embedOne("counter", wasm)})
	b := attach(t, r, "counter", "")
	_, ems, err := data(b, abi.Inbound, []byte("panic"))
	var pe *Error
	if !errors.As(err, &pe) || !pe.Fatal() || collect(ems, abi.ToUser) != "" {
		t.Fatalf("fail-closed trap: to_user %q, err %v", collect(ems, abi.ToUser), err)
	}
	if !strings.Contains(err.Error(), "fails closed") || !strings.Contains(err.Error(), "told to panic") {
		t.Fatalf("error does not say what happened: %v", err)
	}
	// The default for a protocol plugin is closed too; for a dialect, open.
	if !(abi.Manifest{Kind: "dialect"}).FailOpen() || (abi.Manifest{Kind: "protocol"}).FailOpen() {
		t.Fatal("default failure policy")
	}
}

// instances: "session" gives every session an instance of its own, closed
// with it.
func TestInstancePerSession(t *testing.T) {
	wasm := variant(t, counter1, func(m *abi.Manifest) { m.Instances = "session" })
	r := open(t, Config{Embedded: embedOne("counter", wasm), PoolSize: 1})
	a := attach(t, r, "counter", "")
	b := attach(t, r, "counter", "")
	send(t, a, "x")
	send(t, b, "y")
	if in, _ := findInfo(r, "counter", "1.0.0"); in.Instances != 2 || in.Sessions != 2 {
		t.Fatalf("two sessions: %+v", in)
	}
	a.Close()
	if in, _ := findInfo(r, "counter", "1.0.0"); in.Instances != 1 || in.Sessions != 1 {
		t.Fatalf("after one closed: %+v", in)
	}
}

// A plugin declares the session kinds it handles: it is not attached to
// others, and its canary opens each one.
func TestDeclaredSessionKinds(t *testing.T) {
	wasm := variant(t, counter1, func(m *abi.Manifest) { m.Sessions = []string{"telnet"} })
	r := open(t, Config{Embedded: embedOne("counter", wasm)})
	if _, err := r.Attach("counter", abi.KindPTY, nil); err == nil || !strings.Contains(err.Error(), "does not handle pty sessions") {
		t.Fatalf("attach to pty: %v", err)
	}
	attach(t, r, "counter", "")
}

// The canary feeds a sample chunk under the deadline: a plugin that loops
// on data is never published, even one named like a working plugin.
func TestCanaryRejectsALoopingPlugin(t *testing.T) {
	dir := t.TempDir()
	// The looping variant: same name, instance configuration that loops;
	// pinned, so the canary is what refuses it.
	loopy := variant(t, counter2, func(m *abi.Manifest) {})
	r := open(t, Config{Embedded: embedded(counter1), Dir: dir, CallTimeout: 300 * time.Millisecond,
		PluginConfig: map[string][]byte{}, Pins: pins(loopy)})
	ch, stop := r.Subscribe()
	defer stop()
	r.cfg.PluginConfig["counter"] = []byte(`{"loop_always":true}`)
	path := writeAtomic(t, dir, "counter.wasm", loopy)
	c := waitChange(t, ch, "the looping plugin rejected", rejectedFile(path))
	if !strings.Contains(c.Err.Error(), "canary") {
		t.Fatalf("rejected for %v", c.Err)
	}
	if in, ok := findInfo(r, "counter", "1.0.0"); !ok || !in.Current {
		t.Fatalf("the working version is not current: %+v", r.List())
	}
}

// A plugin that emits more than its budget in one call fails (fail-open:
// the session goes on, the chunk passes unprocessed) and the memory is not
// kept.
func TestEmissionBudget(t *testing.T) {
	r := open(t, Config{Embedded: embedded(counter1)})
	b := attach(t, r, "counter", "")
	got, evs := send(t, b, "flood")
	if len(evs) == 0 || !strings.Contains(evs[0].Error, "emitted more than") {
		t.Fatalf("flood: %d bytes to the user, events %+v", len(got), evs)
	}
	if got != "flood" {
		t.Fatalf("the chunk did not pass through unprocessed: %d bytes", len(got))
	}
	if got, _ := send(t, b, "after"); !strings.HasSuffix(got, "] after") {
		t.Fatalf("after the flood: %q", got)
	}
}

// An outbound chunk larger than the plugin's input buffer is cut, but
// never between CR and LF (a protocol encodes the pair differently from a
// bare CR).
func TestOutboundNeverSplitsCRLF(t *testing.T) {
	r := open(t, Config{Embedded: embedded(counter1)})
	b := attach(t, r, "counter", "")
	for _, n := range []int{65533, 65534, 65535, 65536, 131070, 131071} {
		line := append(bytes.Repeat([]byte("A"), n), '\r', '\n')
		a, ems, err := data(b, abi.Outbound, line)
		if err != nil {
			t.Fatal(err)
		}
		if a == abi.Continue {
			continue // it fit in one call
		}
		var whole []byte
		for _, e := range ems {
			if e.Stream != abi.ToPeer {
				continue
			}
			if bytes.HasSuffix(e.Data, []byte("\r")) {
				t.Errorf("length %d: a piece ends in CR", n)
			}
			whole = append(whole, e.Data...)
		}
		if !bytes.Equal(whole, line) {
			t.Errorf("length %d: pieces do not add up (%d bytes)", n, len(whole))
		}
	}
}

// Only regular files up to the size cap are read from the plugin
// directory, and a file that would block or never end is refused without
// blocking.
func TestPluginFilesAreCheckedBeforeTheyAreRead(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.wasm")); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.wasm")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(3 << 30) // sparse
	f.Close()
	writeAtomic(t, dir, "upper.wasm", built(upper1))
	done := make(chan *Registry, 1)
	go func() { done <- open(t, Config{Dir: dir, MaxFileMiB: 8}) }()
	var r *Registry
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Open blocked on the plugin directory")
	}
	if _, ok := findInfo(r, "upper", "1.0.0"); !ok {
		t.Fatalf("the good plugin was not loaded: %+v", r.List())
	}
	for _, name := range []string{"fifo.wasm", "zero.wasm", "big.wasm"} {
		err := r.Reload(filepath.Join(dir, name))
		if err == nil {
			t.Errorf("%s accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), "not a regular file") && !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
