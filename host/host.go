// Package host wires termhost together: the plugin registry, the session
// registry and the MCP server, from one Config. cmd/termhost fills the
// Config from flags and environment; tests and the demo build it directly.
package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/internal/warm"

	ptylink "github.com/termhost/termhost/host/link/pty"
	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/host/plugin"
	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/record"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/host/ssh"
	"github.com/termhost/termhost/sdk/abi"
)

// Config is everything a running termhost needs.
type Config struct {
	Plugins   fs.FS  // embedded first-party plugins
	PluginDir string // optional directory that adds or overrides plugins (hot reloaded)
	CacheDir  string // compilation cache ("" default, "off" none)
	Tools     []string
	// UnguardedEmbedded runs the first-party plugins without wazero's
	// termination checks (faster; see docs/RATIONALE.md).
	UnguardedEmbedded bool
	// PluginPins allow drop-in plugins by sha256, per name: one that
	// replaces a first-party plugin loads only when pinned, and only a
	// pinned drop-in's host calls (secrets, signatures) are answered
	// (plugin.Config.Pins).
	PluginPins map[string][]string
	// WarmupDelay holds back what the client's first answers do not need —
	// compiling the plugins, probing the containment — until the client
	// has listed the tools or calls one, or this long after start at the
	// latest, so that on a small machine they do not share its cores with
	// initialize and tools/list. 0: at once.
	WarmupDelay time.Duration

	MaxSessions  int
	IdleTimeout  time.Duration
	BufferSize   int
	WriteTimeout time.Duration
	MaxWait      time.Duration
	// NoPTYResources serves list_pty and read_pty as tools instead of the
	// pty:// resources (MCP_PTY_DEACTIVATE_RESOURCES).
	NoPTYResources bool
	// UTF8Hold: see session.Config (tests lengthen it so a loaded machine
	// cannot release a character early).
	UTF8Hold time.Duration

	// SSH (used when the ssh plugin is loaded): credentials.json and
	// rules.json (both hot reloaded), termhost's own known_hosts (written
	// on first use) and the user's ~/.ssh/known_hosts (read), and the
	// limits of SPEC SSH-1 (zero values: the defaults).
	CredentialsFile string
	RulesFile       string
	KnownHostsFile  string
	UserKnownHosts  string
	SSHLimits       ssh.Limits

	// Programs started by termhost (launch_app, start_pty, restart_app,
	// the shells). OwnEnv names termhost's own environment variables,
	// which programs never get (cmd/termhost keeps the one list).
	OwnEnv []EnvVar
	// Containment is "auto" (or ""), "cgroup" or "subreaper"; Sandbox is
	// "auto" (or ""), "on" or "off" (see pty.ContainmentConfig).
	Containment string
	Sandbox     string
	// HiddenPaths adds paths programs must not read (the HTTP token file)
	// to termhost's own: the credentials file and the keys it names, the
	// rules file, termhost's known_hosts and the plugin directory. Asked
	// at every program start.
	HiddenPaths func() []string
	// Recordings (host/record): RecordDir is where they go ("" : the
	// user's data directory, record.DefaultDir), RecordAll records every
	// session from its start, RecordMaxFile and RecordMaxTotal bound one
	// recording and the directory (0: the defaults).
	RecordDir                     string
	RecordAll                     bool
	RecordMaxFile, RecordMaxTotal int64
	// NoPrograms: this host starts no programs (plugins list), so the
	// containment is not probed.
	NoPrograms bool
	// AskPrograms: the local programs ask_secret types the person's
	// secret into (mcp.Config.AskPrograms; nil: mcp.DefaultAskPrograms).
	AskPrograms []string

	Logger *slog.Logger
}

// EnvVar is one of termhost's own environment variables. A Name ending in
// "*" is a prefix. A Secret one's value may not reach a program even
// through a tool's env argument.
type EnvVar struct {
	Name   string
	Secret bool
}

