package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/tetratelabs/wazero"
)

// The on-disk compilation cache is wazero's: one subdirectory per wazero
// version and platform, one file per compiled module, named by a key wazero
// derives from the module's bytes and the compiler's settings. wazero never
// removes anything, so the registry prunes (see pruneCache), and to know
// which file belongs to which plugin version it keeps an index next to the
// files (see docs/RATIONALE.md, "Pruning the compilation cache").
const (
	indexFile = "termhost-index.json"
	lockFile  = "termhost-index.lock"

	// cacheGrace is how long a plugin version's compiled files stay after
	// the last registry using it said so (and an unused other wazero
	// version's directory stays): long enough for a restart, a test run,
	// or a client starting servers one after another not to compile again.
	cacheGrace = time.Hour
	// maxBinaries is how many executables' embedded sums the index keeps.
	maxBinaries = 16
	// holderTTL forgets a registry that has not pruned for this long even
	// if its process ID is alive (it may have been reused).
	holderTTL = 7 * 24 * time.Hour
)

// openCache sets up the compilation cache: on disk under CacheDir (wazero
// keeps one subdirectory per wazero version and platform), or in memory.
func (r *Registry) openCache() error {
	dir := r.cfg.CacheDir
	if dir == "off" {
		r.cache, r.ownCache = wazero.NewCompilationCache(), true
		return nil
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			r.log.Warn("no user cache directory; compiled plugins are cached in memory only", "error", err)
			r.cache, r.ownCache = wazero.NewCompilationCache(), true
			return nil
		}
		dir = filepath.Join(base, "termhost", "wazero")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		r.log.Warn("compilation cache unusable; compiled plugins are cached in memory only", "dir", dir, "error", err)
		r.cache, r.ownCache = wazero.NewCompilationCache(), true
		return nil
	}
	r.cache, r.ownCache, r.cacheDir = c, true, dir
	// Say that this process uses the directory before compiling into it,
	// so that a termhost of another wazero version does not remove it
	// meanwhile.
	updateIndex(filepath.Join(dir, wazeroCacheSubdir()), func(idx *cacheIndex, now time.Time) {
		idx.hold(now, nil)
	})
	return nil
}

// wazeroCacheSubdir is the subdirectory wazero uses for this build: named
// after wazero's version and the platform.
func wazeroCacheSubdir() string {
	return "wazero-" + wazeroVersion() + "-" + runtime.GOARCH + "-" + runtime.GOOS
}

// wazeroVersion mirrors wazero's internal/version.GetWazeroVersion: the
// version of the wazero dependency in the build info, else the main
// module's, else "dev" (test binaries get "dev").
func wazeroVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	missing := func(v string) bool { return v == "" || v == "(devel)" }
	var ver string
	for _, d := range info.Deps {
		if strings.Contains(d.Path, "github.com/tetratelabs/wazero") {
			ver = d.Version
		}
	}
	if missing(ver) {
		ver = info.Main.Version
	}
	if missing(ver) {
		return "dev"
	}
	return ver
}

// pruneCache keeps the cache to what is in use. It runs after plugins are
// compiled (at Open and after a reload) and removes:
//   - the compiled files of plugin versions that no registry has used for
//     cacheGrace (a version is in use while it is current, or embedded);
//   - directories of other wazero versions and platforms that nothing has
//     used for cacheGrace;
//   - beyond CacheLimitMiB, the oldest files (by modification time).
//
// Errors are ignored: the cache is only an optimisation.
func (r *Registry) pruneCache() {
	if r.cacheDir == "" {
		return
	}
	r.checkedMu.Lock()
	rec := indexRecords{checks: r.newChecks, exe: r.exeKey}
	r.newChecks = nil
	r.checkedMu.Unlock()
	if rec.exe != "" {
		rec.sums = r.embeddedSums()
	}
	pruneCacheDirChecked(r.cacheDir, wazeroCacheSubdir(), r.inUse(), rec, r.cfg.CacheLimitMiB<<20, r.log.Info)
}

// indexRecords is what a prune records in the index besides the files:
// versions that passed their canary, and the sums of the plugins embedded
// in executable exe.
type indexRecords struct {
	checks map[string]checkedVersion
	exe    string
	sums   map[string]string
}

