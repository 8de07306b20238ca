package plugin

import (
	"context"
	"errors"
	"github.com/termhost/termhost/internal/warm"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
	"github.com/tetratelabs/wazero"
)

// Config says where plugins come from and how they run. The zero value
// (with Embedded set) is usable.
type Config struct {
	// Embedded holds the first-party plugins: every *.wasm in it, at any
	// depth.
	Embedded fs.FS
	// Dir is an optional plugin directory: each *.wasm there adds a plugin or
	// overrides the embedded one with the same manifest name. It is watched
	// for changes (hot reload). Neither it nor its files may be writable by
	// group or others, or belong to another user than this one or root.
	Dir string
	// Pins are the sha256s (lower-case hex) the user allows per plugin
	// name. A file carrying a first-party name, or a name pinned here,
	// loads only if its sha256 is among its name's pins; a pinned version
	// is trusted like an embedded one (its host calls are answered). They
	// must come from where the agent cannot write (flags, environment),
	// never from a file in Dir. See ParsePin.
	Pins map[string][]string
	// Begin holds the load back until it opens (nil: load at once):
	// a server opens it once its client has its first answers, so that
	// compiling does not share the cores with them. Attach, List and
	// Reload open it, as they need the load.
	Begin *warm.Gate
	// CacheDir keeps compiled plugins across restarts. "" means
	// os.UserCacheDir()/termhost/wazero; "off" keeps them in memory only.
	CacheDir string
	// CacheLimitMiB caps the size of the on-disk cache; the oldest entries
	// are removed beyond it. Default 256.
	CacheLimitMiB int64
	// MaxFileMiB is the largest plugin file read from Dir. Default 64.
	MaxFileMiB int64
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
	// IdleUnload is how long a plugin version no session uses keeps its
	// compiled module and idle instances, when compiled plugins are
	// cached on disk (CacheDir not "off"): the next session compiles it
	// again from there, in tens of milliseconds. Default 10s; negative:
	// never unload.
	IdleUnload time.Duration
	// CheckOnUse leaves an embedded plugin that the on-disk cache has not
	// seen (a fresh machine, a new build) uncompiled at load: it is
	// compiled and checked in its canary when a session first needs it,
	// one such compile at a time, so an idle server never pays for every
	// plugin's compile (each passes through 50–100 MiB of heap). Its
	// canary's failure is then the first Attach's error, not Wait's.
	// Plugins from Dir are always checked at load.
	CheckOnUse bool
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
	// Now is the clock the crash-loop back-off reads (when a trap
	// happened, whether a back-off has ended). Default time.Now; tests
	// set their own so a back-off ends when they say, not after a sleep.
	Now func() time.Time
	// Logger receives the registry's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.CacheLimitMiB <= 0 {
		c.CacheLimitMiB = 256
	}
	if c.MaxFileMiB <= 0 {
		c.MaxFileMiB = 64
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
	if c.IdleUnload == 0 {
		c.IdleUnload = 10 * time.Second
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
	if c.Now == nil {
		c.Now = time.Now
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
	// ErrRefused is wrapped by Attach's error when the plugin's on_open
	// refused the session (its options: an unknown dialect, say).
	ErrRefused = errors.New("the plugin refused the session")
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
	// Trusted: first-party (embedded) or pinned by the user; only a
	// trusted version's host calls are answered.
	Trusted bool
	// Sessions attached to this version, and its live instances.
	Sessions, Instances int
	Description         string
}

// Registry holds every loaded plugin. It is safe for concurrent use.
type Registry struct {
	cfg      Config
	log      *slog.Logger
	dir      string // absolute Config.Dir, or ""
	cache    wazero.CompilationCache
	ownCache bool
	cacheDir string // on-disk cache root, or ""
	exeKey   string // the executable the embedded plugins are in (exeKey), or ""
	wopts    wasmhost.Options

	closed  atomic.Bool
	freeing atomic.Bool // a return of memory to the OS is scheduled
	done    chan struct{}
	// loaded is closed when the plugins Start found are loaded (or failed
	// to: loadErr); cancelLoad stops their compiling when the Registry
	// closes first.
	loaded     chan struct{}
	loadErr    error
	cancelLoad context.CancelFunc
	// pending has each name Start found; its done closes once that
	// plugin is published or failed (err). Written only before Start
	// returned.
	pending  map[string]*pendingLoad
	wg       sync.WaitGroup
	watcher  *fsnotify.Watcher
	tickWake chan struct{}

	reloadMu sync.Mutex // serializes Reload: compile, canary, publish

	// checkedMu guards newChecks: versions that passed their canary
	// since the last prune, which records them in the cache's index.
	checkedMu sync.Mutex
	newChecks map[string]checkedVersion
	// firstCompile serializes the compiles of versions not yet checked
	// (version.module).
	firstCompile sync.Mutex
	canaries     atomic.Int64 // canaries run (compiles and checks at load or reload)

	mu       sync.Mutex
	plugins  map[string]*plugin
	files    map[string]*fileEntry // Dir files whose manifest read, by path
	versions map[*version]struct{} // every open version (current or draining)
	subs     map[*subscriber]struct{}
}

// pendingLoad is the initial load of one plugin name.
type pendingLoad struct {
	done chan struct{}
	err  error // set before done closes
}

// readyFor waits until plugin name is loaded (or failed to), or, for a
// name Start did not find, until every plugin is; false if the Registry
// closes first.
func (r *Registry) readyFor(name string) bool {
	r.cfg.Begin.Open()
	pl := r.pending[name]
	if pl == nil {
		return r.ready()
	}
	select {
	case <-pl.done:
		return !r.closed.Load()
	case <-r.done:
		return false
	}
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
	data   []byte // while loading; dropped after (an embedded source reads its file again)
	// embedded: the file in Config.Embedded an embedded source came from.
	embedded string
	sha      string
	man      abi.Manifest
}

// fileEntry is what a Dir file last held, when its manifest could be read.
type fileEntry struct {
	name, sha string
}

type subscriber struct{ ch chan Change }

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

// Has says whether a plugin of that name is loaded (has a current
// version), or, while Start's plugins are still loading, is among them.
func (r *Registry) Has(name string) bool {
	select {
	case <-r.loaded:
		return r.current(name) != nil
	default:
		return r.pending[name] != nil // written only before Start returned
	}
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
	r.ready()
	return r.list()
}

func (r *Registry) list() []Info {
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

// Close stops the watcher and the tick goroutine and closes every plugin
// version; calls on Bindings fail with ErrClosed from then on.
func (r *Registry) Close() error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(r.done)
	r.cancelLoad()
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

// Prepare compiles plugin name's current version in the background if
// it is not compiled (see version.module): a session that attaches it
// after another plugin then does not wait for the two compiles in turn.
// If no session comes, it is unloaded again after Config.IdleUnload.
func (r *Registry) Prepare(name string) {
	r.ahead(name, func(v *version) {
		v.createMu.Lock()
		_, err := v.module()
		v.createMu.Unlock()
		if err == nil {
			v.idle()
		}
	})
}

// Warm is Prepare plus one idle instance of a pooled plugin that has none:
// a session that attaches it soon (a device session's dialect, at its
// first run_command) does not wait for the instance either (a plugin
// built with Go starts its runtime: about a hundred milliseconds). The
// instance goes with the compiled module after Config.IdleUnload if no
// session comes.
func (r *Registry) Warm(name string) { r.ahead(name, (*version).warm) }

// ahead runs f on plugin name's current version in the background, once
// the plugin is loaded: work done ahead of the session that will need it.
func (r *Registry) ahead(name string, f func(*version)) {
	if r.closed.Load() || r.pending[name] == nil {
		return
	}
	go func() {
		if !r.readyFor(name) {
			return
		}
		if v := r.current(name); v != nil {
			f(v)
		}
	}()
}

// unloads says whether versions no session uses are unloaded: only when
// an on-disk cache gives their compiled code back.
func (r *Registry) unloads() bool { return r.cacheDir != "" && r.cfg.IdleUnload >= 0 }

// checked notes that v passed its canary, for the next prune to record
// in the cache's index (see prepare).
func (r *Registry) checked(v *version) {
	if r.cacheDir == "" {
		return
	}
	r.checkedMu.Lock()
	if r.newChecks == nil {
		r.newChecks = map[string]checkedVersion{}
	}
	r.newChecks[checkedKey(v.sha, v.opts, v.config)] = checkedVersion{HasState: v.hasState, At: time.Now()}
	r.checkedMu.Unlock()
}

// wake makes the tick goroutine look at the instances again.
// giveBack returns the memory of closed instances to the operating system
// soon (at most twice a second): a closed instance's linear memory (up to
// its cap) is garbage the runtime's scavenger would return only slowly.
func (r *Registry) giveBack() {
	if !r.freeing.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(500*time.Millisecond, func() {
		releaseExePages() // the embedded bytes read to compile
		debug.FreeOSMemory()
		// A closed module's machine code is unmapped by a finalizer,
		// which runs after that collection; what only it still held goes
		// with the next.
		time.Sleep(50 * time.Millisecond)
		debug.FreeOSMemory()
		r.freeing.Store(false)
	})
}

func (r *Registry) wake() {
	select {
	case r.tickWake <- struct{}{}:
	default:
	}
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