// Host is a running termhost.
type Host struct {
	Plugins  *plugin.Registry
	Sessions *session.Registry
	MCP      *mcp.Server
	// SSH is nil when the ssh plugin is not loaded.
	SSH *SSH
	// Rules are the command rules (rules.json) of every session kind.
	Rules *policy.Store
	// Containment is how programs are started (nil with NoPrograms):
	// Mechanism and Sandboxed say what this machine allowed.
	Containment *ptylink.Containment

	stopTrim, trimDone chan struct{}
}

// SSH is what the ssh tools use.
type SSH struct {
	Creds    *secrets.Store
	Rules    *policy.Store
	HostKeys *secrets.HostKeys
	Pool     *ssh.Pool
}

func (s *SSH) close() {
	if s == nil {
		return
	}
	s.Pool.Close()
	s.Creds.Close()
}

// absPath is p made absolute, so that every message and log line names
// the file in use wherever the server was started from (p as given when
// that fails).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// openRules loads the command rules every session kind is held to. A
// rules file that does not load is logged, not fatal (a missing --rules
// file stops termhost before this); a fix is picked up by the watcher.
func openRules(cfg Config) *policy.Store {
	log := cfg.Logger.With("component", "rules")
	rulesFile := cfg.RulesFile
	if rulesFile == "" {
		rulesFile = "rules.json"
	}
	rulesFile = absPath(rulesFile)
	rules, err := policy.NewStore(rulesFile, log)
	if err != nil {
		log.Error("command rules not loaded: no rules are in force until the file is fixed", "reason", err.Error())
	}
	if err := rules.Watch(); err != nil {
		log.Warn("rules will not be reloaded on change", "reason", err.Error())
	}
	return rules
}

// openSSH loads the SSH secrets. A credentials file that does not load is
// logged, not fatal: the other tools still work, and the ssh tools say why
// (a fix is picked up by the watcher).
func openSSH(cfg Config, sessions *session.Registry, attach session.Attacher, rules *policy.Store) *SSH {
	log := cfg.Logger.With("component", "ssh")
	credFile := cfg.CredentialsFile
	if credFile == "" {
		credFile = "credentials.json"
	}
	known := cfg.KnownHostsFile
	if known == "" {
		known = secrets.DefaultKnownHosts()
	}
	credFile, known = absPath(credFile), absPath(known)
	creds, err := secrets.NewStore(credFile, secrets.DefaultsFromEnv(), log)
	if err != nil {
		log.Warn("credentials not loaded; the ssh tools have none until the file is fixed", "reason", err.Error())
	}
	if err := creds.Watch(); err != nil {
		log.Warn("credentials will not be reloaded on change", "reason", err.Error())
	}
	hk := secrets.NewHostKeys(known, []string{cfg.UserKnownHosts}, log)
	d := &ssh.Dialer{Sessions: sessions, Attach: attach, Creds: creds, HostKeys: hk, Rules: rules.For(policy.KindSSH)}
	return &SSH{Creds: creds, Rules: rules, HostKeys: hk, Pool: ssh.NewPool(d, cfg.SSHLimits)}
}

