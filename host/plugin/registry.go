package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/tetratelabs/wazero"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// Config says where plugins come from and how they run. The zero value
// (with Embedded set) is usable.
type Config struct {
	// Embedded holds the first-party plugins: every *.wasm in it, at any
	// depth.
	Embedded fs.FS
	// Dir is an optional plugin directory: each *.wasm there adds a plugin or
	// overrides the embedded one with the same manifest name. It is watched
	// for changes (hot reload).
	Dir string
	// CacheDir keeps compiled plugins across restarts. "" means
	// os.UserCacheDir()/termhost/wazero; "off" keeps them in memory only.
	CacheDir string
	// CacheLimitMiB caps the size of the on-disk cache; the oldest entries
	// are removed beyond it. Default 256.
	CacheLimitMiB int64
	// MemoryLimitMiB caps each instance's linear memory. Default 64.
	MemoryLimitMiB uint32
	// CallTimeout aborts (and poisons) an instance whose call runs longer.
	// Default 2s.
	CallTimeout time.Duration
	// Unguarded compiles plugins without wazero's termination checks
	// (wasmhost.Options.Guard): faster, but a call that never returns cannot
	// be aborted. Its instance is then taken out of service (sessions pinned
	// to it fail over) while the calling goroutine stays blocked. Default:
	// guarded.
	Unguarded bool
	// UnguardedEmbedded compiles only the embedded first-party plugins
	// without termination checks; plugins from Dir stay guarded. It trades
	// the hang guard of trusted, fuzzed code for throughput (about six
	// times faster on plain text).
	UnguardedEmbedded bool
	// PoolSize is the number of instances per plugin version, created
	// lazily. Default 2.
	PoolSize int
	// Debounce is how long the watcher waits after the last event on a file
	// before reloading it. Default 100ms.
	Debounce time.Duration
	// TickInterval is the longest an instance with sessions goes without
	// on_tick, so a timer a plugin sets during on_data is noticed. Ticks
	// the plugin asked for (next_ms) come on time regardless. Default 1s;
	// negative means only the ticks the plugin asked for.
	TickInterval time.Duration
	// PluginConfig is the instance-wide configuration (JSON) passed to
	// on_configure, by plugin name. Optional.
	PluginConfig map[string][]byte
	// CrashLoopTraps traps within CrashLoopWindow make a version back off:
	// its next instance is created only after BackoffMin, doubling up to
	// BackoffMax while the traps go on. Defaults 3, 10s, 100ms, 30s.
	CrashLoopTraps         int
	CrashLoopWindow        time.Duration
	BackoffMin, BackoffMax time.Duration
	// Logger receives the registry's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.CacheLimitMiB <= 0 {
		c.CacheLimitMiB = 256
	}
	if c.MemoryLimitMiB == 0 {
		c.MemoryLimitMiB = 64
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 2 * time.Second
	}
	if c.PoolSize <= 0 {
		c.PoolSize = 2
	}
	if c.Debounce <= 0 {
		c.Debounce = 100 * time.Millisecond
	}
	if c.TickInterval == 0 {
		c.TickInterval = time.Second
	}
	if c.CrashLoopTraps <= 0 {
		c.CrashLoopTraps = 3
	}
	if c.CrashLoopWindow <= 0 {
		c.CrashLoopWindow = 10 * time.Second
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = 100 * time.Millisecond
	}
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = max(30*time.Second, c.BackoffMin)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

var (
	// ErrClosed is returned once the Registry is closed.
	ErrClosed = errors.New("plugin registry is closed")
	// ErrBindingClosed is returned by calls on a closed Binding.
	ErrBindingClosed = errors.New("plugin binding is closed")
	// ErrUnknownPlugin is wrapped by Attach's error for a name that is not
	// loaded.
	ErrUnknownPlugin = errors.New("unknown plugin")
	// ErrUnavailable is wrapped when a session has no working instance (the
	// plugin keeps failing, or is backing off).
	ErrUnavailable = errors.New("plugin unavailable")
)

