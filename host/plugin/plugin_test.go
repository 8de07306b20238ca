package plugin

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// 1. Attach + Data + Control round trip; List.
func TestRoundTrip(t *testing.T) {
	r := open(t, Config{Embedded: embedded(upper1, counter1)})

	c := attach(t, r, "counter", `{}`)
	if name, ver := c.Plugin(); name != "counter" || ver != "1.0.0" {
		t.Errorf("Plugin() = %s %s", name, ver)
	}
	a, ems, err := data(c, abi.Inbound, []byte("hello"))
	if err != nil || a != abi.Consumed {
		t.Fatalf("Data: action %d, err %v", a, err)
	}
	if got := collect(ems, abi.ToUser); got != "[1.0.0 #1] hello" {
		t.Errorf("to_user = %q", got)
	}
	for _, e := range ems {
		if e.Stream == abi.State {
			t.Errorf("a state emission was passed up: %q", e.Data)
		}
	}
	// Outbound passes unchanged, without emissions or copies.
	a, ems, err = data(c, abi.Outbound, []byte("ls\r\n"))
	if err != nil || a != abi.Continue || ems != nil {
		t.Errorf("outbound: action %d, emissions %v, err %v", a, ems, err)
	}
	a, ems, err = data(c, abi.Inbound, []byte("pass"))
	if err != nil || a != abi.Continue || ems != nil {
		t.Errorf("pass: action %d, emissions %v, err %v", a, ems, err)
	}
	ems, err = control(c, []byte(`{"op":"get"}`))
	if err != nil {
		t.Fatalf("Control: %v", err)
	}
	var reply struct {
		Count   int
		Version string
	}
	if err := json.Unmarshal([]byte(collect(ems, abi.Reply)), &reply); err != nil || reply.Count != 1 || reply.Version != "1.0.0" {
		t.Errorf("reply %q (%v)", collect(ems, abi.Reply), err)
	}

	// An error status is returned, and does not poison the instance.
	_, ems, err = data(c, abi.Inbound, []byte("fail"))
	var se *wasmhost.StatusError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "told to fail") {
		t.Errorf("fail: err = %v", err)
	}
	if len(failEvents(t, ems)) != 0 {
		t.Error("a status error produced plugin_failed")
	}
	if got, evs := send(t, c, "again"); got != "[1.0.0 #2] again" || len(evs) != 0 {
		t.Errorf("after the status error: %q %v", got, evs)
	}
	if _, err := control(c, []byte(`{"op":"nope"}`)); err == nil {
		t.Error("unknown control op: no error")
	}

	u := attach(t, r, "upper", "")
	a, ems, err = data(u, abi.Inbound, []byte("hi there!\n"))
	if err != nil || a != abi.Consumed || collect(ems, abi.ToUser) != "HI THERE!\n" || !strings.Contains(collect(ems, abi.Event), `"shout"`) {
		t.Errorf("upper: %d %q %q %v", a, collect(ems, abi.ToUser), collect(ems, abi.Event), err)
	}

	// Pool: a second session gets its own instance, a third shares.
	c2 := attach(t, r, "counter", "")
	c3 := attach(t, r, "counter", "")
	for _, b := range []*Binding{c2, c3} {
		if got, _ := send(t, b, "x"); got != "[1.0.0 #1] x" {
			t.Errorf("new session: %q", got)
		}
	}

	list := r.List()
	if len(list) != 2 {
		t.Fatalf("List = %+v", list)
	}
	want := []Info{
		{Name: "counter", Version: "1.0.0", Kind: "dialect", SHA256: sha(built(counter1)), Source: "embedded", Current: true, Trusted: true, Sessions: 3, Instances: 2},
		{Name: "upper", Version: "1.0.0", Kind: "dialect", SHA256: sha(built(upper1)), Source: "embedded", Current: true, Trusted: true, Sessions: 1, Instances: 1},
	}
	for i, w := range want {
		got := list[i]
		got.Description = ""
		if got != w {
			t.Errorf("List[%d] = %+v\nwant %+v", i, got, w)
		}
	}
	if list[0].Description == "" {
		t.Error("no description")
	}

	// Unknown plugin: the error names it and lists what exists.
	_, err = r.Attach("nope", abi.KindTelnet, nil)
	if !errors.Is(err, ErrUnknownPlugin) || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "counter, upper") {
		t.Errorf("Attach(nope): %v", err)
	}
	// Options the plugin refuses.
	if _, err := r.Attach("counter", abi.KindTelnet, []byte(`{"bad":true}`)); err == nil || !strings.Contains(err.Error(), "told to refuse") {
		t.Errorf("Attach with bad options: %v", err)
	}

	c3.Close()
	c3.Close() // idempotent
	if _, _, err := data(c3, abi.Inbound, []byte("x")); !errors.Is(err, ErrBindingClosed) {
		t.Errorf("Data after Close: %v", err)
	}
	if in, _ := findInfo(r, "counter", "1.0.0"); in.Sessions != 2 {
		t.Errorf("sessions after a close = %d", in.Sessions)
	}

	r.Close()
	if _, _, err := data(c, abi.Inbound, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Data after registry Close: %v", err)
	}
	if _, err := r.Attach("counter", abi.KindTelnet, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Attach after registry Close: %v", err)
	}
	c.Close()
}