// inUse lists the sha256 of the plugin versions this registry uses: the
// current ones, and the embedded ones (which a removed plugin file falls
// back to).
func (r *Registry) inUse() []string {
	var shas []string
	for _, in := range r.list() {
		if in.Current {
			shas = append(shas, in.SHA256)
		}
	}
	r.mu.Lock()
	for _, p := range r.plugins {
		if p.embedded != nil {
			shas = append(shas, p.embedded.sha)
		}
	}
	r.mu.Unlock()
	sort.Strings(shas)
	return slices.Compact(shas)
}

func pruneCacheDir(root, keep string, inUse []string, limit int64, logf func(string, ...any)) {
	pruneCacheDirChecked(root, keep, inUse, indexRecords{}, limit, logf)
}

// pruneCacheDirChecked is pruneCacheDir that also records rec; a
// version's record of a passed canary goes with the last compiled file
// attributed to it.
func pruneCacheDirChecked(root, keep string, inUse []string, rec indexRecords, limit int64, logf func(string, ...any)) {
	// Only delete what looks like a wazero cache when our own directory is
	// really there: a different naming would otherwise wipe the live cache.
	dir := filepath.Join(root, keep)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return
	}
	now := time.Now()
	if ents, err := os.ReadDir(root); err == nil {
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "wazero-") || e.Name() == keep {
				continue
			}
			other := filepath.Join(root, e.Name())
			if readIndex(other).used(now) {
				continue
			}
			if os.RemoveAll(other) == nil {
				logf("removed the plugin compilation cache of another wazero version", "dir", other)
			}
		}
	}

	var removed []string
	var total int64
	updateIndex(dir, func(idx *cacheIndex, now time.Time) {
		idx.hold(now, inUse)
		files := idx.scan(dir, now)
		idx.attribute(files, inUse)
		for _, name := range idx.stale(now) {
			if err := os.Remove(filepath.Join(dir, name)); err == nil || errors.Is(err, fs.ErrNotExist) {
				removed = append(removed, name)
				delete(idx.Files, name)
				delete(files, name)
			}
		}
		total = capSize(dir, files, limit, func(name string) {
			removed = append(removed, name)
			delete(idx.Files, name)
		})
		idx.forget(now)
		for k, c := range rec.checks {
			idx.Checked[k] = c
		}
		if rec.exe != "" && len(rec.sums) > 0 {
			idx.Binaries[rec.exe] = &binaryRecord{Seen: now, Sums: rec.sums}
		}
		owned := map[string]bool{}
		for _, vs := range idx.Files {
			for _, v := range vs {
				owned[v] = true
			}
		}
		for k := range idx.Checked {
			if sha, _, _ := strings.Cut(k, "/"); !owned[sha] {
				delete(idx.Checked, k)
			}
		}
	})
	if len(removed) > 0 {
		logf("pruned plugin compilation cache", "dir", dir, "removed", len(removed), "bytes", total)
	}
}

// cacheFile is a compiled module in the cache directory.
type cacheFile struct {
	size int64
	mod  time.Time
}

// capSize removes the oldest files until the rest fit in limit bytes, and
// returns what the directory then holds.
func capSize(dir string, files map[string]cacheFile, limit int64, removed func(string)) int64 {
	var total int64
	names := make([]string, 0, len(files))
	for n, f := range files {
		names = append(names, n)
		total += f.size
	}
	if total <= limit {
		return total
	}
	sort.Slice(names, func(i, j int) bool { return files[names[i]].mod.Before(files[names[j]].mod) })
	for _, n := range names {
		if total <= limit {
			break
		}
		if err := os.Remove(filepath.Join(dir, n)); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= files[n].size
			removed(n)
		}
	}
	return total
}

