package plugin

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// pins pins each plugin file (its manifest name and sha256).
func pins(files ...[]byte) map[string][]string {
	m := map[string][]string{}
	for _, f := range files {
		man, err := wasmhost.ReadManifest(f)
		if err != nil {
			panic(err)
		}
		m[man.Name] = append(m[man.Name], sha(f))
	}
	return m
}

// hostCall makes host call req from the session and returns the reply.
func hostCall(t *testing.T, b *Binding, req string) string {
	t.Helper()
	ems, err := control(b, []byte(`{"op":"call","req":`+req+`}`))
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	return collect(ems, abi.Reply)
}

// A file that carries a first-party name loads only with a pin that
// matches its sha256: without one, or with another, it is rejected
// (saying its sha256 and the flag that allows it) and the embedded
// version stays; with it, it is published and trusted. At Open and on
// reload alike.
func TestFirstPartyNameNeedsPin(t *testing.T) {
	wrong := map[string][]string{"counter": {strings.Repeat("0", 64)}}
	for _, c := range []struct {
		what string
		pins map[string][]string
		ok   bool
	}{
		{"no pin", nil, false},
		{"another file's pin", wrong, false},
		{"its pin", pins(built(counter2)), true},
		{"its pin among others", map[string][]string{"counter": {strings.Repeat("0", 64), sha(built(counter2))}}, true},
	} {
		t.Run(c.what, func(t *testing.T) {
			check := func(t *testing.T, r *Registry, err error) {
				t.Helper()
				in, _ := findInfo(r, "counter", "2.0.0")
				if c.ok {
					if err != nil || !in.Current || !in.Trusted || !r.Trusted("counter") {
						t.Fatalf("pinned drop-in: err %v, info %+v", err, in)
					}
					return
				}
				var ue *UnpinnedError
				if !errors.As(err, &ue) || ue.SHA256 != sha(built(counter2)) || !ue.FirstParty ||
					!strings.Contains(err.Error(), "--plugin-pin counter="+sha(built(counter2))) {
					t.Fatalf("unpinned drop-in: %v; want an *UnpinnedError naming its sha256 and the flag", err)
				}
				if cur, _ := findInfo(r, "counter", "1.0.0"); !cur.Current || cur.Source != "embedded" || !cur.Trusted {
					t.Fatalf("the embedded counter is not current and trusted: %+v", cur)
				}
				if in.Current {
					t.Fatalf("the unpinned drop-in is current: %+v", in)
				}
			}
			// At Open.
			dir := t.TempDir()
			path := writeAtomic(t, dir, "counter.wasm", built(counter2))
			r := open(t, Config{Embedded: embedded(counter1), Dir: dir, Pins: c.pins})
			var err error
			if !c.ok {
				err = r.Reload(path) // the rejection again, to see its error
			}
			check(t, r, err)
			// Dropped in later.
			dir = t.TempDir()
			r = open(t, Config{Embedded: embedded(counter1), Dir: dir, Pins: c.pins})
			b := attach(t, r, "counter", "")
			path = writeAtomic(t, dir, "counter.wasm", built(counter2))
			check(t, r, r.Reload(path))
			if !b.Trusted() {
				t.Errorf("a session on the embedded counter is not trusted")
			}
		})
	}
}