// Emissions stay valid until the next call on the same binding, even when
// another session uses the same instance in between.
func TestEmissionsOwnedByBinding(t *testing.T) {
	r := open(t, Config{Embedded: embedded(counter1), PoolSize: 1})
	a := attach(t, r, "counter", "")
	b := attach(t, r, "counter", "")
	_, emsA, err := data(a, abi.Inbound, []byte("from a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := data(b, abi.Inbound, []byte("from b, longer, to overwrite the instance's arena")); err != nil {
		t.Fatal(err)
	}
	if got := collect(emsA, abi.ToUser); got != "[1.0.0 #1] from a" {
		t.Errorf("a's emissions changed under it: %q", got)
	}
}

// 2. A file in Dir overrides the embedded plugin of the same name, and adds
// new names; removing it brings the embedded one back.
func TestDirOverridesEmbedded(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "upper.wasm")
	os.WriteFile(up, built(upper2), 0o644)
	os.WriteFile(filepath.Join(dir, "my-counter.wasm"), built(counter1), 0o644)
	os.WriteFile(filepath.Join(dir, "junk.wasm"), []byte("not wasm"), 0o644)
	os.WriteFile(filepath.Join(dir, "README.txt"), []byte("ignored"), 0o644)

	// Replacing the embedded upper needs its pin; the new name counter
	// does not.
	r := open(t, Config{Embedded: embedded(upper1), Dir: dir, Pins: pins(built(upper2))})
	list := r.List()
	if len(list) != 2 || list[0].Name != "counter" || list[1].Name != "upper" {
		t.Fatalf("List = %+v", list)
	}
	if u := list[1]; u.Version != "2.0.0" || u.Source != "dir:"+up || !u.Current || u.SHA256 != sha(built(upper2)) {
		t.Errorf("upper = %+v", u)
	}
	if c := list[0]; c.Version != "1.0.0" || c.Source != "dir:"+filepath.Join(dir, "my-counter.wasm") {
		t.Errorf("counter = %+v", c)
	}
	b := attach(t, r, "upper", "")
	if _, v := b.Plugin(); v != "2.0.0" {
		t.Errorf("attached to %s", v)
	}

	ch, stop := r.Subscribe()
	defer stop()
	os.Remove(up)
	waitChange(t, ch, "embedded upper back", isChange(Published, "upper", "1.0.0"))
	if in, _ := findInfo(r, "upper", "1.0.0"); !in.Current || in.Source != "embedded" {
		t.Errorf("after removal: %+v", in)
	}
	b2 := attach(t, r, "upper", "")
	if _, v := b2.Plugin(); v != "1.0.0" {
		t.Errorf("new session on %s", v)
	}
	// The live session keeps working (on 2.0.0, draining, or migrated if
	// upper carries state).
	if got, _ := send(t, b, "x"); got != "X" {
		t.Errorf("old session: %q", got)
	}
}

