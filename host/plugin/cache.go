package plugin

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
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

// pruneCache removes cache entries of other wazero versions and platforms
// and, beyond CacheLimitMiB, the oldest entries (by modification time) of
// this one. Errors are ignored: the cache is only an optimisation.
func (r *Registry) pruneCache() {
	if r.cacheDir == "" {
		return
	}
	pruneCacheDir(r.cacheDir, wazeroCacheSubdir(), r.cfg.CacheLimitMiB<<20, r.log.Info)
}

func pruneCacheDir(root, keep string, limit int64, logf func(string, ...any)) {
	// Only delete what looks like a wazero cache when our own directory is
	// really there: a different naming would otherwise wipe the live cache.
	if st, err := os.Stat(filepath.Join(root, keep)); err != nil || !st.IsDir() {
		return
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "wazero-") && e.Name() != keep {
			if os.RemoveAll(filepath.Join(root, e.Name())) == nil {
				logf("removed stale plugin compilation cache", "dir", filepath.Join(root, e.Name()))
			}
		}
	}
	type entry struct {
		path string
		size int64
		mod  time.Time
	}
	var files []entry
	var total int64
	dir := filepath.Join(root, keep)
	ents, err = os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".tmp") && time.Since(info.ModTime()) > time.Hour {
			os.Remove(p) // left by a crash while writing
			continue
		}
		files = append(files, entry{p, info.Size(), info.ModTime()})
		total += info.Size()
	}
	if total <= limit {
		return
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	removed := 0
	for _, f := range files {
		if total <= limit {
			break
		}
		if err := os.Remove(f.path); err == nil || os.IsNotExist(err) {
			total -= f.size
			removed++
		}
	}
	logf("pruned plugin compilation cache", "dir", dir, "removed", removed, "bytes", total)
}