// Info describes one loaded plugin version.
type Info struct {
	Name, Version, Kind, SHA256 string
	// Source is "embedded" or "dir:<path>".
	Source string
	// Current is false for an older version still serving sessions
	// (draining).
	Current bool
	// Sessions attached to this version, and its live instances.
	Sessions, Instances int
	Description         string
}

// ChangeKind says what a Change reports.
type ChangeKind string

const (
	Published ChangeKind = "published" // a version became current
	Rejected  ChangeKind = "rejected"  // a file was not accepted (Err says why)
	Removed   ChangeKind = "removed"   // a plugin file disappeared from Dir
	Retired   ChangeKind = "retired"   // a version stopped being current (it drains)
	Closed    ChangeKind = "closed"    // a version was closed (no sessions left)
)

// Change is a notification from Subscribe.
type Change struct {
	Kind                  ChangeKind
	Name, Version, SHA256 string
	Source                string // "embedded", "dir:<path>", or the rejected file's path
	Err                   error  // why a file was rejected
}

func (c Change) String() string {
	s := fmt.Sprintf("%s %s %s (%s)", c.Kind, c.Name, c.Version, c.Source)
	if c.Err != nil {
		s += ": " + c.Err.Error()
	}
	return s
}

// Registry holds every loaded plugin. It is safe for concurrent use.
type Registry struct {
	cfg      Config
	log      *slog.Logger
	dir      string // absolute Config.Dir, or ""
	cache    wazero.CompilationCache
	ownCache bool
	cacheDir string // on-disk cache root, or ""
	wopts    wasmhost.Options

	closed   atomic.Bool
	done     chan struct{}
	wg       sync.WaitGroup
	watcher  *fsnotify.Watcher
	tickWake chan struct{}

	reloadMu sync.Mutex // serializes Reload: compile, canary, publish

	mu       sync.Mutex
	plugins  map[string]*plugin
	files    map[string]*fileEntry // Dir files whose manifest read, by path
	versions map[*version]struct{} // every open version (current or draining)
	subs     map[*subscriber]struct{}
}

// plugin is one plugin name.
type plugin struct {
	name     string
	current  atomic.Pointer[version]
	embedded *source // nil if the plugin only comes from Dir
}

// source is where a version's bytes came from.
type source struct {
	origin string // "embedded" or "dir:<path>"
	path   string // the file, for Dir sources
	data   []byte // kept for embedded sources (fallback after a removal)
	sha    string
	man    abi.Manifest
}

// fileEntry is what a Dir file last held, when its manifest could be read.
type fileEntry struct {
	name, sha string
}

type subscriber struct{ ch chan Change }