// cacheIndex is what the registry knows about one wazero cache directory.
// Several termhost processes may share it; updateIndex serializes them.
type cacheIndex struct {
	// Files maps a compiled module's file to the plugin versions (sha256
	// of the .wasm) it is attributed to.
	Files map[string][]string `json:"files"`
	// Used is when a registry last reported each plugin version in use.
	Used map[string]time.Time `json:"used"`
	// Holders are the processes using the directory, by process ID: what
	// they use, as of when.
	Holders map[string]*cacheHolder `json:"holders"`
	// Checked are the plugin versions that passed their canary here (by
	// checkedKey): a registry's initial load does not compile and check
	// them again while a compiled file is attributed to them (see
	// Registry.prepare). Whoever can write this file can write the
	// compiled code beside it, which wazero runs as it finds it.
	Checked map[string]checkedVersion `json:"checked,omitempty"`
	// Binaries are the sha256s of embedded plugins, by the executable
	// they are embedded in (see exeKey and embedsum.go).
	Binaries map[string]*binaryRecord `json:"binaries,omitempty"`
}

// checkedVersion is a plugin version that passed its canary.
type checkedVersion struct {
	HasState bool      `json:"hasState"` // it exports state_export and state_import
	At       time.Time `json:"at"`
}

// checkedKey names a plugin version checked one way: its sha256, whether
// compiled with termination checks (a different compiled file), and the
// settings its canary ran with (its configuration, memory cap and
// deadline).
func checkedKey(sha string, opts wasmhost.Options, config []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d %d %s", opts.MemoryLimitMiB, opts.CallTimeout, config)
	g := "unguarded"
	if opts.Guard {
		g = "guarded"
	}
	return sha + "/" + g + "/" + hex.EncodeToString(h.Sum(nil)[:8])
}

// holds says whether a compiled file in dir is attributed to version sha.
func (idx *cacheIndex) holds(dir, sha string) bool {
	for name, vs := range idx.Files {
		if slices.Contains(vs, sha) {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return true
			}
		}
	}
	return false
}

type cacheHolder struct {
	Seen     time.Time `json:"seen"`
	Versions []string  `json:"versions"`
}

func readIndex(dir string) *cacheIndex {
	idx := &cacheIndex{}
	if b, err := os.ReadFile(filepath.Join(dir, indexFile)); err == nil {
		json.Unmarshal(b, idx) // a damaged index is as good as none
	}
	if idx.Files == nil {
		idx.Files = map[string][]string{}
	}
	if idx.Used == nil {
		idx.Used = map[string]time.Time{}
	}
	if idx.Holders == nil {
		idx.Holders = map[string]*cacheHolder{}
	}
	if idx.Checked == nil {
		idx.Checked = map[string]checkedVersion{}
	}
	if idx.Binaries == nil {
		idx.Binaries = map[string]*binaryRecord{}
	}
	return idx
}

// updateIndex runs fn on dir's index under a lock file, and saves the
// result. If the lock cannot be had within two seconds it does nothing:
// the next prune will.
func updateIndex(dir string, fn func(idx *cacheIndex, now time.Time)) {
	unlock, ok := lockDir(dir)
	if !ok {
		return
	}
	defer unlock()
	idx := readIndex(dir)
	fn(idx, time.Now())
	b, err := json.Marshal(idx)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, indexFile+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(dir, indexFile)) != nil {
		os.Remove(tmp.Name())
	}
}