// New loads plugins and builds the registries and the MCP server.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Every secret typed in this server's life is masked in every log
	// line, whoever writes it (SPEC TRUST-2).
	secretSet := session.NewSecretSet(0)
	cfg.Logger = slog.New(secretSet.Handler(cfg.Logger.Handler()))
	// The plugins compile in the background, so the client's initialize
	// and tools/list are answered at once; the first call that needs a
	// plugin waits for it (Ready says how loading ended).
	var warmup *warm.Gate
	if cfg.WarmupDelay > 0 {
		warmup = warm.NewGate(cfg.WarmupDelay)
	}
	plugins, err := plugin.Start(ctx, plugin.Config{
		Begin:    warmup,
		Embedded: cfg.Plugins,
		Dir:      cfg.PluginDir,
		Pins:     cfg.PluginPins,
		CacheDir: cfg.CacheDir,
		Logger:   cfg.Logger.With("component", "plugin"),

		UnguardedEmbedded: cfg.UnguardedEmbedded,
		// A fresh cache compiles nothing at start (issue 19: an idle
		// server's peak).
		CheckOnUse: true,
	})
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	var credStore atomic.Pointer[secrets.Store] // set once the ssh plugin is known to be there
	// Programs do not read the recordings: over HTTP they hold other
	// clients' sessions.
	recDir := cfg.RecordDir
	if recDir == "" {
		recDir, _ = record.DefaultDir()
	}
	if hidden := cfg.HiddenPaths; recDir != "" {
		cfg.HiddenPaths = func() []string {
			if hidden == nil {
				return []string{recDir}
			}
			return append(hidden(), recDir)
		}
	}
	programs, contain, err := newPrograms(cfg, &credStore, warmup)
	if err != nil {
		plugins.Close()
		return nil, err
	}
	// Every session that wants a screen gets vt, shells their integration,
	// and device sessions the dialect plugin, when the plugins are there
	// (they are embedded; a plugin directory may not have them in tests).
	var roles session.Plugins
	if plugins.Has("vt") {
		roles.Screen = "vt"
	}
	if plugins.Has("shell") {
		roles.Shell = "shell"
	}
	if plugins.Has("dialect") {
		roles.Dialect = "dialect"
	}
	recordings := &record.Lazy{Dir: cfg.RecordDir, MaxFile: cfg.RecordMaxFile, MaxTotal: cfg.RecordMaxTotal,
		Log: cfg.Logger.With("component", "record")}
	if cfg.RecordAll {
		if _, err := recordings.Store(); err != nil {
			plugins.Close()
			contain.Close()
			return nil, err
		}
	}
	sessions := session.NewRegistry(
		session.Limits{MaxSessions: cfg.MaxSessions, IdleTimeout: cfg.IdleTimeout},
		session.Config{BufferSize: cfg.BufferSize, WriteTimeout: cfg.WriteTimeout, MaxWait: cfg.MaxWait, UTF8Hold: cfg.UTF8Hold,
			Logger: cfg.Logger.With("component", "session"), Secrets: secretSet, Plugins: roles,
			Record: recordings.New, RecordAll: cfg.RecordAll},
	)
	screen := roles.Screen
	attach := func(name string, kind abi.Kind, opts []byte) (session.Binding, error) {
		if name != screen && screen != "" {
			// Every session attaches the screen after its protocol
			// plugin: compile it meanwhile, if it is not (plugins are
			// compiled when a session needs them).
			plugins.Prepare(screen)
		}
		if name != roles.Dialect && roles.Dialect != "" && (kind == abi.KindTelnet || kind == abi.KindSSH) {
			// A device session's dialect joins at its first run_command
			// (or now): make it ready meanwhile, so that call does not
			// wait for it.
			plugins.Warm(roles.Dialect)
		}
		b, err := plugins.Attach(name, kind, opts)
		if errors.Is(err, plugin.ErrUnknownPlugin) || errors.Is(err, plugin.ErrRefused) {
			err = fmt.Errorf("%w: %w", session.ErrBadPlugin, err)
		}
		return b, err
	}
	rules := openRules(cfg)
	deps := mcp.Deps{Sessions: sessions, Attach: attach, Programs: programs, Plugins: lister{plugins}, Rules: rules}
	var sshTools *SSH
	if plugins.Has(ssh.Plugin) {
		sshTools = openSSH(cfg, sessions, attach, rules)
		credStore.Store(sshTools.Creds)
		deps.SSH = &mcp.SSH{Pool: sshTools.Pool, Creds: sshTools.Creds}
	}
	srv, err := mcp.New(deps, mcp.Config{Tools: cfg.Tools, Logger: cfg.Logger.With("component", "mcp"),
		PTYResources: !cfg.NoPTYResources, Warm: warmup.Open, AskPrograms: cfg.AskPrograms})
	if err != nil {
		sshTools.close()
		rules.Close()
		sessions.Close()
		contain.Close()
		plugins.Close()
		return nil, err
	}
	h := &Host{Plugins: plugins, Sessions: sessions, MCP: srv, SSH: sshTools, Rules: rules, Containment: contain,
		stopTrim: make(chan struct{}), trimDone: make(chan struct{})}
	go h.trimWhenQuiet()
	return h, nil
}

