// Package plugin runs termhost's WebAssembly plugins: it finds them (embedded
// first-party plugins plus an optional plugin directory), compiles them with
// an on-disk compilation cache, keeps a small pool of instances per plugin
// version, attaches sessions to instances, survives plugins that fail, and
// swaps in new versions while sessions keep running. The ABI itself (exports,
// imports, streams) is in sdk/ABI.md; the low-level wazero binding is
// internal/wasmhost, which this package builds on.
//
// # Versions
//
// A Registry maps a plugin name (the "name" of the module's manifest) to its
// current version. A version is one plugin's bytes, identified by their
// sha256, and while sessions use it one compiled module (one wazero
// Runtime, so closing it frees everything it holds). With an on-disk
// compilation cache a version is compiled when a session first needs it
// and unloaded once none has used it for Config.IdleUnload; the initial
// load does not compile a version that passed its canary before (the
// cache's index records it). See version.module and Registry.prepare. Embedded plugins are loaded at Open; a .wasm file in Config.Dir with
// the same manifest name overrides the embedded one when pinned (see
// Trust), and a file with a new name adds a plugin. If several files in Dir carry the same name, the one
// loaded last wins (at Open: the last in lexical order; later: the most
// recently written). The current version is published through an
// atomic.Pointer, so the data path never takes a registry lock. Versions that
// are no longer current stay alive while sessions are still pinned to them
// ("draining") and are closed when their last session ends.
//
// # Trust
//
// A version is trusted when it is embedded (first-party) or its name and
// sha256 are among Config.Pins (the user's --plugin-pin flags). A Dir file
// that carries a first-party or pinned name loads only with a matching
// pin, so every version of such a name is trusted; a file with a new,
// unpinned name loads untrusted. Host calls are answered only for trusted
// versions (judged by the version the instance runs), and Binding.Trusted
// tells the session side whether it may type a secret. Dir itself, and
// every file read from it, must not be writable by group or others (nor
// belong to another user than this one or root), checked on the open
// descriptor. See trust.go.
//
// # Instances and pools
//
// Each version owns up to Config.PoolSize instances, created lazily: a new
// session goes to an idle instance, else a new one while the pool has room,
// else the least-loaded one. Sessions are multiplexed inside an instance by
// sid (unique per instance) and stay pinned to their instance. An instance is
// single-threaded: every call into it (from any Binding, or from the tick
// goroutine) holds the instance's mutex.
//
// # Bindings
//
// A Binding is one session's attachment to one plugin: Attach opens it on an
// instance of the current version (on_open with the session's options), Data
// and Control pass chunks and control requests, Close ends it (on_close).
// Emissions returned by a call are copied out of the instance's arena into a
// buffer owned by the Binding (other sessions share the instance) and stay
// valid until the Binding's next call; a chunk the plugin lets pass
// (Continue) with no emissions is returned without any copy. State emissions
// are not passed up: the newest is kept as the session's checkpoint.
// Emissions made outside a call (on_open during Attach, on_tick) are handed
// to the callback set with OnAsync, or, until one is set, queued and
// returned in front of the next call's emissions.
//
// # Failure
//
// Any *wasmhost.TrapError (trap, panic, memory cap, deadline) poisons the
// instance: it is closed, never called again, and its stderr tail is logged.
// Every session pinned to it fails open onto another instance on its next
// call: on_open with the same options, state_import of the newest checkpoint
// (if any), then the chunk that was being processed is tried once more; if
// that traps too, the chunk passes through unprocessed (Continue). Each such
// failure adds one event to the call's emissions:
//
//	{"type":"plugin_failed","plugin":"telnet","version":"1.0.0","error":"…","outcome":"…"}
//
// A version whose instances trap Config.CrashLoopTraps times within
// Config.CrashLoopWindow (3 in 10 s) backs off: no new instance is created
// for Config.BackoffMin (100 ms), doubling up to Config.BackoffMax (30 s), and
// meanwhile Data fails open without blocking (one event per binding per
// back-off step). A *wasmhost.StatusError (the plugin returned a negative
// status on purpose) is returned to the caller and does not poison.
//
// Deadlines need wazero's termination checks, compiled into every loop of
// the plugin (wasmhost.Options.Guard); the Registry compiles guarded unless
// Config.Unguarded is set. Guarded code is markedly slower (a check at every
// loop back-edge, and wazero starts a goroutine per call). Unguarded, a call
// past the deadline cannot be aborted: its instance is taken out of service
// and its other sessions fail over, but the calling goroutine stays blocked.
//
// # Hot reload
//
// A watcher (fsnotify, on the directory, so editors' and wasmbuild's
// write-then-rename is seen) debounces events per file and calls Reload. A
// file is accepted only if its manifest reads, it compiles (off the data
// path), and a canary instance instantiates, configures and opens and closes
// a throwaway session; only then is it published as the current version of
// its name. Anything else is rejected with a logged reason and the previous
// version keeps serving. Bytes equal to the current version change nothing.
// Removing a file makes the embedded version (or another file with the same
// name) current again.
//
// Live sessions migrate at a chunk boundary: at the start of each Binding
// call, if the plugin's current version is not the binding's, the session's
// state is exported from the old instance, imported into a new session on
// the new version, and the old session is closed. A plugin without state
// export (or a migration that fails) keeps the session on the old version
// until it ends.
//
// # Ticks
//
// One goroutine owned by the Registry calls on_tick on every instance that
// has sessions, at the time the plugin asked for (next_ms) or at least every
// Config.TickInterval, so a timer set during on_data is noticed.
//
// Every goroutine the package starts (watcher, ticker, per-module watchdogs
// in wasmhost) ends when the Registry is closed.
package plugin