// lockDir takes dir's index lock: a file created exclusively, which works
// across processes on every platform. A lock older than 30s was left by a
// crash and is broken.
func lockDir(dir string) (unlock func(), ok bool) {
	p := filepath.Join(dir, lockFile)
	deadline := time.Now().Add(2 * time.Second)
	for {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(p) }, true
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, false
		}
		if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) > 30*time.Second {
			os.Remove(p)
			continue
		}
		if time.Now().After(deadline) {
			return nil, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hold records that this process uses the directory and, unless versions
// is nil, which plugin versions. Several registries in one process share
// the entry: the last one to prune sets the versions, the others' stay
// protected by Used for cacheGrace.
func (idx *cacheIndex) hold(now time.Time, versions []string) {
	key := strconv.Itoa(os.Getpid())
	h := idx.Holders[key]
	if h == nil {
		h = &cacheHolder{}
		idx.Holders[key] = h
	}
	h.Seen = now
	if versions != nil {
		h.Versions = versions
		for _, v := range versions {
			idx.Used[v] = now
		}
	}
}

// scan lists the compiled modules in dir, drops index entries of files
// that are gone, and removes temporary files left by a crash.
func (idx *cacheIndex) scan(dir string, now time.Time) map[string]cacheFile {
	files := map[string]cacheFile{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return files
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || name == indexFile || name == lockFile {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if strings.HasSuffix(name, ".tmp") {
			// Being written (by wazero or an index update), or left by a
			// crash.
			if now.Sub(info.ModTime()) > time.Hour {
				os.Remove(filepath.Join(dir, name))
			}
			continue
		}
		files[name] = cacheFile{info.Size(), info.ModTime()}
	}
	for name := range idx.Files {
		if _, ok := files[name]; !ok {
			delete(idx.Files, name)
		}
	}
	return files
}

// attribute gives the files the index does not know yet to the versions in
// use that own no file yet: those compiled since the last prune. If every
// version in use owns a file already (say, one compiled with and without
// termination checks), the new files go to all of them. A file is
// attributed wrongly only when two processes compile at the same moment;
// then it is kept too long or compiled again, never used wrongly: wazero
// names files by content.
func (idx *cacheIndex) attribute(files map[string]cacheFile, inUse []string) {
	if len(inUse) == 0 {
		return // nothing to attribute to: leave them for the next prune
	}
	owned := map[string]bool{}
	for _, vs := range idx.Files {
		for _, v := range vs {
			owned[v] = true
		}
	}
	var owners []string
	for _, v := range inUse {
		if !owned[v] {
			owners = append(owners, v)
		}
	}
	if len(owners) == 0 {
		owners = inUse
	}
	for name := range files {
		if _, known := idx.Files[name]; !known {
			idx.Files[name] = append([]string(nil), owners...)
		}
	}
}

// stale lists the files whose versions are all out of use: no live holder
// has them, and none was used within cacheGrace.
func (idx *cacheIndex) stale(now time.Time) []string {
	live := idx.liveVersions(now)
	var out []string
	for name, vs := range idx.Files {
		keep := false
		for _, v := range vs {
			if live[v] || now.Sub(idx.Used[v]) < cacheGrace {
				keep = true
				break
			}
		}
		if !keep {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// forget drops holders that are gone and use records too old to matter.
func (idx *cacheIndex) forget(now time.Time) {
	for key, h := range idx.Holders {
		if !h.alive(key, now) {
			delete(idx.Holders, key)
		}
	}
	for v, t := range idx.Used {
		if now.Sub(t) >= cacheGrace {
			delete(idx.Used, v)
		}
	}
	for exe, b := range idx.Binaries {
		if now.Sub(b.Seen) > holderTTL {
			delete(idx.Binaries, exe)
		}
	}
	// Test runs build a new binary each time: keep the newest few.
	for len(idx.Binaries) > maxBinaries {
		oldest := ""
		for exe, b := range idx.Binaries {
			if oldest == "" || b.Seen.Before(idx.Binaries[oldest].Seen) {
				oldest = exe
			}
		}
		delete(idx.Binaries, oldest)
	}
}

// used says whether anything has used the directory lately: a live holder
// or a version used within cacheGrace.
func (idx *cacheIndex) used(now time.Time) bool {
	for key, h := range idx.Holders {
		if h.alive(key, now) {
			return true
		}
	}
	for _, t := range idx.Used {
		if now.Sub(t) < cacheGrace {
			return true
		}
	}
	return false
}

func (idx *cacheIndex) liveVersions(now time.Time) map[string]bool {
	live := map[string]bool{}
	for key, h := range idx.Holders {
		if h.alive(key, now) {
			for _, v := range h.Versions {
				live[v] = true
			}
		}
	}
	return live
}

func (h *cacheHolder) alive(key string, now time.Time) bool {
	pid, err := strconv.Atoi(key)
	if err != nil || now.Sub(h.Seen) > holderTTL {
		return false
	}
	return processAlive(pid)
}

// processAlive says whether a process with this ID exists.
func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false // Windows: no such process
	}
	defer p.Release()
	if runtime.GOOS == "windows" {
		return true // FindProcess opened it
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