// 3. Hot reload under a live session: the next chunk is served by the new
// version with the state carried over; the old version is closed.
func TestHotReloadMigratesState(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "counter.wasm", built(counter1))
	r := open(t, Config{Dir: dir})
	ch, stop := r.Subscribe()
	defer stop()

	b := attach(t, r, "counter", "")
	send(t, b, "a")
	if got, _ := send(t, b, "b"); got != "[1.0.0 #2] b" {
		t.Fatalf("before reload: %q", got)
	}

	writeAtomic(t, dir, "counter.wasm", built(counter2))
	waitChange(t, ch, "counter 2.0.0 published", isChange(Published, "counter", "2.0.0"))
	if in, _ := findInfo(r, "counter", "1.0.0"); in.Current || in.Sessions != 1 {
		t.Errorf("old version before the next chunk: %+v", in)
	}

	got, evs := send(t, b, "c")
	if got != "[2.0.0 #3] c" || len(evs) != 0 {
		t.Errorf("after reload: %q %v", got, evs)
	}
	if _, v := b.Plugin(); v != "2.0.0" {
		t.Errorf("Plugin() version = %s", v)
	}
	waitChange(t, ch, "counter 1.0.0 closed", isChange(Closed, "counter", "1.0.0"))
	list := r.List()
	if len(list) != 1 || list[0].Version != "2.0.0" || list[0].Sessions != 1 || list[0].Instances != 1 {
		t.Errorf("List = %+v", list)
	}

	// The same bytes again change nothing.
	writeAtomic(t, dir, "counter.wasm", built(counter2))
	if err := r.Reload(filepath.Join(dir, "counter.wasm")); err != nil {
		t.Errorf("Reload of the same bytes: %v", err)
	}
	// The watcher sees it too; a change to another file afterwards marks
	// the point by which it would have reported.
	writeAtomic(t, dir, "zz-upper.wasm", built(upper1))
	waitChange(t, ch, "the marker file", func(c Change) bool {
		if c.Name == "counter" {
			t.Errorf("unexpected change for the same bytes: %v", c)
		}
		return isChange(Published, "upper", "1.0.0")(c)
	})
	if got, _ := send(t, b, "d"); got != "[2.0.0 #4] d" {
		t.Errorf("after same-bytes reload: %q", got)
	}
}

// 4. Broken files never replace a working version.
func TestBrokenFilesRejected(t *testing.T) {
	dir := t.TempDir()
	good := writeAtomic(t, dir, "counter.wasm", built(counter1))
	r := open(t, Config{Dir: dir})
	ch, stop := r.Subscribe()
	defer stop()
	b := attach(t, r, "counter", "")
	n := 0
	check := func(when string) {
		t.Helper()
		n++
		want := "[1.0.0 #" + string(rune('0'+n)) + "] x"
		if got, evs := send(t, b, "x"); got != want || len(evs) != 0 {
			t.Errorf("%s: session got %q %v, want %q", when, got, evs, want)
		}
		list := r.List()
		if len(list) != 1 || list[0].Version != "1.0.0" || !list[0].Current {
			t.Errorf("%s: List = %+v", when, list)
		}
	}
	check("start")

	random := make([]byte, 4096)
	rand.Read(random)
	v2 := built(counter2)
	cases := []struct {
		name, file string
		data       []byte
		why        string
	}{
		{"random bytes over the good file", "counter.wasm", random, "not a WebAssembly module"},
		{"truncated copy over the good file", "counter.wasm", v2[:len(v2)/2], "truncated"},
		{"wasm without a manifest", "nomanifest.wasm", tinyPlugin("", tinyExports(0)), "not a termhost plugin"},
		{"manifest, missing exports", "noexports.wasm", tinyPlugin(tinyManifest("counter", "9.0.0"), tinyExports(0)[:5]), "missing export"},
		{"bad manifest", "badmanifest.wasm", tinyPlugin(`{"name":"counter","version":"9","kind":"toaster","abi":1}`, tinyExports(0)), "kind"},
		{"canary fails to open", "badopen.wasm", tinyPlugin(tinyManifest("counter", "9.0.0"), tinyExports(-1)), "canary"},
	}
	other := t.TempDir()
	for _, c := range cases {
		p := writeAtomic(t, dir, c.file, c.data)
		ev := waitChange(t, ch, c.name+" rejected", rejectedFile(p))
		if !strings.Contains(ev.Err.Error(), c.why) {
			t.Errorf("%s: rejected because %v; want %q", c.name, ev.Err, c.why)
		}
		check(c.name)
		// Reload says why, too.
		q := filepath.Join(other, c.file)
		os.WriteFile(q, c.data, 0o644)
		if err := r.Reload(q); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: Reload = %v", c.name, err)
		}
	}
	// A half-written file (written in place, no rename) that is then
	// completed ends up loaded once it is whole.
	f, _ := os.Create(good)
	f.Write(v2[:1000])
	time.Sleep(20 * time.Millisecond)
	f.Write(v2[1000:])
	f.Close()
	waitChange(t, ch, "completed file published", isChange(Published, "counter", "2.0.0"))
	if got, _ := send(t, b, "y"); got != "[2.0.0 #8] y" {
		t.Errorf("after the completed file: %q", got)
	}
}

