package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// Open loads the embedded plugins and those in cfg.Dir, compiles them
// (concurrently, through the compilation cache) and starts the watcher on
// cfg.Dir. A broken file in Dir is logged and skipped; a broken embedded
// plugin, a Dir that is not a directory or an unusable cache is an error.
// It is Start followed by Wait.
func Open(ctx context.Context, cfg Config) (*Registry, error) {
	r, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := r.Wait(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Start is Open without the wait: it finds the plugins (their manifests,
// so Has answers at once) and returns, while they are compiled and checked
// in the background. Attach, List and Reload wait for that; Wait says how
// it ended. A server can so answer its client while the plugins load (a
// few hundred milliseconds from the cache, seconds without it).
func Start(ctx context.Context, cfg Config) (*Registry, error) {
	cfg.defaults()
	r := &Registry{
		cfg:      cfg,
		log:      cfg.Logger,
		done:     make(chan struct{}),
		loaded:   make(chan struct{}),
		tickWake: make(chan struct{}, 1),
		plugins:  make(map[string]*plugin),
		pending:  make(map[string]*pendingLoad),
		files:    make(map[string]*fileEntry),
		versions: make(map[*version]struct{}),
		subs:     make(map[*subscriber]struct{}),
	}
	if err := r.openCache(); err != nil {
		return nil, err
	}
	if r.cacheDir != "" {
		r.exeKey = exeKey(cfg.Embedded)
	}
	r.wopts = wasmhost.Options{
		MemoryLimitMiB: cfg.MemoryLimitMiB,
		CallTimeout:    cfg.CallTimeout,
		Guard:          !cfg.Unguarded,
		Sys:            true,
	}
	if r.cacheDir != "" {
		// A cache of each module's own on the directory, closed with it:
		// an unloaded module then frees all its code (see
		// wasmhost.Options.CacheDir).
		r.wopts.CacheDir = r.cacheDir
	} else {
		r.wopts.Cache = r.cache
	}
	fail := func(err error) (*Registry, error) {
		if r.watcher != nil {
			r.watcher.Close()
		}
		if r.ownCache {
			r.cache.Close(context.Background())
		}
		return nil, err
	}

	if cfg.Dir != "" {
		dir, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return fail(err)
		}
		st, err := os.Stat(dir)
		if err != nil {
			return fail(fmt.Errorf("plugin directory: %w", err))
		}
		if !st.IsDir() {
			return fail(fmt.Errorf("plugin directory %s is not a directory", dir))
		}
		if err := checkDir(dir); err != nil {
			return fail(err)
		}
		r.dir = dir
		// Watch before scanning, so nothing written meanwhile is missed;
		// events for files the scan already loaded find the same sha256.
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fail(fmt.Errorf("plugin directory watcher: %w", err))
		}
		r.watcher = w
		if err := w.Add(dir); err != nil {
			return fail(fmt.Errorf("watch plugin directory %s: %w", dir, err))
		}
	}

	// Candidates per name, most preferred first: Dir files in reverse
	// lexical order, then the embedded plugin.
	cands := make(map[string][]*source)
	if cfg.Embedded != nil {
		var names []string
		err := fs.WalkDir(cfg.Embedded, ".", func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isPluginFile(path) {
				names = append(names, path)
			}
			return err
		})
		if err != nil {
			return fail(err)
		}
		for _, n := range names {
			// Only the manifest is read here; the bytes (and their sha256)
			// are read by the load, off the path to the first answer.
			man, err := manifestIn(cfg.Embedded, n)
			if err != nil {
				return fail(fmt.Errorf("embedded plugin %s: %w", n, err))
			}
			src := &source{origin: "embedded", embedded: n, man: man}
			if p := r.plugins[src.man.Name]; p != nil {
				return fail(fmt.Errorf("embedded plugins %s and another file both carry the name %q", n, src.man.Name))
			}
			r.plugins[src.man.Name] = &plugin{name: src.man.Name, embedded: src}
			cands[src.man.Name] = []*source{src}
		}
	}
	if r.dir != "" {
		ents, err := os.ReadDir(r.dir)
		if err != nil {
			return fail(fmt.Errorf("plugin directory: %w", err))
		}
		for _, e := range ents { // sorted by name
			p := filepath.Join(r.dir, e.Name())
			if e.IsDir() || !isPluginFile(p) {
				continue
			}
			data, err := r.readFile(p)
			if err != nil {
				r.reject(p, err)
				continue
			}
			src, err := newSource("dir:"+p, p, data)
			if err != nil {
				r.reject(p, err)
				continue
			}
			r.files[p] = &fileEntry{name: src.man.Name, sha: src.sha}
			cands[src.man.Name] = append([]*source{src}, cands[src.man.Name]...)
		}
	}

	names := make([]string, 0, len(cands))
	for n := range cands {
		names = append(names, n)
		r.pending[n] = &pendingLoad{done: make(chan struct{})}
	}
	// The screen first, as every session needs it, then the big ssh plugin
	// (started early, it does not hold up the end), then Telnet and the
	// rest.
	first := map[string]int{"vt": 0, "ssh": 1, "telnet": 2, "shell": 3, "dialect": 4}
	rank := func(n string) int {
		if r, ok := first[n]; ok {
			return r
		}
		return len(first)
	}
	sort.Slice(names, func(i, j int) bool {
		if a, b := rank(names[i]), rank(names[j]); a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	// Compiling stops early if the Registry closes meanwhile.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancelLoad = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		select {
		case <-cfg.Begin.Done():
			r.loadErr = r.load(lctx, names, cands)
		case <-lctx.Done():
			r.loadErr = ErrClosed
		}
		close(r.loaded)
	}()
	return r, nil
}

