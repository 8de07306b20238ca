package plugin

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

// testCacheBase is where the tests keep compiled plugins: under
// TERMHOST_CACHE_DIR when it is set (make test sets it to a directory it
// removes afterwards), else in the user cache directory, so that repeated
// `go test` runs do not compile again.
func testCacheBase() (string, error) {
	if d := os.Getenv("TERMHOST_CACHE_DIR"); d != "" {
		return d, nil
	}
	return os.UserCacheDir()
}

// cacheFixture is a cache root with our wazero directory in it.
type cacheFixture struct {
	t         *testing.T
	root, dir string
}

func newCacheFixture(t *testing.T) *cacheFixture {
	f := &cacheFixture{t: t, root: t.TempDir(), dir: ""}
	f.dir = filepath.Join(f.root, "wazero-test")
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return f
}

// compiled stands in for wazero writing a compiled module.
func (f *cacheFixture) compiled(name string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(name), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func (f *cacheFixture) prune(inUse ...string) {
	pruneCacheDir(f.root, "wazero-test", inUse, 1<<30, func(string, ...any) {})
}

func (f *cacheFixture) has(names ...string) {
	f.t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(f.dir, n)); err != nil {
			f.t.Errorf("%s removed: %v", n, err)
		}
	}
}

func (f *cacheFixture) hasNot(names ...string) {
	f.t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(f.dir, n)); !os.IsNotExist(err) {
			f.t.Errorf("%s still there (%v)", n, err)
		}
	}
}

// editIndex rewrites the index of dir, as time passing or another process
// would.
func editIndex(t *testing.T, dir string, fn func(*cacheIndex)) {
	t.Helper()
	idx := readIndex(dir)
	fn(idx)
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, indexFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// age moves every time in dir's index d into the past.
func age(t *testing.T, dir string, d time.Duration) {
	editIndex(t, dir, func(idx *cacheIndex) {
		for v, u := range idx.Used {
			idx.Used[v] = u.Add(-d)
		}
		for _, h := range idx.Holders {
			h.Seen = h.Seen.Add(-d)
		}
	})
}

// deadPID is the ID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	path, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) to run")
	}
	cmd := exec.Command(path)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// A version's files go once nothing has used it for cacheGrace; the
// versions in use keep theirs, however old.
func TestPruneToVersionsInUse(t *testing.T) {
	f := newCacheFixture(t)
	f.compiled("a1") // v1, guarded
	f.prune("v1")
	f.compiled("a2") // v1, unguarded: compiled while v1 owns a file already
	f.prune("v1")
	f.compiled("b") // v2 replaces v1
	f.prune("v2")
	idx := readIndex(f.dir)
	for name, want := range map[string][]string{"a1": {"v1"}, "a2": {"v1"}, "b": {"v2"}} {
		if got := idx.Files[name]; !slices.Equal(got, want) {
			t.Errorf("%s attributed to %v, want %v", name, got, want)
		}
	}

	// Within the grace period v1's files stay: a restart of the old
	// version, or another test, would use them.
	f.prune("v2")
	f.has("a1", "a2", "b")

	age(t, f.dir, cacheGrace+time.Minute)
	f.prune("v2")
	f.hasNot("a1", "a2")
	f.has("b")
	if idx := readIndex(f.dir); len(idx.Files) != 1 || idx.Used["v1"] != (time.Time{}) {
		t.Errorf("index after pruning: %+v", idx)
	}
}

// Another process's versions are protected while it runs, not after.
func TestPruneKeepsLiveHoldersVersions(t *testing.T) {
	f := newCacheFixture(t)
	f.compiled("live")
	f.compiled("dead")
	f.compiled("mine")
	f.prune("v-mine")
	editIndex(t, f.dir, func(idx *cacheIndex) {
		old := time.Now().Add(-2 * cacheGrace)
		idx.Files["live"] = []string{"v-live"}
		idx.Files["dead"] = []string{"v-dead"}
		idx.Holders[strconv.Itoa(os.Getppid())] = &cacheHolder{Seen: old, Versions: []string{"v-live"}}
		idx.Holders[strconv.Itoa(deadPID(t))] = &cacheHolder{Seen: old, Versions: []string{"v-dead"}}
		idx.Used["v-live"], idx.Used["v-dead"] = old, old
	})
	f.prune("v-mine")
	f.has("live", "mine")
	f.hasNot("dead")
	if n := len(readIndex(f.dir).Holders); n != 2 {
		t.Errorf("%d holders left, want 2 (this process and the live one)", n)
	}
}