// 5. An instance that traps, hangs or runs out of memory is replaced; the
// session carries on from its checkpoint; sessions on other instances are
// undisturbed.
func TestFailover(t *testing.T) {
	cases := []struct {
		name, chunk, why string
		cfg              Config
	}{
		{"trap", "once:panic", "told to panic", Config{}},
		{"deadline", "once:loop", "deadline", Config{CallTimeout: 300 * time.Millisecond}},
		// The deadline is far away here, so only the memory cap can stop
		// the call, however slowly a loaded machine allocates.
		{"memory cap", "once:oom", "out of memory", Config{MemoryLimitMiB: 32, CallTimeout: time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Embedded = embedded(counter1)
			r := open(t, cfg)
			a := attach(t, r, "counter", "")  // instance 1
			b := attach(t, r, "counter", "")  // instance 2
			cc := attach(t, r, "counter", "") // instance 1 again (least loaded, first)
			send(t, a, "a1")
			send(t, a, "a2")
			send(t, b, "b1")
			send(t, cc, "c1")

			got, evs := send(t, a, c.chunk)
			if got != "[1.0.0 #3] "+c.chunk {
				t.Errorf("a after the failure: %q", got)
			}
			if len(evs) != 1 {
				t.Fatalf("events = %+v", evs)
			}
			ev := evs[0]
			if ev.Plugin != "counter" || ev.Version != "1.0.0" || !strings.Contains(ev.Outcome, "restored on a fresh instance from checkpoint") || !strings.Contains(ev.Error, c.why) {
				t.Errorf("event = %+v", ev)
			}
			t.Logf("event: %+v", ev)

			// b was on another instance: nothing happened to it.
			if got, evs := send(t, b, "b2"); got != "[1.0.0 #2] b2" || len(evs) != 0 {
				t.Errorf("b: %q %v", got, evs)
			}
			// cc shared the poisoned instance: it moves on its next call.
			got, evs = send(t, cc, "c2")
			if got != "[1.0.0 #2] c2" || len(evs) != 1 || !strings.Contains(evs[0].Outcome, "restored on another instance from checkpoint") {
				t.Errorf("cc: %q %+v", got, evs)
			}
			if in, _ := findInfo(r, "counter", "1.0.0"); in.Instances != 2 || in.Sessions != 3 {
				t.Errorf("info = %+v", in)
			}
			// Everyone carries on normally.
			for i, s := range []*Binding{a, b, cc} {
				if _, evs := send(t, s, "more"); len(evs) != 0 {
					t.Errorf("session %d: %+v", i, evs)
				}
			}
		})
	}
}

