// Package mcp is termhost's MCP surface: the tools, their schemas and
// annotations, the mapping of domain errors to results an agent can act on,
// and the transports. Tools come in groups (telnet, plugins, …) that are
// registered independently, so `--tools` can switch them on and off.
package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/pty"
	"github.com/termhost/termhost/host/session"
)

// Version is the server version reported at initialize.
const Version = "0.1.0"

// Groups are the tool groups this build has.
var Groups = []string{"telnet", "ssh", "pty", "tui", "devices", "plugins"}

// PluginLister lists loaded plugins (host/plugin.Registry implements it).
type PluginLister interface {
	ListPlugins() []PluginInfo
}

// PluginInfo is one plugin version as plugins_list shows it.
type PluginInfo struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Kind        string `json:"kind"`
	SHA256      string `json:"sha256"`
	Source      string `json:"source"`
	Current     bool   `json:"current"`
	Sessions    int    `json:"sessions"`
	Description string `json:"description,omitempty"`
}

// Deps are what the tools act on.
type Deps struct {
	Sessions *session.Registry
	Attach   session.Attacher
	Plugins  PluginLister // may be nil: no plugins tools
	// Programs is what the programs of PTY sessions start with and
	// inside (the zero value: directly, with termhost's environment).
	Programs pty.Programs
	// SSH serves the ssh tools; nil: the group has no tools.
	SSH *SSH
	// Rules are the command rules (rules.json) every session kind is held
	// to (rules.go); nil: none.
	Rules *policy.Store
}

// Config selects tool groups and limits.
type Config struct {
	Tools         []string      // groups to enable; empty = all
	ProgressEvery time.Duration // progress notifications during waits, default 1s
	Logger        *slog.Logger
	// PTYResources serves the pty:// resources (SPEC PTY-2), with
	// list_pty and read_pty behind activate_pty_tools; false
	// (MCP_PTY_DEACTIVATE_RESOURCES=true) makes those two plain tools.
	PTYResources bool
	// Warm is called once the client has had the list of tools (and when a
	// tool is called): what start-up held back may run now (host: the
	// plugin load, the containment probes). Nil: nothing.
	Warm func()
	// AskPrograms are the local programs ask_secret types the person's
	// secret into (askgate.go): names looked up in PATH, or paths,
	// resolved to real executables when HTTP serving starts. nil:
	// DefaultAskPrograms; empty: none.
	AskPrograms []string
}

// Server is an MCP server bound to a session registry.
type Server struct {
	deps         Deps
	cfg          Config
	log          *slog.Logger
	mcp          *sdk.Server
	subs         subs      // resource subscriptions being watched
	ptyToolsOnce sync.Once // list_pty and read_pty registered
	ptyToolsOn   bool
	// tools are the raw handlers of every registered tool, for the stdio
	// transport's direct path (see Stdio.Tools).
	tools map[string]registeredTool
	// minted are the MCP sessions (HTTP, 2025-11-25 era) by id, each with
	// the token user that created it: the live view shows a token's
	// sessions (view.go).
	minted sync.Map
	// ask_secret (asksecret.go): registered once over HTTP; the pages
	// waiting for a secret; the base address of those pages.
	askOnce  sync.Once
	asks     asks
	httpBase atomic.Value // string
}

// New builds the server and registers the enabled tool groups.
func New(deps Deps, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	groups := cfg.Tools
	if len(groups) == 0 {
		groups = Groups
	}
	for _, g := range groups {
		if !slices.Contains(Groups, g) {
			return nil, fmt.Errorf("unknown tool group %q; available: %s", g, strings.Join(Groups, ", "))
		}
	}
	s := &Server{deps: deps, cfg: cfg, log: cfg.Logger}
	opts := &sdk.ServerOptions{
		Instructions: "Terminal sessions for agents: Telnet (telnet_*), SSH (ssh_execute, ssh_shell; credentials by id), " +
			"local programs under a PTY (launch_app, start_pty) and a screen behind every session (view_screen, send_keys, " +
			"wait_for). Wait with until/prompt/idleMs/screenStable instead of sleeping.",
		Logger: sdkLogger(cfg.Logger), // http.go
	}
	if slices.Contains(groups, "pty") && cfg.PTYResources {
		opts.SubscribeHandler, opts.UnsubscribeHandler = s.subscribe, s.unsubscribe
	}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "termhost", Version: Version}, opts)
	if cfg.Warm != nil {
		s.mcp.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				if method == "tools/call" {
					cfg.Warm()
				}
				res, err := next(ctx, method, req)
				if method == "tools/list" {
					cfg.Warm() // after the answer is made: the work waits no longer than that
				}
				return res, err
			}
		})
	}
	for _, g := range groups {
		switch g {
		case "telnet":
			s.addTelnetTools()
		case "tui":
			s.addTUITools()
			s.addSendKeys()
			s.addHandoverTools()
			s.addRecordTools()
			addTool(s, testerVoice, &sdk.Tool{
				Name:        "launch_app",
				Description: "Start a program under a PTY with a screen behind it. Returns session_id.",
				Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
			}, processBounds, s.launchApp)
		case "ssh":
			if deps.SSH != nil {
				s.addSSHTools()
			}
		case "pty":
			s.addPTYTools()
		case "devices":
			s.addDeviceTools()
		case "plugins":
			if deps.Plugins != nil {
				s.addPluginTools()
			}
		}
	}
	return s, nil
}

// MCP returns the underlying go-sdk server (for transports and tests).
func (s *Server) MCP() *sdk.Server { return s.mcp }

// RunStdio serves one client over stdin/stdout (see ServeStdio).
func (s *Server) RunStdio(ctx context.Context) error {
	in, restoreIn := pollable(os.Stdin, os.Stdout, os.Stderr)
	defer restoreIn()
	out, restoreOut := pollable(os.Stdout, os.Stdin, os.Stderr)
	defer restoreOut()
	return s.ServeStdio(ctx, in, out)
}

// ServeStdio serves one client over newline-delimited JSON-RPC on in and
// out until it goes away (end of input, after every request read is
// answered) or ctx is cancelled (SIGTERM); then every session ends (SPEC
// SES-4). Cancelling ends the sessions first, so calls waiting on them
// return at once, and waits at most a second for the calls in flight:
// go-sdk's Server.Run would wait for every one of them.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	defer s.deps.Sessions.Close()
	ss, err := s.mcp.Connect(ctx, &Stdio{In: in, Out: out, Logger: s.log, Tools: s.tool}, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		s.deps.Sessions.Close()
		ss.Close()
		select {
		case <-done:
		case <-time.After(time.Second):
			s.log.Warn("exiting with calls still in flight")
		}
		return ctx.Err()
	}
}

// registeredTool is a tool's name, as registered, and its raw handler.
type registeredTool struct {
	name string
	h    sdk.ToolHandler
}

// tool is the registered name and the handler of the tool called name:
// the name is the registry's own string, so reading a call allocates none.
func (s *Server) tool(name []byte) (string, sdk.ToolHandler, bool) {
	t, ok := s.tools[string(name)]
	return t.name, t.h, ok
}