// load compiles the candidates found by Start, most needed first, and
// publishes each as soon as it is ready (a session that needs only it
// waits no longer); then it starts the watcher.
func (r *Registry) load(ctx context.Context, names []string, cands map[string][]*source) error {
	r.wg.Add(1)
	go r.tickLoop()
	var rejMu sync.Mutex
	var rejected []string
	work := make(chan int, len(names))
	for i := range names {
		work <- i
	}
	close(work)
	// No source needs its bytes afterwards: a Dir file is read again when
	// it changes, an embedded one from the binary when it is needed again
	// (a copy of every embedded plugin was 21 MB of heap).
	defer func() {
		for _, cs := range cands {
			for _, s := range cs {
				s.data = nil
			}
		}
	}()
	// What the cache directory knows: versions already checked there.
	var idx *cacheIndex
	if r.unloads() {
		idx = readIndex(filepath.Join(r.cacheDir, wazeroCacheSubdir()))
	}
	one := func(i int) {
		name := names[i]
		pl := r.pending[name]
		defer close(pl.done)
		// The embedded source's sha256 is known even when a Dir file
		// overrides it (the cache keeps its compiled code): from the
		// index, else by reading its bytes (see embedsum.go).
		var embedded []byte
		if p := r.lookup(name); p != nil && p.embedded != nil {
			if sha := idx.sum(r.exeKey, p.embedded.embedded); sha != "" {
				r.mu.Lock()
				p.embedded.sha = sha
				r.mu.Unlock()
			} else {
				var err error
				if embedded, err = r.embeddedBytes(p.embedded); err != nil {
					pl.err = fmt.Errorf("embedded plugin %s: %w", name, err)
					return
				}
			}
		}
		for _, src := range cands[name] {
			if ctx.Err() != nil {
				return // closed: nothing is published
			}
			bytes := func() ([]byte, error) {
				if src.embedded == "" {
					return src.data, nil
				}
				if embedded == nil {
					data, err := fs.ReadFile(r.cfg.Embedded, src.embedded)
					if err != nil {
						return nil, err
					}
					embedded = data
				}
				return embedded, nil
			}
			v, err := r.prepare(ctx, src, bytes, idx)
			if err == nil {
				src.data = nil
				r.publish(v) // closes v instead if the Registry is closed
				if r.unloads() {
					// No session needs it yet: its compiled code goes
					// until one does.
					v.unloadIdle()
				}
				return
			}
			if src.path == "" {
				pl.err = fmt.Errorf("embedded plugin %s: %w", name, err)
				return
			}
			r.reject(src.path, err)
			rejMu.Lock()
			rejected = append(rejected, src.path)
			rejMu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range work {
				one(i)
			}
		})
	}
	wg.Wait()
	releaseExePages() // the embedded bytes read to hash them
	r.mu.Lock()
	for _, f := range rejected {
		delete(r.files, f) // so the same bytes are looked at again if written again
	}
	r.mu.Unlock()
	var errs []error
	for _, name := range names {
		errs = append(errs, r.pending[name].err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if r.closed.Load() {
		return ErrClosed
	}
	r.pruneCache()

	if r.watcher != nil {
		r.wg.Add(1)
		go r.watch()
	}
	return nil
}

// Loaded is closed once the plugins Start found are loaded, or failed to
// (Wait says which).
func (r *Registry) Loaded() <-chan struct{} { return r.loaded }

// Wait waits until the plugins Start found are loaded, and returns the
// error that stopped an embedded one (or ErrClosed, or ctx's error).
func (r *Registry) Wait(ctx context.Context) error {
	select {
	case <-r.loaded:
		return r.loadErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ready waits for the initial load; false if the Registry is closed first.
func (r *Registry) ready() bool {
	r.cfg.Begin.Open()
	select {
	case <-r.loaded:
		return !r.closed.Load()
	case <-r.done:
		return false
	}
}

func isPluginFile(p string) bool {
	b := filepath.Base(p)
	return strings.HasSuffix(b, ".wasm") && !strings.HasPrefix(b, ".")
}

// manifestIn reads the manifest of the plugin file name in fsys, reading
// only its section headers where the file allows it.
func manifestIn(fsys fs.FS, name string) (abi.Manifest, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return abi.Manifest{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return abi.Manifest{}, err
	}
	if ra, ok := f.(io.ReaderAt); ok {
		return wasmhost.ReadManifestAt(ra, st.Size())
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return abi.Manifest{}, err
	}
	return wasmhost.ReadManifest(data)
}

// embeddedBytes reads an embedded source's bytes from the binary (they are
// not kept) and records their sha256.
func (r *Registry) embeddedBytes(src *source) ([]byte, error) {
	data, err := fs.ReadFile(r.cfg.Embedded, src.embedded)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	src.sha = hex.EncodeToString(sum[:])
	return data, nil
}

func newSource(origin, path string, data []byte) (*source, error) {
	man, err := wasmhost.ReadManifest(data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &source{origin: origin, path: path, data: data, sha: hex.EncodeToString(sum[:]), man: man}, nil
}

// options are the compile options of a source.
func (r *Registry) options(src *source) wasmhost.Options {
	opts := r.wopts
	// The embedded first-party plugins run unguarded when told to, and
	// so does one that declares its calls bounded (the vt screen: every
	// loop is bounded by its input, and it is fuzzed; termination checks
	// cost it 3 to 10 times). A file from the plugin directory is
	// always guarded, whatever its manifest says.
	if src.origin == "embedded" && (r.cfg.UnguardedEmbedded || src.man.Bounded) {
		opts.Guard = false
	}
	return opts
}

// prepare is build for the initial load: a version that passed its
// canary before (the same bytes, compiled the same way, by this wazero)
// and whose compiled code the on-disk cache still holds is not compiled
// and checked again: it is published without a module, which its first
// session compiles from the cache (see version.module). The pins are
// checked all the same.
func (r *Registry) prepare(ctx context.Context, src *source, bytes func() ([]byte, error), idx *cacheIndex) (*version, error) {
	build := func() (*version, error) {
		data, err := bytes()
		if err != nil {
			return nil, err
		}
		return r.build(ctx, src, data)
	}
	if idx == nil || src.sha == "" {
		return build()
	}
	opts := r.options(src)
	rec, ok := idx.Checked[checkedKey(src.sha, opts, r.cfg.PluginConfig[src.man.Name])]
	unchecked := !ok || !idx.holds(filepath.Join(r.cacheDir, wazeroCacheSubdir()), src.sha)
	if unchecked && (src.embedded == "" || !r.cfg.CheckOnUse) {
		return build()
	}
	if err := r.checkPin(src); err != nil {
		return nil, err
	}
	if unchecked {
		// An embedded plugin the cache has not seen (a fresh machine, a
		// new build): compiled and checked in its canary when a session
		// first needs it (version.module), like one the cache holds — a
		// compile costs 50–100 MiB of passing heap, which an idle server
		// should not pay for five plugins at start.
		rec = checkedVersion{HasState: src.man.Stateful}
	}
	v := &version{
		unchecked: unchecked,
		r:         r,
		src:       src,
		man:       src.man,
		sha:       src.sha,
		opts:      opts,
		config:    r.cfg.PluginConfig[src.man.Name],
		trusted:   r.trustedSource(src, src.sha),
		hasState:  rec.HasState,
	}
	if src.embedded == "" {
		v.data = src.data
	}
	return v, nil
}

// build compiles a source and checks it in a canary instance. It runs off
// the data path.
func (r *Registry) build(ctx context.Context, src *source, data []byte) (*version, error) {
	if err := r.checkPin(src); err != nil {
		return nil, err
	}
	opts := r.options(src)
	mod, err := wasmhost.Compile(ctx, data, opts)
	if err != nil {
		return nil, err
	}
	v := &version{
		r:      r,
		src:    src,
		man:    mod.Manifest,
		sha:    mod.SHA256,
		opts:   opts,
		mod:    mod,
		config: r.cfg.PluginConfig[mod.Manifest.Name],
		// From the hash of the bytes compiled, not of those read before.
		trusted: r.trustedSource(src, mod.SHA256),
	}
	if src.embedded == "" {
		v.data = data
	}
	if err := v.canary(); err != nil {
		mod.Close(context.Background())
		return nil, fmt.Errorf("canary: %w", err)
	}
	r.checked(v)
	return v, nil
}

// publish makes v the current version of its plugin and retires the
// previous one.
func (r *Registry) publish(v *version) {
	r.mu.Lock()
	if r.closed.Load() {
		r.mu.Unlock()
		if v.mod != nil {
			v.mod.Close(context.Background())
		}
		return
	}
	p := r.plugins[v.man.Name]
	if p == nil {
		p = &plugin{name: v.man.Name}
		r.plugins[p.name] = p
	}
	v.p = p
	r.versions[v] = struct{}{}
	old := p.current.Swap(v)
	if v.src.path != "" {
		r.files[v.src.path] = &fileEntry{name: v.man.Name, sha: v.sha}
	}
	r.mu.Unlock()
	attrs := []any{"plugin", v.man.Name, "version", v.man.Version, "sha256", short(v.sha), "source", v.src.origin, "trusted", v.trusted}
	if old != nil {
		attrs = append(attrs, "previous", old.man.Version)
	}
	r.log.Info("plugin published", attrs...)
	r.notify(v.change(Published, nil))
	if old != nil {
		old.retire()
	}
	r.wake()
}

// unpublish removes the plugin's current version (its file is gone and
// nothing replaces it); its sessions drain.
func (r *Registry) unpublish(p *plugin) {
	old := p.current.Swap(nil)
	if old == nil {
		return
	}
	r.log.Info("plugin removed", "plugin", p.name, "version", old.man.Version)
	old.retire()
}

func (r *Registry) reject(path string, err error) error {
	r.log.Warn("plugin file rejected", "file", path, "error", err)
	r.notify(Change{Kind: Rejected, Source: path, Err: err})
	return fmt.Errorf("plugin file %s rejected: %w", path, err)
}

func (r *Registry) reload(file string) error {
	data, err := r.readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		r.removed(file)
		return nil
	}
	if err != nil {
		return r.reject(file, err)
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	r.mu.Lock()
	prev := r.files[file]
	r.mu.Unlock()
	if prev != nil && prev.sha == sha {
		return nil // same bytes as before: nothing happens
	}
	src, err := newSource("dir:"+file, file, data)
	if err != nil {
		return r.reject(file, err)
	}
	if cur := r.current(src.man.Name); cur != nil && cur.sha == sha {
		r.mu.Lock()
		r.files[file] = &fileEntry{name: src.man.Name, sha: sha}
		r.mu.Unlock()
		return nil
	}
	start := time.Now()
	v, err := r.build(context.Background(), src, data)
	if err != nil {
		return r.reject(file, err)
	}
	src.data = nil
	r.log.Debug("plugin compiled", "plugin", v.man.Name, "version", v.man.Version, "took", time.Since(start))
	r.publish(v)
	v.idle()
	if prev != nil && prev.name != src.man.Name {
		// The file used to carry another plugin: that one lost its file.
		if p := r.lookup(prev.name); p != nil {
			if cur := p.current.Load(); cur != nil && cur.src.path == file {
				r.fallback(p, file)
			}
		}
	}
	r.pruneCache()
	return nil
}

// removed handles a Dir file that disappeared.
func (r *Registry) removed(file string) {
	r.mu.Lock()
	fe := r.files[file]
	delete(r.files, file)
	r.mu.Unlock()
	if fe == nil {
		return
	}
	r.log.Info("plugin file removed", "file", file, "plugin", fe.name)
	r.notify(Change{Kind: Removed, Name: fe.name, SHA256: fe.sha, Source: "dir:" + file})
	p := r.lookup(fe.name)
	if p == nil {
		return
	}
	if cur := p.current.Load(); cur != nil && cur.src.path == file {
		r.fallback(p, file)
	}
}

// fallback replaces p's current version, whose file is gone, by another Dir
// file with the same name (the lexically last that loads), else the
// embedded version, else nothing.
func (r *Registry) fallback(p *plugin, gone string) {
	r.mu.Lock()
	var others []string
	for f, fe := range r.files {
		if fe.name == p.name && f != gone {
			others = append(others, f)
		}
	}
	r.mu.Unlock()
	slices.Sort(others)
	for i := len(others) - 1; i >= 0; i-- {
		data, err := r.readFile(others[i])
		if err != nil {
			continue
		}
		src, err := newSource("dir:"+others[i], others[i], data)
		if err != nil || src.man.Name != p.name {
			continue
		}
		v, err := r.build(context.Background(), src, data)
		if err != nil {
			r.reject(others[i], err)
			continue
		}
		src.data = nil
		r.publish(v)
		v.idle()
		return
	}
	if p.embedded != nil {
		data, err := r.embeddedBytes(p.embedded)
		if err != nil {
			r.log.Error("embedded plugin could not be read again; keeping the removed file's version", "plugin", p.name, "error", err)
			return
		}
		v, err := r.build(context.Background(), p.embedded, data)
		if err != nil {
			r.log.Error("embedded plugin failed to load; keeping the removed file's version", "plugin", p.name, "error", err)
			return
		}
		r.publish(v)
		v.idle()
		return
	}
	r.unpublish(p)
}