// A session whose checkpoints are off is reopened without state.
func TestFailoverWithoutCheckpoint(t *testing.T) {
	r := open(t, Config{Embedded: embedded(counter1)})
	a := attach(t, r, "counter", `{"no_checkpoint":true}`)
	send(t, a, "a1")
	if a.Resets() != 0 {
		t.Fatalf("resets before any failure: %d", a.Resets())
	}
	got, evs := send(t, a, "once:panic")
	if got != "[1.0.0 #1] once:panic" || len(evs) != 1 || !strings.Contains(evs[0].Outcome, "reopened without state") {
		t.Errorf("%q %+v", got, evs)
	}
	// A screen uses this to know it must be rebuilt from the buffer.
	if a.Resets() != 1 {
		t.Errorf("resets after a fail-over: %d, want 1", a.Resets())
	}
}

// 6. A poison pill passes through unprocessed after one retry; repeated
// traps make the version back off (Data fails open without blocking), and
// it recovers afterwards.
func TestPoisonPillAndBackoff(t *testing.T) {
	clock := newFakeClock()
	r := open(t, Config{Embedded: embedded(counter1), BackoffMin: 400 * time.Millisecond, Now: clock.Now})
	a := attach(t, r, "counter", "")
	send(t, a, "a1")

	// Two traps (the chunk, then its retry on a fresh instance).
	got, evs := send(t, a, "panic")
	if got != "panic" || len(evs) != 1 || !strings.Contains(evs[0].Outcome, "passed through unprocessed") {
		t.Fatalf("pill 1: %q %+v", got, evs)
	}
	// The third trap starts the back-off.
	got, evs = send(t, a, "panic")
	if got != "panic" || len(evs) != 1 || !strings.Contains(evs[0].Outcome, "passed through unprocessed") {
		t.Fatalf("pill 2: %q %+v", got, evs)
	}

	// Backing off: chunks pass through at once, with one event. The clock
	// stands still, so the back-off lasts through these checks however
	// slow the machine.
	start := time.Now()
	got, evs = send(t, a, "b1")
	if got != "b1" || len(evs) != 1 || !strings.Contains(evs[0].Outcome, "crash-looping") {
		t.Errorf("backing off: %q %+v", got, evs)
	}
	got, evs = send(t, a, "b2")
	if got != "b2" || len(evs) != 0 {
		t.Errorf("backing off, second chunk: %q %+v", got, evs)
	}
	// A session attached meanwhile starts detached and fails open too.
	n := attach(t, r, "counter", "")
	got, evs = send(t, n, "n1")
	if got != "n1" || len(evs) != 1 {
		t.Errorf("new session while backing off: %q %+v", got, evs)
	}
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Errorf("fail-open calls took %v", d)
	}
	// Still backing off just before the end.
	clock.Advance(399 * time.Millisecond)
	if got, _ := send(t, a, "b3"); got != "b3" {
		t.Errorf("a millisecond before the back-off ends: %q, want it passed through", got)
	}

	// Recovery: after the back-off a fresh instance serves again, from the
	// last checkpoint (count 1).
	clock.Advance(time.Millisecond)
	got, evs = send(t, a, "c")
	if got != "[1.0.0 #2] c" || len(evs) != 1 || !strings.Contains(evs[0].Outcome, "restored on a fresh instance") {
		t.Errorf("recovered: %q %+v", got, evs)
	}
	if got, evs := send(t, n, "n2"); got != "[1.0.0 #1] n2" || len(evs) != 1 || !strings.Contains(evs[0].Outcome, "reopened without state") {
		t.Errorf("new session recovered: %q %+v", got, evs)
	}
}