// Open loads the embedded plugins and those in cfg.Dir, compiles them
// (concurrently, through the compilation cache) and starts the watcher on
// cfg.Dir. A broken file in Dir is logged and skipped; a broken embedded
// plugin, a Dir that is not a directory or an unusable cache is an error.
func Open(ctx context.Context, cfg Config) (*Registry, error) {
	cfg.defaults()
	r := &Registry{
		cfg:      cfg,
		log:      cfg.Logger,
		done:     make(chan struct{}),
		tickWake: make(chan struct{}, 1),
		plugins:  make(map[string]*plugin),
		files:    make(map[string]*fileEntry),
		versions: make(map[*version]struct{}),
		subs:     make(map[*subscriber]struct{}),
	}
	if err := r.openCache(); err != nil {
		return nil, err
	}
	r.wopts = wasmhost.Options{
		Cache:          r.cache,
		MemoryLimitMiB: cfg.MemoryLimitMiB,
		CallTimeout:    cfg.CallTimeout,
		Guard:          !cfg.Unguarded,
		Sys:            true,
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
			data, err := fs.ReadFile(cfg.Embedded, n)
			if err != nil {
				return fail(fmt.Errorf("embedded plugin %s: %w", n, err))
			}
			src, err := newSource("embedded", "", data)
			if err != nil {
				return fail(fmt.Errorf("embedded plugin %s: %w", n, err))
			}
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
			data, err := os.ReadFile(p)
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
	}
	sort.Strings(names)
	built := make([]*version, len(names))
	errs := make([]error, len(names))
	var rejMu sync.Mutex
	var rejected []string
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, src := range cands[name] {
				v, err := r.build(ctx, src, src.data)
				if err == nil {
					built[i] = v
					return
				}
				if src.path == "" {
					errs[i] = fmt.Errorf("embedded plugin %s: %w", name, err)
					return
				}
				r.reject(src.path, err)
				rejMu.Lock()
				rejected = append(rejected, src.path)
				rejMu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, f := range rejected {
		delete(r.files, f) // so the same bytes are looked at again if written again
	}
	if err := errors.Join(errs...); err != nil {
		for _, v := range built {
			if v != nil {
				v.mod.Close(context.Background())
			}
		}
		return fail(err)
	}
	for _, v := range built {
		if v != nil {
			v.src.data = keepData(v.src)
			r.publish(v)
		}
	}
	// Dir sources no longer need their bytes.
	for _, cs := range cands {
		for _, s := range cs {
			s.data = keepData(s)
		}
	}
	r.pruneCache()

	r.wg.Add(1)
	go r.tickLoop()
	if r.watcher != nil {
		r.wg.Add(1)
		go r.watch()
	}
	return r, nil
}

// keepData returns the bytes a source keeps after loading: embedded sources
// keep theirs (a removed Dir file falls back to them), Dir sources do not.
func keepData(s *source) []byte {
	if s.path == "" {
		return s.data
	}
	return nil
}

func isPluginFile(p string) bool {
	b := filepath.Base(p)
	return strings.HasSuffix(b, ".wasm") && !strings.HasPrefix(b, ".")
}

func newSource(origin, path string, data []byte) (*source, error) {
	man, err := wasmhost.ReadManifest(data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &source{origin: origin, path: path, data: data, sha: hex.EncodeToString(sum[:]), man: man}, nil
}

// build compiles a source and checks it in a canary instance. It runs off
// the data path.
func (r *Registry) build(ctx context.Context, src *source, data []byte) (*version, error) {
	opts := r.wopts
	if src.origin == "embedded" && r.cfg.UnguardedEmbedded {
		opts.Guard = false
	}
	mod, err := wasmhost.Compile(ctx, data, opts)
	if err != nil {
		return nil, err
	}
	v := &version{
		r:      r,
		src:    src,
		man:    mod.Manifest,
		sha:    mod.SHA256,
		mod:    mod,
		config: r.cfg.PluginConfig[mod.Manifest.Name],
	}
	if err := v.canary(); err != nil {
		mod.Close(context.Background())
		return nil, fmt.Errorf("canary: %w", err)
	}
	return v, nil
}

// publish makes v the current version of its plugin and retires the
// previous one.
func (r *Registry) publish(v *version) {
	r.mu.Lock()
	if r.closed.Load() {
		r.mu.Unlock()
		v.mod.Close(context.Background())
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
	attrs := []any{"plugin", v.man.Name, "version", v.man.Version, "sha256", short(v.sha), "source", v.src.origin}
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

// Reload loads (or, if it no longer exists, unloads) one plugin file now:
// what the watcher does after its debounce. It returns why a file was
// rejected; a rejected file never replaces a working version.
func (r *Registry) Reload(file string) error {
	if r.closed.Load() {
		return ErrClosed
	}
	file, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	if r.closed.Load() {
		return ErrClosed
	}
	return r.reload(file)
}

func (r *Registry) reload(file string) error {
	data, err := os.ReadFile(file)
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
		data, err := os.ReadFile(others[i])
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
		return
	}
	if p.embedded != nil {
		v, err := r.build(context.Background(), p.embedded, p.embedded.data)
		if err != nil {
			r.log.Error("embedded plugin failed to load; keeping the removed file's version", "plugin", p.name, "error", err)
			return
		}
		r.publish(v)
		return
	}
	r.unpublish(p)
}

func (r *Registry) lookup(name string) *plugin {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.plugins[name]
}

func (r *Registry) current(name string) *version {
	if p := r.lookup(name); p != nil {
		return p.current.Load()
	}
	return nil
}

// names lists the plugins that have a current version.
func (r *Registry) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ns []string
	for n, p := range r.plugins {
		if p.current.Load() != nil {
			ns = append(ns, n)
		}
	}
	sort.Strings(ns)
	return ns
}

// List describes every loaded version: the current one of each plugin and
// older ones still serving sessions. Sorted by name, current first.
func (r *Registry) List() []Info {
	r.mu.Lock()
	vs := make([]*version, 0, len(r.versions))
	for v := range r.versions {
		vs = append(vs, v)
	}
	r.mu.Unlock()
	out := make([]Info, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.info())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Current != b.Current {
			return a.Current
		}
		return a.Version > b.Version
	})
	return out
}