// Files nobody can be named for (a registry with no plugin) stay until a
// registry with versions attributes them.
func TestPruneLeavesUnattributedFiles(t *testing.T) {
	f := newCacheFixture(t)
	f.compiled("x")
	f.prune()
	age(t, f.dir, 2*cacheGrace)
	f.prune()
	f.has("x")
	f.prune("v")
	if got := readIndex(f.dir).Files["x"]; !slices.Equal(got, []string{"v"}) {
		t.Errorf("x attributed to %v", got)
	}
}

// Other wazero versions' directories go when nothing uses them; one a
// running termhost uses, or used lately, stays.
func TestPruneOtherWazeroVersions(t *testing.T) {
	f := newCacheFixture(t)
	mk := func(name string, idx *cacheIndex) string {
		d := filepath.Join(f.root, name)
		os.MkdirAll(d, 0o700)
		os.WriteFile(filepath.Join(d, "x"), []byte("x"), 0o600)
		if idx != nil {
			b, _ := json.Marshal(idx)
			os.WriteFile(filepath.Join(d, indexFile), b, 0o600)
		}
		return d
	}
	old := time.Now().Add(-2 * cacheGrace)
	noIndex := mk("wazero-v0.0.1-old-arch", nil)
	unused := mk("wazero-v0.0.2-old-arch", &cacheIndex{Used: map[string]time.Time{"v": old},
		Holders: map[string]*cacheHolder{strconv.Itoa(deadPID(t)): {Seen: old}}})
	recent := mk("wazero-v0.0.3-old-arch", &cacheIndex{Used: map[string]time.Time{"v": time.Now()}})
	running := mk("wazero-v0.0.4-old-arch", &cacheIndex{Used: map[string]time.Time{"v": old},
		Holders: map[string]*cacheHolder{strconv.Itoa(os.Getppid()): {Seen: old}}})
	notOurs := mk("other-tool", nil)
	f.prune("v")
	for _, d := range []string{noIndex, unused} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s not removed", d)
		}
	}
	for _, d := range []string{recent, running, notOurs} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed", d)
		}
	}
}

// Registries pruning the same directory at once (processes sharing a
// cache) leave an index that knows every file; a lock left by a crash does
// not stop them.
func TestPruneConcurrent(t *testing.T) {
	f := newCacheFixture(t)
	lock := filepath.Join(f.dir, lockFile)
	os.WriteFile(lock, nil, 0o600)
	stale := time.Now().Add(-time.Minute)
	os.Chtimes(lock, stale, stale)

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v := "v" + strconv.Itoa(i)
			f.compiled("file-" + v)
			f.prune(v)
		})
	}
	wg.Wait()
	f.prune("v0")
	idx := readIndex(f.dir)
	if len(idx.Files) != 8 {
		t.Errorf("index knows %d files, want 8: %v", len(idx.Files), idx.Files)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("lock left behind: %v", err)
	}
}

// Through a registry: a hot-reloaded plugin's old version loses its
// compiled file once it has been out of use for the grace period, and the
// embedded version keeps its own.
func TestRegistryPrunesRetiredVersions(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	v := func(version string) []byte { return tinyPlugin(tinyManifest("tiny", version), tinyExports(0)) }
	r := open(t, Config{
		Embedded: fstest.MapFS{"tiny.wasm": {Data: v("0.9.0")}},
		Dir:      dir, CacheDir: cache,
		Pins: pins(v("1.0.0"), v("2.0.0"), v("3.0.0"), v("4.0.0")),
	})
	sub := filepath.Join(cache, wazeroCacheSubdir())
	files := func() []string {
		var out []string
		for name := range readIndex(sub).Files {
			out = append(out, name)
		}
		slices.Sort(out)
		return out
	}
	embeddedFiles := files()
	if len(embeddedFiles) != 1 {
		t.Fatalf("after Open the index knows %v, want the embedded version's one file", embeddedFiles)
	}
	for i, version := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		if err := r.Reload(writeAtomic(t, dir, "tiny.wasm", v(version))); err != nil {
			t.Fatal(err)
		}
		if n := len(files()); n != 2+i {
			t.Fatalf("after loading %s the index knows %d files, want %d", version, n, 2+i)
		}
	}
	age(t, sub, cacheGrace+time.Minute)
	if err := r.Reload(writeAtomic(t, dir, "tiny.wasm", v("4.0.0"))); err != nil {
		t.Fatal(err)
	}
	got := files()
	if len(got) != 2 || !slices.Contains(got, embeddedFiles[0]) {
		t.Errorf("after an hour the index knows %v, want the embedded version's and 4.0.0's", got)
	}
	ents, _ := os.ReadDir(sub)
	if len(ents) != 3 { // two compiled modules and the index
		t.Errorf("cache directory holds %d entries, want 3", len(ents))
	}
}