// 7. A plugin without state under reload: its session stays on the old
// version until closed; new sessions get the new one; the old version closes
// after its last session. (The counter's "stateless" sessions have no state
// export, like any plugin that does not implement it.)
func TestStatelessReloadDrains(t *testing.T) {
	dir := t.TempDir()
	r := open(t, Config{Embedded: embedded(counter1), Dir: dir, Pins: pins(built(counter2))})
	ch, stop := r.Subscribe()
	defer stop()
	old := attach(t, r, "counter", `{"stateless":true}`)
	if got, _ := send(t, old, "a"); got != "[1.0.0 #1] a" {
		t.Fatalf("%q", got)
	}
	writeAtomic(t, dir, "counter.wasm", built(counter2))
	waitChange(t, ch, "counter 2.0.0 published", isChange(Published, "counter", "2.0.0"))

	for i := 2; i <= 4; i++ {
		if got, evs := send(t, old, "b"); got != fmt.Sprintf("[1.0.0 #%d] b", i) || len(evs) != 0 {
			t.Errorf("old session: %q %v", got, evs)
		}
	}
	if _, v := old.Plugin(); v != "1.0.0" {
		t.Errorf("old session moved to %s", v)
	}
	nb := attach(t, r, "counter", `{"stateless":true}`)
	if _, v := nb.Plugin(); v != "2.0.0" {
		t.Errorf("new session on %s", v)
	}
	if in, ok := findInfo(r, "counter", "1.0.0"); !ok || in.Current || in.Sessions != 1 || in.Instances != 1 {
		t.Errorf("old version: %+v", in)
	}
	if in, _ := findInfo(r, "counter", "2.0.0"); !in.Current || in.Sessions != 1 {
		t.Errorf("new version: %+v", in)
	}
	old.Close()
	waitChange(t, ch, "counter 1.0.0 closed", isChange(Closed, "counter", "1.0.0"))
	if _, ok := findInfo(r, "counter", "1.0.0"); ok {
		t.Error("old version still listed")
	}
	if got, _ := send(t, nb, "c"); got != "[2.0.0 #1] c" {
		t.Errorf("new session: %q", got)
	}
}

// 8. The compilation cache is on disk; it is pruned.
func TestCompilationCache(t *testing.T) {
	cache := t.TempDir()
	tiny := fstest.MapFS{"tiny.wasm": {Data: tinyPlugin(tinyManifest("tiny", "1.0.0"), tinyExports(0))}}
	r := open(t, Config{Embedded: tiny, CacheDir: cache})
	b := attach(t, r, "tiny", "")
	if a, ems, err := data(b, abi.Inbound, []byte("x")); a != abi.Continue || ems != nil || err != nil {
		t.Errorf("tiny: %d %v %v", a, ems, err)
	}
	r.Close()

	sub := filepath.Join(cache, wazeroCacheSubdir())
	ents, err := os.ReadDir(sub)
	if err != nil || len(ents) == 0 {
		t.Fatalf("cache %s: %v entries, err %v", sub, len(ents), err)
	}
	entry := filepath.Join(sub, ents[0].Name())

	// Stale entries: another wazero version, and old files beyond the cap.
	stale := filepath.Join(cache, "wazero-v0.0.1-old-arch")
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, "x"), []byte("x"), 0o644)
	oldest, older := filepath.Join(sub, "oldest"), filepath.Join(sub, "older")
	os.WriteFile(oldest, make([]byte, 900<<10), 0o644)
	os.WriteFile(older, make([]byte, 200<<10), 0o644)
	os.Chtimes(oldest, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))
	os.Chtimes(older, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))

	r2 := open(t, Config{Embedded: tiny, CacheDir: cache, CacheLimitMiB: 1})
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale wazero cache not removed: %v", err)
	}
	if _, err := os.Stat(oldest); !os.IsNotExist(err) {
		t.Errorf("oldest entry beyond the cap not removed: %v", err)
	}
	for _, keep := range []string{older, entry} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
	attach(t, r2, "tiny", "")

	// "off": in memory only.
	r3 := open(t, Config{Embedded: tiny, CacheDir: "off"})
	attach(t, r3, "tiny", "")
}