// Subscribe returns a channel of changes (versions published, retired,
// closed; files rejected or removed) and a function that ends the
// subscription. Changes are dropped, never waited for, when the channel's
// buffer is full.
func (r *Registry) Subscribe() (<-chan Change, func()) {
	s := &subscriber{ch: make(chan Change, 256)}
	r.mu.Lock()
	if r.closed.Load() {
		close(s.ch)
	} else {
		r.subs[s] = struct{}{}
	}
	r.mu.Unlock()
	return s.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[s]; ok {
			delete(r.subs, s)
			close(s.ch)
		}
	}
}

func (r *Registry) notify(c Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subs {
		select {
		case s.ch <- c:
		default:
		}
	}
}

// Close stops the watcher and the tick goroutine and closes every plugin
// version; calls on Bindings fail with ErrClosed from then on.
func (r *Registry) Close() error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(r.done)
	if r.watcher != nil {
		r.watcher.Close()
	}
	r.wg.Wait()
	r.mu.Lock()
	vs := make([]*version, 0, len(r.versions))
	for v := range r.versions {
		vs = append(vs, v)
	}
	for s := range r.subs {
		delete(r.subs, s)
		close(s.ch)
	}
	r.mu.Unlock()
	for _, v := range vs {
		v.close()
	}
	if r.ownCache {
		return r.cache.Close(context.Background())
	}
	return nil
}

// wake makes the tick goroutine look at the instances again.
func (r *Registry) wake() {
	select {
	case r.tickWake <- struct{}{}:
	default:
	}
}

// watch runs the Dir watcher: events are debounced per file, then the file
// is reloaded. It ends when the Registry closes.
func (r *Registry) watch() {
	defer r.wg.Done()
	pending := make(map[string]time.Time)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	arm := func() {
		var first time.Time
		for _, t := range pending {
			if first.IsZero() || t.Before(first) {
				first = t
			}
		}
		if !first.IsZero() {
			timer.Reset(max(time.Until(first), 0))
		}
	}
	for {
		select {
		case <-r.done:
			timer.Stop()
			return
		case ev, ok := <-r.watcher.Events:
			if !ok {
				return
			}
			if !isPluginFile(ev.Name) || ev.Op == fsnotify.Chmod {
				continue
			}
			pending[filepath.Clean(ev.Name)] = time.Now().Add(r.cfg.Debounce)
			arm()
		case err, ok := <-r.watcher.Errors:
			if !ok {
				return
			}
			r.log.Warn("plugin directory watcher", "error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: look at every file again.
				for _, f := range r.rescan() {
					pending[f] = time.Now().Add(r.cfg.Debounce)
				}
				arm()
			}
		case <-timer.C:
			now := time.Now()
			var due []string
			for f, t := range pending {
				if !t.After(now) {
					due = append(due, f)
					delete(pending, f)
				}
			}
			sort.Strings(due)
			for _, f := range due {
				if r.closed.Load() {
					return
				}
				_ = r.Reload(f) // logged and notified inside
			}
			arm()
		}
	}
}

// rescan lists the plugin files in Dir and those the registry knows of.
func (r *Registry) rescan() []string {
	set := make(map[string]bool)
	if ents, err := os.ReadDir(r.dir); err == nil {
		for _, e := range ents {
			if p := filepath.Join(r.dir, e.Name()); !e.IsDir() && isPluginFile(p) {
				set[p] = true
			}
		}
	}
	r.mu.Lock()
	for f := range r.files {
		set[f] = true
	}
	r.mu.Unlock()
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