// Ready waits for the plugins to load and returns what stopped one of the
// embedded ones, if anything did: the server is then of no use.
func (h *Host) Ready(ctx context.Context) error {
	if err := h.Plugins.Wait(ctx); err != nil && !errors.Is(err, plugin.ErrClosed) {
		return fmt.Errorf("plugins: %w", err)
	}
	return nil
}

// trimWhenQuiet compresses the raw buffer of every session quiet for a few
// seconds (session.Registry.FreezeIdle: it thaws on its next output), and
// returns freed memory to the operating system once the sessions have all
// been quiet for as long after activity, or once the compressed buffers
// released enough: the heap of a busy server holds garbage up to its soft
// limit (grown-and-copied plugin memory, buffers), and an idle server
// should cost what it holds.
func (h *Host) trimWhenQuiet() {
	defer close(h.trimDone)
	// Loading compiled every plugin and ran each in a canary instance:
	// garbage the heap would otherwise keep until the first quiet spell
	// after activity (about 100 MB with the embedded plugins).
	select {
	case <-h.Plugins.Loaded():
		debug.FreeOSMemory()
	case <-h.stopTrim:
		return
	}
	const (
		quiet = 3 * time.Second
		// A busy server with idle sessions gives back what their buffers
		// released in steps of this much, not after every session.
		releasedEnough = 64 << 20
	)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var tr trimmer
	for {
		select {
		case <-h.stopTrim:
			return
		case <-t.C:
		}
		freed := h.Sessions.FreezeIdle(quiet)
		live := h.Sessions.List("")
		active := make([]time.Time, len(live))
		for i, s := range live {
			active[i] = s.LastActive()
		}
		if tr.due(time.Now(), active, freed, quiet, releasedEnough) {
			debug.FreeOSMemory()
		}
	}
}

// trimmer decides, once a tick, whether to return freed memory to the OS.
type trimmer struct {
	trimmed  time.Time // the activity the last trim followed
	released int       // by freezes since the last trim
	emptied  time.Time // when the last live session went
	hadLive  bool
}

// due is given the live sessions' last activity and what the tick's
// freezes released: true once all have been quiet for quiet after
// activity, or once enough was released.
func (tr *trimmer) due(now time.Time, active []time.Time, freed int, quiet time.Duration, enough int) bool {
	tr.released += freed
	var last time.Time
	for _, a := range active {
		if a.After(last) {
			last = a
		}
	}
	// The last session's end is activity too: what the sessions held is
	// given back once none is left (List omits ended sessions).
	if len(active) == 0 && tr.hadLive {
		tr.emptied = now
	}
	tr.hadLive = len(active) > 0
	if tr.emptied.After(last) {
		last = tr.emptied
	}
	allQuiet := last.After(tr.trimmed) && now.Sub(last) > quiet
	if !allQuiet && tr.released < enough {
		return false
	}
	if allQuiet {
		tr.trimmed = last
	}
	tr.released = 0
	return true
}

// Close ends every session and unloads every plugin.
func (h *Host) Close() error {
	select {
	case <-h.stopTrim:
	default:
		close(h.stopTrim)
		<-h.trimDone
	}
	h.SSH.close()
	h.Rules.Close()
	h.Sessions.Close()
	h.Containment.Close()
	return h.Plugins.Close()
}

type lister struct{ r *plugin.Registry }

func (l lister) ListPlugins() []mcp.PluginInfo {
	var out []mcp.PluginInfo
	for _, in := range l.r.List() {
		out = append(out, mcp.PluginInfo{
			Name: in.Name, Version: in.Version, Kind: in.Kind, SHA256: in.SHA256, Source: in.Source,
			Current: in.Current, Sessions: in.Sessions, Description: in.Description,
		})
	}
	return out
}
