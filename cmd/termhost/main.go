// Command termhost is an MCP server that gives AI agents terminals: Telnet
// sessions today, with a headless screen and plugins behind every session.
//
//	termhost serve              MCP over stdio (what Claude Code, Claude Desktop, VS Code, Cursor start)
//	termhost demo               drive the embedded device simulator through the real MCP tools
//	termhost plugins list       show the plugins this binary would load
//	termhost version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/plugins"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "termhost:", err)
		os.Exit(1)
	}
}

const usage = `termhost — terminals for AI agents over MCP

Usage:
  termhost serve [flags]         serve MCP over stdio
  termhost demo [flags]          run the embedded device simulator through the MCP tools
  termhost plugins list [flags]  list the plugins that would be loaded
  termhost version

Run "termhost <command> -h" for the flags of a command.
`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "demo":
		return demo(args[1:], stdout, stderr)
	case "plugins":
		if len(args) < 2 || args[1] != "list" {
			return errors.New(`unknown plugins command; use "termhost plugins list"`)
		}
		return pluginsList(args[2:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "termhost", mcp.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// common are the flags every command shares, with environment fallbacks.
type common struct {
	pluginDir, cacheDir, logLevel string
	logJSON                       bool
	tools                         string
	guard                         string
	maxSessions                   int
	idleTimeout                   time.Duration
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.pluginDir, "plugin-dir", env("TERMHOST_PLUGIN_DIR", ""), "directory of extra/overriding .wasm plugins, hot reloaded (env TERMHOST_PLUGIN_DIR)")
	fs.StringVar(&c.cacheDir, "cache-dir", env("TERMHOST_CACHE_DIR", ""), `compiled-plugin cache directory; "off" disables (env TERMHOST_CACHE_DIR)`)
	fs.StringVar(&c.logLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env LOG_LEVEL)")
	fs.BoolVar(&c.logJSON, "log-json", env("LOG_FORMAT", "") == "json", "log JSON lines (env LOG_FORMAT=json)")
	fs.StringVar(&c.tools, "tools", env("TERMHOST_TOOLS", ""), "comma-separated tool groups to enable: "+strings.Join(mcp.Groups, ",")+" (default all; env TERMHOST_TOOLS)")
	fs.StringVar(&c.guard, "plugin-guard", env("TERMHOST_PLUGIN_GUARD", "all"), `which plugins run with termination checks: "all", or "dir" (first-party plugins unguarded, ~6x faster) (env TERMHOST_PLUGIN_GUARD)`)
	fs.IntVar(&c.maxSessions, "max-sessions", 100, "maximum live sessions")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 30*time.Minute, "close sessions idle this long")
}

func (c *common) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("log level %q: expected debug, info, warn or error", c.logLevel)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if c.logJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

func (c *common) config(log *slog.Logger) (host.Config, error) {
	if c.guard != "all" && c.guard != "dir" {
		return host.Config{}, fmt.Errorf("plugin-guard %q: expected all or dir", c.guard)
	}
	var tools []string
	for _, t := range strings.Split(c.tools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tools = append(tools, t)
		}
	}
	return host.Config{
		Plugins: plugins.FS(), PluginDir: c.pluginDir, CacheDir: c.cacheDir, Tools: tools,
		MaxSessions: c.maxSessions, IdleTimeout: c.idleTimeout, Logger: log,
		UnguardedEmbedded: c.guard == "dir",
	}, nil
}

func serve(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	// stdout carries only protocol (SPEC MCP-1): logs go to stderr.
	log, err := c.logger(stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := c.config(log)
	if err != nil {
		return err
	}
	h, err := host.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer h.Close()
	log.Info("serving MCP over stdio", "version", mcp.Version)
	err = h.MCP.RunStdio(ctx)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func pluginsList(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	if _, set := os.LookupEnv("LOG_LEVEL"); !set {
		c.logLevel = "warn" // the table is the output; rejected files still show
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := c.logger(stderr)
	if err != nil {
		return err
	}
	cfg, err := c.config(log)
	if err != nil {
		return err
	}
	h, err := host.New(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer h.Close()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tKIND\tSHA256\tSOURCE\tCURRENT\tSESSIONS")
	for _, p := range h.Plugins.List() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%d\n", p.Name, p.Version, p.Kind, p.SHA256[:16], p.Source, p.Current, p.Sessions)
	}
	return tw.Flush()
}