// A pinned new name needs its pin as a first-party name does; an
// unpinned new name loads, untrusted: its host calls are refused before
// the session's handler sees them, and Trusted says false.
func TestUntrustedPluginGetsNoHostCalls(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "counter.wasm", built(counter1))
	r := open(t, Config{Embedded: embedded(upper1), Dir: dir})
	if r.Trusted("counter") || !r.Trusted("upper") {
		t.Fatalf("Trusted: counter %v (unpinned drop-in, want false), upper %v (embedded, want true)", r.Trusted("counter"), r.Trusted("upper"))
	}
	if in, _ := findInfo(r, "counter", "1.0.0"); in.Trusted || !in.Current {
		t.Errorf("counter info: %+v", in)
	}
	b := attach(t, r, "counter", "")
	if b.Trusted() {
		t.Error("a session on an unpinned drop-in says it is trusted")
	}
	called := false
	b.SetHostCall(func([]byte) ([]byte, error) { called = true; return []byte("the password"), nil })
	if got := hostCall(t, b, `{"op":"password"}`); strings.Contains(got, "the password") || called ||
		!strings.Contains(got, "--plugin-pin") || !strings.Contains(got, "dir:") {
		t.Errorf("an unpinned drop-in's host call: %s (handler called: %v); want it refused, naming the version and the flag", got, called)
	}

	// Pinned, the same file is trusted and its host calls answered.
	r = open(t, Config{Embedded: embedded(upper1), Dir: dir, Pins: pins(built(counter1))})
	b = attach(t, r, "counter", "")
	b.SetHostCall(func([]byte) ([]byte, error) { return []byte("the password"), nil })
	if !b.Trusted() || !strings.Contains(hostCall(t, b, `{"op":"password"}`), "the password") {
		t.Errorf("a pinned drop-in: trusted %v; its host call was not answered", b.Trusted())
	}
	// A new build under the pinned name, without its pin: refused.
	path := writeAtomic(t, dir, "counter.wasm", built(counter2))
	var ue *UnpinnedError
	if err := r.Reload(path); !errors.As(err, &ue) || ue.FirstParty || ue.Pins != 1 {
		t.Errorf("an unpinned build of a pinned name: %v", err)
	}
}

// Plugin files and directories that group or others may write are
// refused, as credentials.json at 0644 is, with the chmod that fixes it.
func TestWritablePluginsRefused(t *testing.T) {
	dir := t.TempDir()
	path := writeAtomic(t, dir, "counter.wasm", built(counter1))
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	r := open(t, Config{Embedded: embedded(upper1), Dir: dir})
	if r.Has("counter") {
		t.Error("a group-writable counter.wasm was loaded at Open")
	}
	var we *WritableError
	if err := r.Reload(path); !errors.As(err, &we) || we.Dir || !strings.Contains(err.Error(), "chmod go-w "+path) {
		t.Errorf("Reload of a group-writable file: %v", err)
	}
	os.Chmod(path, 0o644)
	if err := r.Reload(path); err != nil || !r.Has("counter") {
		t.Fatalf("after chmod go-w: %v", err)
	}

	// The directory turns writable by others: nothing more is read from it.
	other := writeAtomic(t, dir, "upper.wasm", built(upper2))
	os.Chmod(dir, 0o777)
	if err := r.Reload(other); !errors.As(err, &we) || !we.Dir || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Errorf("Reload from a world-writable directory: %v", err)
	}
	if in, _ := findInfo(r, "upper", "2.0.0"); in.Current {
		t.Error("a file was loaded from a world-writable directory")
	}
	// Open refuses such a directory.
	_, err := Open(t.Context(), Config{Embedded: embedded(upper1), Dir: dir, CacheDir: testCache, Logger: testLogger(t)})
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Errorf("Open on a world-writable directory: %v", err)
	}
	os.Chmod(dir, 0o700)
}

func TestParsePin(t *testing.T) {
	sum := strings.Repeat("aB", 32)
	for _, c := range []struct {
		in, name, sha, err string
	}{
		{"ssh=" + sum, "ssh", strings.ToLower(sum), ""},
		{" dialect = " + sum + " ", "dialect", strings.ToLower(sum), ""},
		{"ssh", "", "", "NAME=SHA256"},
		{"=" + sum, "", "", "NAME=SHA256"},
		{"ssh=abc", "", "", "64 hex digits"},
		{"ssh=" + strings.Repeat("g", 64), "", "", "64 hex digits"},
	} {
		name, sha, err := ParsePin(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParsePin(%q): %v; want an error saying %s", c.in, err, c.err)
			}
			continue
		}
		if err != nil || name != c.name || sha != c.sha {
			t.Errorf("ParsePin(%q) = %q, %q, %v", c.in, name, sha, err)
		}
	}
}
