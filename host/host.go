// Package host wires termhost together: the plugin registry, the session
// registry and the MCP server, from one Config. cmd/termhost fills the
// Config from flags and environment; tests and the demo build it directly.
package host

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/host/plugin"
	"github.com/termhost/termhost/host/session"
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

	Logger *slog.Logger
}

// Host is a running termhost.
type Host struct {
	Plugins  *plugin.Registry
	Sessions *session.Registry
	MCP      *mcp.Server
}

// New loads plugins and builds the registries and the MCP server.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	plugins, err := plugin.Open(ctx, plugin.Config{
		Embedded: cfg.Plugins,
		Dir:      cfg.PluginDir,
		CacheDir: cfg.CacheDir,
		Logger:   cfg.Logger.With("component", "plugin"),

		UnguardedEmbedded: cfg.UnguardedEmbedded,
	})
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	sessions := session.NewRegistry(
		session.Limits{MaxSessions: cfg.MaxSessions, IdleTimeout: cfg.IdleTimeout},
		session.Config{BufferSize: cfg.BufferSize, WriteTimeout: cfg.WriteTimeout, MaxWait: cfg.MaxWait, UTF8Hold: cfg.UTF8Hold,
			Logger: cfg.Logger.With("component", "session")},
	)
	attach := func(name string, kind abi.Kind, opts []byte) (session.Binding, error) {
		return plugins.Attach(name, kind, opts)
	}
	deps := mcp.Deps{Sessions: sessions, Attach: attach, Plugins: lister{plugins}}
	// Every session gets a screen and shells their integration when the
	// plugins are there (they are embedded; a plugin directory may not
	// have them in tests).
	if plugins.Has("vt") {
		deps.Screen = "vt"
	}
	if plugins.Has("shell") {
		deps.ShellPlugin = "shell"
	}
	srv, err := mcp.New(deps, mcp.Config{Tools: cfg.Tools, Logger: cfg.Logger.With("component", "mcp"),
		PTYResources: !cfg.NoPTYResources})
	if err != nil {
		sessions.Close()
		plugins.Close()
		return nil, err
	}
	return &Host{Plugins: plugins, Sessions: sessions, MCP: srv}, nil
}

// Close ends every session and unloads every plugin.
func (h *Host) Close() error {
	h.Sessions.Close()
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