// Ticks: on_tick runs on the registry's goroutine; its emissions go to the
// OnAsync callback, or wait for one.
func TestTicks(t *testing.T) {
	r := open(t, Config{Embedded: embedded(counter1), TickInterval: 20 * time.Millisecond})
	b := attach(t, r, "counter", `{"tick_ms":30}`)
	got := make(chan abi.Emission, 100)
	b.OnAsync(func(ems []abi.Emission) {
		for _, e := range ems {
			got <- e
		}
	})
	seen := map[abi.Stream]bool{}
	timeout := time.After(10 * time.Second)
	for !seen[abi.ToPeer] || !seen[abi.Event] {
		select {
		case e := <-got:
			seen[e.Stream] = true
			if e.Stream == abi.ToPeer && string(e.Data) != "tick" {
				t.Errorf("to_peer %q", e.Data)
			}
		case <-timeout:
			t.Fatal("no ticks")
		}
	}

	// Without a callback, tick output waits (bounded) and is delivered
	// the moment one is set.
	q := attach(t, r, "counter", `{"tick_ms":30}`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		q.amu.Lock()
		n := len(q.asyncQ)
		q.amu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no tick output queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var mu sync.Mutex
	var queued []abi.Emission
	q.OnAsync(func(ems []abi.Emission) { mu.Lock(); queued = append(queued, ems...); mu.Unlock() })
	q.OnAsync(nil)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(collect(queued, abi.ToPeer), "tick") {
		t.Errorf("queued ticks not delivered when the callback was set: %q", collect(queued, abi.ToPeer))
	}
}

// Many sessions at once, with a reload in the middle: every session's count
// stays continuous, and each moves to the new version. Mostly for the race
// detector.
func TestConcurrentSessionsAndReload(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "counter.wasm", built(counter1))
	r := open(t, Config{Dir: dir, PoolSize: 3})
	ch, stop := r.Subscribe()
	defer stop()
	const sessions = 6
	var wg sync.WaitGroup
	errs := make(chan string, sessions)
	published := make(chan struct{})
	var started sync.WaitGroup
	started.Add(sessions)
	for i := range sessions {
		b := attach(t, r, "counter", "")
		wg.Go(func() {
			sawNew, after := false, 0
			for n := 1; ; n++ {
				select {
				case <-published:
					after++
				default:
				}
				a, ems, err := data(b, abi.Inbound, []byte("x"))
				if err != nil || a != abi.Consumed {
					errs <- fmt.Sprintf("session %d: %d %v", i, a, err)
					return
				}
				got := collect(ems, abi.ToUser)
				if !strings.HasSuffix(got, fmt.Sprintf("#%d] x", n)) {
					errs <- fmt.Sprintf("session %d, chunk %d: %q", i, n, got)
					return
				}
				isNew := strings.HasPrefix(got, "[2.0.0")
				if (sawNew && !isNew) || (after > 0 && !isNew) {
					errs <- fmt.Sprintf("session %d, chunk %d: %q after the new version", i, n, got)
					return
				}
				sawNew = isNew
				if n == 1 {
					started.Done()
				}
				if after >= 5 {
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	started.Wait() // every session is talking: reload under them
	writeAtomic(t, dir, "counter.wasm", built(counter2))
	waitChange(t, ch, "reload", isChange(Published, "counter", "2.0.0"))
	close(published)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if list := r.List(); len(list) != 1 || list[0].Sessions != sessions || list[0].Version != "2.0.0" {
		t.Errorf("List = %+v", list)
	}
}

// counting is a Sink that only counts bytes: what the session's walk does
// with them (stage them in the ring) is not the binding path.
type counting struct{ n int }

func (c *counting) Emit(_ abi.Stream, p []byte) { c.n += len(p) }
func (c *counting) Discard()                    {}

// A chunk the plugin lets pass (Continue): no emission, no copy out.
func BenchmarkBindingDataPlain(b *testing.B) {
	r := open(b, Config{Embedded: embedded(upper1)})
	bind := attach(b, r, "upper", "")
	chunk := []byte(strings.Repeat("plain text from the user ", 40))
	var sink counting
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		a, err := bind.Data(abi.Outbound, chunk, &sink)
		if err != nil || a != abi.Continue || sink.n != 0 {
			b.Fatal(a, sink.n, err)
		}
	}
}

// A chunk the plugin rewrites: its output streams to the sink, one copy
// out of the plugin's memory made by the sink.
func BenchmarkBindingDataRewrite(b *testing.B) {
	r := open(b, Config{Embedded: embedded(upper1)})
	bind := attach(b, r, "upper", "")
	chunk := []byte(strings.Repeat("plain text from the peer ", 40))
	var sink counting
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bind.Data(abi.Inbound, chunk, &sink); err != nil {
			b.Fatal(err)
		}
	}
}

// fakeClock is a Config.Now that moves only when the test says.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
