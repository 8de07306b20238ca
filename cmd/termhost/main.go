// Command termhost is an MCP server that gives AI agents terminals: Telnet
// sessions today, with a headless screen and plugins behind every session.
//
//	termhost serve              MCP over stdio (what Claude Code, Claude Desktop, VS Code, Cursor start)
//	termhost serve --http=      MCP over Streamable HTTP at http://127.0.0.1:4000/mcp
//	termhost view               print a one-time link to the live view of a running serve --http
//	termhost demo               drive the embedded device simulator through the real MCP tools
//	termhost plugins list       show the plugins this binary would load
//	termhost plugins pin FILE   print the --plugin-pin flag that allows a plugin file
//	termhost version
//	termhost help [command]
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/host/plugin"
	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/ssh"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/plugins"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "termhost:", err)
	var ue usageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}

// A command is one thing termhost does. flags registers the command's own
// flags and returns what runs once they are parsed.
type command struct {
	name    string // as typed: "serve", "plugins list"
	summary string // one line: what it does
	flags   func(fs *flags) func(stdout, stderr io.Writer) error
}

var commands = []command{
	{"serve", "serve MCP over stdio (what an MCP client such as Claude Code, Claude Desktop, VS Code or Cursor starts), or over Streamable HTTP with --http", serveFlags},
	{"view", "print a one-time link to the live view of a running serve --http (opens nothing)", viewFlags},
	{"demo", "drive an embedded simulated router through the real MCP tools, printing every call and result", demoFlags},
	{"plugins list", "list the plugins termhost would load: name, version, kind, sha256 and source", pluginsListFlags},
	{"plugins pin", "print the --plugin-pin flag that allows each plugin FILE given (its manifest name and sha256)", pluginsPinFlags},
	{"rec convert", "convert a recording: --v2 IN OUT writes asciicast v2", recConvertFlags},
	{"rec play", "replay a recording's output in this terminal with its timing (flags before FILE)", recPlayFlags},
	{"rec text", "print a recording's final screen as termhost's screen shows it (flags before FILE)", recTextFlags},
	{"version", "print termhost's version", versionFlags},
}

func usage(w io.Writer) {
	fmt.Fprint(w, "termhost — terminals for AI agents over MCP\n\nUsage:\n  termhost <command> [flags]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	fmt.Fprintf(tw, "  help [command]\tshow this list, or a command's flags\n")
	tw.Flush()
	fmt.Fprint(w, "\nRun \"termhost help <command>\" (or \"termhost <command> --help\") for a command's flags.\n")
}

// usageError is a mistake on the command line: termhost exits with status
// 2 rather than 1.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return usagef("no command given")
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 || args[0] != "help" {
			usage(stdout)
			return nil
		}
		// "help serve" is "serve --help"; "help plugins list" too.
		return run(append(args[1:], "--help"), stdout, stderr)
	case "-version", "--version":
		args = []string{"version"}
	}
	if args[0] == "rec" {
		if len(args) == 1 || isHelpFlag(args[1]) {
			if len(args) == 1 {
				return usagef(`"rec" needs a subcommand: "termhost rec convert --v2 IN OUT", "termhost rec play FILE" or "termhost rec text FILE"`)
			}
			fmt.Fprint(stdout, "Usage:\n  termhost rec convert --v2 IN OUT   write a recording as asciicast v2\n  termhost rec play [flags] FILE      replay it in this terminal\n  termhost rec text [flags] FILE      print its final screen\n")
			return nil
		}
		args = append([]string{"rec " + args[1]}, args[2:]...)
	}
	if args[0] == "plugins" {
		if len(args) == 1 || isHelpFlag(args[1]) {
			if len(args) == 1 {
				return usagef(`"plugins" needs a subcommand: "termhost plugins list" or "termhost plugins pin FILE..."`)
			}
			fmt.Fprint(stdout, "Usage:\n  termhost plugins list [flags]   list the plugins termhost would load\n  termhost plugins pin FILE...    print the --plugin-pin flag that allows each plugin file\n")
			return nil
		}
		args = append([]string{"plugins " + args[1]}, args[2:]...)
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.exec(args[1:], stdout, stderr)
		}
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return usagef("unknown command %q; the commands are %s, help (see \"termhost help\")", args[0], strings.Join(names, ", "))
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// exec parses the command's flags and runs it. Help goes to stdout and is
// not an error; a flag mistake is a usageError naming the command.
func (c command) exec(args []string, stdout, stderr io.Writer) error {
	fs := newFlags(c.name)
	action := c.flags(fs)
	err := fs.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(stdout, fs)
		return nil
	}
	if err != nil {
		return usageError{fmt.Errorf("%s: %w (see \"termhost %s --help\")", c.name, err, c.name)}
	}
	return action(stdout, stderr)
}

func (c command) help(w io.Writer, fs *flags) {
	fmt.Fprintf(w, "termhost %s: %s.\n\nUsage:\n  termhost %s", c.name, c.summary, c.name)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprint(w, " [flags]\n\nFlags:\n")
	// The flag package writes -name; the README and every message write
	// --name (both are accepted).
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if strings.HasPrefix(line, "  -") {
			line = "  --" + line[3:]
		}
		io.WriteString(w, line)
	}
}

// pluginOptions are the flags of every command that loads plugins.
type pluginOptions struct {
	pluginDir, cacheDir, guard string
	pins                       pinList
}

// pinList is the repeatable --plugin-pin NAME=SHA256; one value may hold
// several pins separated by commas (the environment variable's form).
type pinList map[string][]string

func (p *pinList) String() string {
	var out []string
	for name, shas := range *p {
		for _, sha := range shas {
			out = append(out, name+"="+sha)
		}
	}
	return strings.Join(out, ",")
}

func (p *pinList) Set(v string) error {
	for one := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(one) == "" {
			continue
		}
		name, sha, err := plugin.ParsePin(one)
		if err != nil {
			return err
		}
		if *p == nil {
			*p = pinList{}
		}
		(*p)[name] = append((*p)[name], sha)
	}
	return nil
}

func (o *pluginOptions) register(fs *flags) {
	fs.StringVar(&o.pluginDir, "plugin-dir", "", "`dir`ectory of extra or overriding .wasm plugins, hot reloaded")
	fs.env("plugin-dir", "TERMHOST_PLUGIN_DIR")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "compiled-plugin cache `dir`ectory (default <user cache dir>/termhost/wazero); \"off\" keeps compiled plugins in memory only")
	fs.env("cache-dir", "TERMHOST_CACHE_DIR")
	fs.StringVar(&o.guard, "plugin-guard", "all", `which plugins run with termination checks: "all", or "dir" (first-party plugins unguarded, ~6x faster)`)
	fs.env("plugin-guard", "TERMHOST_PLUGIN_GUARD")
	fs.Var(&o.pins, "plugin-pin", "allow the plugin file whose manifest name is NAME and sha256 is SHA256 (`NAME=SHA256`, repeatable; \"termhost plugins pin FILE\" prints it): needed to replace a first-party plugin; a pinned plugin is trusted with secrets")
	fs.env("plugin-pin", "TERMHOST_PLUGIN_PINS")
}

func (o *pluginOptions) config(log *slog.Logger) (host.Config, error) {
	if o.guard != "all" && o.guard != "dir" {
		return host.Config{}, usagef("plugin-guard %q: expected all or dir", o.guard)
	}
	return host.Config{
		Plugins: plugins.FS(), PluginDir: o.pluginDir, PluginPins: o.pins, CacheDir: o.cacheDir, Logger: log,
		UnguardedEmbedded: o.guard == "dir",
	}, nil
}

// makePluginDir creates the plugin directory serve was told to watch when
// it does not exist yet (the README's walkthrough starts the server before
// building the first plugin into it): only its owner may write it, as the
// plugin registry requires.
func makePluginDir(dir string, log *slog.Logger) error {
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or the registry says what is wrong with it
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("plugin-dir %s: %w", dir, err)
	}
	if log != nil {
		log.Info("created the plugin directory", "dir", dir)
	}
	return nil
}

// logOptions are the logging flags. Logs always go to stderr.
type logOptions struct {
	level string
	json  bool
}

func (o *logOptions) register(fs *flags, level string) {
	fs.StringVar(&o.level, "log-level", level, "`level`: debug, info, warn or error")
	fs.env("log-level", "LOG_LEVEL")
	fs.BoolVar(&o.json, "log-json", false, "log JSON lines")
	fs.envFunc("log-json", "LOG_FORMAT", "json", func(v string) string { return fmt.Sprint(v == "json") })
}

func (o *logOptions) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return nil, usagef("log level %q: expected debug, info, warn or error", o.level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if o.json {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// ownEnv is every environment variable termhost reads for itself (flag
// fallbacks, PORT, the SSH defaults) and those the seeds name for it: the
// one list of what programs started by termhost never inherit (SPEC
// TRUST-2). A name ending in "*" is a prefix. A Secret one may not reach a
// program through a tool's env argument either. A test checks that every
// flag's fallback variable is here.
var ownEnv = []host.EnvVar{
	{Name: "SSH_PASSPHRASE", Secret: true},
	{Name: "SSH_KEY_PATH"},
	{Name: "CREDENTIALS_FILE"},
	{Name: "RULES_FILE"},
	{Name: "KNOWN_HOSTS_FILE"},
	{Name: "PORT"},
	{Name: "LOG_LEVEL"},
	{Name: "LOG_FORMAT"},
	{Name: "SESSION_TIMEOUT"},
	{Name: "MAX_COMMANDS_PER_SESSION"},
	{Name: "SSH_CONNECTION_TIMEOUT"},
	{Name: "MCP_PROTOCOL_VERSION"},
	{Name: "MCP_PTY_DEACTIVATE_RESOURCES"},
	{Name: "TERMHOST_*"},
}

// softMemoryLimit is the Go heap size past which the collector runs more
// often (debug.SetMemoryLimit); not a cap: the server never fails for it.
const softMemoryLimit = 384 << 20

// serveOptions are serve's flags.
type serveOptions struct {
	plugins      pluginOptions
	log          logOptions
	tools        string
	maxSessions  int
	idleTimeout  time.Duration
	writeTimeout time.Duration
	maxWait      time.Duration
	noResources  bool
	credentials  string
	rules        string
	knownHosts   string
	noUserKnown  bool
	sshPerClient int
	sshPerCred   int
	ssh          sshOptions
	containment  string
	sandbox      string
	askPrograms  string
	http         httpOptions
	debug        debugOptions
	record       recordOptions
}

func (o *serveOptions) register(fs *flags) {
	o.plugins.register(fs)
	o.debug.register(fs)
	o.log.register(fs, "info")
	fs.StringVar(&o.tools, "tools", "", "comma-separated tool `groups` to enable: "+strings.Join(mcp.Groups, ",")+" (default all)")
	fs.env("tools", "TERMHOST_TOOLS")
	fs.IntVar(&o.maxSessions, "max-sessions", 100, "maximum live sessions")
	fs.env("max-sessions", "TERMHOST_MAX_SESSIONS")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 30*time.Minute, "close sessions idle this long")
	fs.env("idle-timeout", "TERMHOST_IDLE_TIMEOUT")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 10*time.Second, "fail a send when the peer has not taken the bytes within this long")
	fs.env("write-timeout", "TERMHOST_WRITE_TIMEOUT")
	fs.DurationVar(&o.maxWait, "max-wait", 5*time.Minute, "the longest any telnet_read waits (caps timeoutMs)")
	fs.env("max-wait", "TERMHOST_MAX_WAIT")
	fs.BoolVar(&o.noResources, "no-pty-resources", false, "serve list_pty and read_pty as tools instead of the pty:// resources")
	fs.env("no-pty-resources", "MCP_PTY_DEACTIVATE_RESOURCES")
	fs.StringVar(&o.credentials, "credentials", "credentials.json", "SSH credentials `file` (mode 600; reloaded on change)")
	fs.env("credentials", "CREDENTIALS_FILE")
	fs.StringVar(&o.rules, "rules", "rules.json", "command rules `file` checked before SSH commands (reloaded on change)")
	fs.env("rules", "RULES_FILE")
	fs.StringVar(&o.knownHosts, "known-hosts", secrets.DefaultKnownHosts(), "termhost's own known_hosts `file` (new host keys are recorded here)")
	fs.env("known-hosts", "KNOWN_HOSTS_FILE")
	fs.BoolVar(&o.noUserKnown, "no-user-known-hosts", false, "do not read ~/.ssh/known_hosts")
	fs.IntVar(&o.sshPerClient, "ssh-max-per-client", 5, "SSH connections one MCP session may have open")
	fs.env("ssh-max-per-client", "TERMHOST_SSH_MAX_PER_CLIENT")
	fs.IntVar(&o.sshPerCred, "ssh-max-per-credential", 3, "persistent ssh_execute sessions per credential")
	fs.env("ssh-max-per-credential", "TERMHOST_SSH_MAX_PER_CREDENTIAL")
	o.ssh.register(fs)
	fs.StringVar(&o.containment, "containment", "auto", `how every process a program starts is ended with its session: "cgroup" (a cgroup v2 per session, ended by cgroup.kill), "subreaper" (a child-subreaper wrapper per session), or "auto" (a cgroup where one can be created)`)
	fs.env("containment", "TERMHOST_CONTAINMENT")
	fs.StringVar(&o.sandbox, "sandbox", "auto", `hide the credentials file, its keys and termhost's other files from programs (a mount namespace): "auto" (where the system allows; a warning otherwise), "on" (refuse to start without it), "off"`)
	fs.env("sandbox", "TERMHOST_SANDBOX")
	// No environment variable: an inherited one must not widen where the
	// person's secrets go unseen.
	fs.StringVar(&o.askPrograms, "ask-programs", strings.Join(mcp.DefaultAskPrograms, ","), "comma-separated `programs` (names in PATH, or paths) "+
		"into which ask_secret may type the person's secret, compared by the real executable; empty: none (Telnet and SSH sessions only)")
	o.http.register(fs)
	o.record.register(fs)
}

// config checks the flags and builds the host's Config.
func (o *serveOptions) config(log *slog.Logger) (host.Config, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"idle-timeout", o.idleTimeout}, {"write-timeout", o.writeTimeout}, {"max-wait", o.maxWait}} {
		if d.v <= 0 {
			return host.Config{}, usagef("%s %v: must be more than 0", d.name, d.v)
		}
	}
	if o.maxSessions < 1 {
		return host.Config{}, usagef("max-sessions %d: must be at least 1", o.maxSessions)
	}
	cfg, err := o.plugins.config(log)
	if err != nil {
		return cfg, err
	}
	if err := makePluginDir(cfg.PluginDir, log); err != nil {
		return cfg, err
	}
	for _, t := range strings.Split(o.tools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			if !slices.Contains(mcp.Groups, t) {
				return host.Config{}, usagef("tools %q: unknown tool group (known: %s)", t, strings.Join(mcp.Groups, ","))
			}
			cfg.Tools = append(cfg.Tools, t)
		}
	}
	cfg.MaxSessions, cfg.IdleTimeout = o.maxSessions, o.idleTimeout
	// The plugins compile and the containment is probed once the client
	// has listed the tools (or calls one), a second after start at the
	// latest: on two cores they would otherwise slow initialize and
	// tools/list down several times.
	cfg.WarmupDelay = time.Second
	cfg.WriteTimeout, cfg.MaxWait = o.writeTimeout, o.maxWait
	cfg.NoPTYResources = o.noResources
	cfg.CredentialsFile, cfg.RulesFile, cfg.KnownHostsFile = o.credentials, o.rules, o.knownHosts
	if o.sshPerClient < 1 || o.sshPerCred < 1 {
		return host.Config{}, usagef("ssh-max-per-client and ssh-max-per-credential must be at least 1")
	}
	cfg.SSHLimits.PerOwner, cfg.SSHLimits.PerCredential = o.sshPerClient, o.sshPerCred
	if err := o.ssh.limits(&cfg.SSHLimits); err != nil {
		return host.Config{}, err
	}
	switch o.containment {
	case "auto", "cgroup", "subreaper":
	default:
		return host.Config{}, usagef("containment %q: expected auto, cgroup or subreaper", o.containment)
	}
	switch o.sandbox {
	case "auto", "on", "off":
	default:
		return host.Config{}, usagef("sandbox %q: expected auto, on or off", o.sandbox)
	}
	cfg.Containment, cfg.Sandbox, cfg.OwnEnv = o.containment, o.sandbox, ownEnv
	cfg.AskPrograms = []string{}
	for _, p := range strings.Split(o.askPrograms, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.AskPrograms = append(cfg.AskPrograms, p)
		}
	}
	if err := o.record.config(&cfg); err != nil {
		return host.Config{}, err
	}
	if !o.noUserKnown {
		cfg.UserKnownHosts = secrets.UserKnownHosts()
	}
	return cfg, nil
}

func serveFlags(fs *flags) func(stdout, stderr io.Writer) error {
	var o serveOptions
	o.register(fs)
	return func(_, stderr io.Writer) error {
		// A soft memory limit: the collector works harder as the heap
		// nears it instead of letting garbage (plugin memory that grew and
		// was copied, buffers of ended sessions) double the footprint.
		// GOMEMLIMIT overrides it.
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(softMemoryLimit)
		}
		// stdout carries only protocol (SPEC MCP-1): logs go to stderr.
		log, err := o.log.logger(stderr)
		if err != nil {
			return err
		}
		// A program of the same user cannot read termhost's environment
		// or memory (/proc/<pid>/environ, mem, ptrace); root still can.
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			log.Warn("cannot make termhost non-dumpable: programs of the same user can read its environment and memory", "reason", err.Error())
		}
		cfg, err := o.config(log)
		if err != nil {
			return err
		}
		rulesGiven := false
		fs.Visit(func(f *flag.Flag) { rulesGiven = rulesGiven || f.Name == "rules" })
		if err := checkRulesFile(o.rules, rulesGiven); err != nil {
			return err
		}
		if err := o.debug.check(); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := o.debug.serve(ctx, log); err != nil {
			return err
		}
		startGovernor(ctx, log)
		var ln net.Listener
		var token, tokenFile string
		var reused bool
		if o.http.on(fs) {
			if token, tokenFile, reused, err = o.http.auth(); err != nil {
				return err
			}
			if tokenFile != "" { // programs never read the token (SPEC TRUST-5)
				cfg.HiddenPaths = func() []string { return []string{tokenFile} }
			}
			if ln, err = o.http.listen(ctx); err != nil {
				return err
			}
			defer ln.Close()
		}
		h, err := host.New(ctx, cfg)
		if err != nil {
			return err
		}
		defer h.Close()
		// The plugins load while the client is answered; if an embedded
		// one cannot load, the server stops with that error.
		ctx, fail := context.WithCancelCause(ctx)
		defer fail(nil)
		go func() {
			if err := h.Ready(ctx); err != nil && ctx.Err() == nil {
				fail(err)
			}
		}()
		if ln != nil {
			url := "http://" + ln.Addr().String() + mcp.HTTPPath
			if token == "" {
				log.Warn("serving MCP over Streamable HTTP without authentication (--no-auth): any program or user on this machine can run programs as you through it",
					append([]any{"url", url, "version", mcp.Version}, filesInUse(h)...)...)
			} else {
				// The one line that shows the token (SPEC TRUST-5).
				log.Info("serving MCP over Streamable HTTP; clients send the header below (the token is also in the token file)",
					append([]any{"url", url, "version", mcp.Version, "header", "Authorization: Bearer " + token, "tokenFile", tokenFile, "reused", reused}, filesInUse(h)...)...)
			}
			err = h.MCP.RunHTTP(ctx, ln, mcp.HTTPOptions{AllowRemote: o.http.allowRemote, Token: token, NoAuth: token == ""})
		} else {
			log.Info("serving MCP over stdio", append([]any{"version", mcp.Version}, filesInUse(h)...)...)
			err = h.MCP.RunStdio(ctx)
		}
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
}

// sshOptions are the SSH flags whose environment variables seeds 001/002
// name: SESSION_TIMEOUT and SSH_CONNECTION_TIMEOUT in milliseconds,
// MAX_COMMANDS_PER_SESSION.
type sshOptions struct {
	sessionTimeout time.Duration
	connectTimeout time.Duration
	maxCommands    int
	warm           bool
}

func (o *sshOptions) register(fs *flags) {
	fs.DurationVar(&o.sessionTimeout, "ssh-session-timeout", 5*time.Minute, "close a persistent ssh_execute session, or a warm ephemeral connection, idle this long")
	fs.envFunc("ssh-session-timeout", "SESSION_TIMEOUT", "<ms>", millis)
	fs.IntVar(&o.maxCommands, "ssh-max-commands", 5, "commands per persistent ssh_execute session; the next one runs on a fresh connection in the same directory")
	fs.env("ssh-max-commands", "MAX_COMMANDS_PER_SESSION")
	fs.DurationVar(&o.connectTimeout, "ssh-connect-timeout", 10*time.Second, "give up connecting to an SSH server (dial, handshake, authentication) after this long")
	fs.envFunc("ssh-connect-timeout", "SSH_CONNECTION_TIMEOUT", "<ms>", millis)
	fs.BoolVar(&o.warm, "ssh-warm", true, "keep an ephemeral ssh_execute call's authenticated connection for the next ephemeral call of the same client on the same credential (each still gets a fresh channel); false: a connection per call")
	fs.env("ssh-warm", "TERMHOST_SSH_WARM")
}

// millis reads an environment variable the seeds give in milliseconds
// ("300000"); a Go duration ("5m") is taken as it is.
func millis(v string) string {
	v = strings.TrimSpace(v)
	if d := strings.TrimPrefix(v, "-"); d != "" && strings.Trim(d, "0123456789") == "" {
		return v + "ms"
	}
	return v
}

func (o *sshOptions) limits(l *ssh.Limits) error {
	if o.sessionTimeout <= 0 {
		return usagef("ssh-session-timeout %v (or SESSION_TIMEOUT): must be more than 0", o.sessionTimeout)
	}
	if o.connectTimeout <= 0 {
		return usagef("ssh-connect-timeout %v (or SSH_CONNECTION_TIMEOUT): must be more than 0", o.connectTimeout)
	}
	if o.maxCommands < 1 {
		return usagef("ssh-max-commands %d (or MAX_COMMANDS_PER_SESSION): must be at least 1", o.maxCommands)
	}
	l.IdleTimeout, l.ConnectTimeout, l.MaxCommands, l.NoWarm = o.sessionTimeout, o.connectTimeout, o.maxCommands, !o.warm
	return nil
}

// checkRulesFile refuses to start on a rules file that does not load, or
// on one named by --rules or RULES_FILE that does not exist: running
// without the rules the user asked for would be silent. The default
// ./rules.json may be absent (no rules; the store says so at INFO).
func checkRulesFile(path string, given bool) error {
	_, err := policy.LoadFile(path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) && !given:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("rules file %s does not exist (named by --rules or RULES_FILE): create it (rules.example.json is a start; {} means no rules) or leave the option out", path)
	}
	return fmt.Errorf("rules file %s does not load: %w", path, err)
}

func pluginsListFlags(fs *flags) func(stdout, stderr io.Writer) error {
	var po pluginOptions
	var lo logOptions
	po.register(fs)
	lo.register(fs, "warn") // the table is the output; rejected files still show
	return func(stdout, stderr io.Writer) error {
		log, err := lo.logger(stderr)
		if err != nil {
			return err
		}
		cfg, err := po.config(log)
		if err != nil {
			return err
		}
		cfg.NoPrograms = true
		h, err := host.New(context.Background(), cfg)
		if err != nil {
			return err
		}
		defer h.Close()
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tVERSION\tKIND\tSHA256\tSOURCE\tCURRENT\tTRUSTED\tSESSIONS")
		for _, p := range h.Plugins.List() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%v\t%d\n", p.Name, p.Version, p.Kind, p.SHA256[:16], p.Source, p.Current, p.Trusted, p.Sessions)
		}
		return tw.Flush()
	}
}

// pluginsPinFlags prints, for each plugin file, the flag that pins it:
// what a user adds to termhost's command line (or, comma-separated, to
// TERMHOST_PLUGIN_PINS) to load a rebuilt first-party plugin or to trust
// a drop-in with secrets.
func pluginsPinFlags(fs *flags) func(stdout, stderr io.Writer) error {
	fs.positional = true
	return func(stdout, _ io.Writer) error {
		if fs.NArg() == 0 {
			return usagef("plugins pin: name at least one plugin file (termhost plugins pin FILE...)")
		}
		for _, file := range fs.Args() {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			man, err := wasmhost.ReadManifest(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(stdout, "%s %s=%s\n", plugin.PinFlag, man.Name, hex.EncodeToString(sum[:]))
		}
		return nil
	}
}

func versionFlags(*flags) func(stdout, stderr io.Writer) error {
	return func(stdout, _ io.Writer) error {
		_, err := fmt.Fprintln(stdout, "termhost", mcp.Version)
		return err
	}
}

// flags is a command's flag set, with environment fallbacks: a variable
// that is set and non-empty stands in for a flag not given on the command
// line, and is checked like one.
type flags struct {
	*flag.FlagSet
	fallbacks []fallback
	// positional: the command takes arguments after its flags (fs.Args).
	positional bool
	bare       map[string]string // flags that may stand alone, and the value they then take
}

// alone lets flag name be given without a value (plain --color), meaning
// value; with a value it is checked like any other flag, so a wrong one is
// "invalid value", not the flag package's "invalid boolean value".
func (f *flags) alone(name, value string) {
	if f.bare == nil {
		f.bare = map[string]string{}
	}
	f.bare[name] = value
}

type fallback struct {
	flag, variable string
	value          func(string) string // the variable's value as the flag's
}

func newFlags(name string) *flags {
	fs := flag.NewFlagSet("termhost "+name, flag.ContinueOnError)
	// The caller reports errors and prints help, where it belongs.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{FlagSet: fs}
}

// env makes variable the fallback of flag name, and says so in its usage.
func (f *flags) env(name, variable string) {
	f.envFunc(name, variable, "", func(v string) string { return v })
}

// envFunc is env with the variable's value converted; shown is how the
// usage line spells the variable's meaningful value ("" for any).
func (f *flags) envFunc(name, variable, shown string, value func(string) string) {
	fl := f.Lookup(name)
	if shown != "" {
		variable += "=" + shown
	}
	fl.Usage += " (env " + variable + ")"
	variable, _, _ = strings.Cut(variable, "=")
	f.fallbacks = append(f.fallbacks, fallback{name, variable, value})
}

// parse parses args, then applies the environment fallbacks. A command
// takes no positional arguments.
func (f *flags) parse(args []string) error {
	if len(f.bare) > 0 {
		args = slices.Clone(args)
		for i, a := range args {
			if a == "--" {
				break
			}
			if v, ok := f.bare[strings.TrimLeft(a, "-")]; ok {
				args[i] = a + "=" + v
			}
		}
	}
	// A command's arguments may come before, between or after its flags
	// (`rec play FILE --speed 4`); after "--" everything is an argument.
	var pos []string
	for rest := args; ; {
		if err := f.Parse(rest); err != nil {
			return err
		}
		left := f.Args()
		if len(left) == 0 {
			break
		}
		if !f.positional {
			return fmt.Errorf("unexpected argument %q", left[0])
		}
		if k := len(rest) - len(left); k > 0 && rest[k-1] == "--" {
			pos = append(pos, left...) // after "--"
			break
		}
		pos, rest = append(pos, left[0]), left[1:]
	}
	if len(pos) > 0 {
		// Leave them as the flag set's arguments (flags set stay set).
		if err := f.Parse(append([]string{"--"}, pos...)); err != nil {
			return err
		}
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for _, fb := range f.fallbacks {
		v := os.Getenv(fb.variable)
		if given[fb.flag] || v == "" {
			continue
		}
		if err := f.Set(fb.flag, fb.value(v)); err != nil {
			return fmt.Errorf("environment %s=%q: %w", fb.variable, v, err)
		}
	}
	return nil
}

// filesInUse are the start line's attributes naming the files the server
// reads, by absolute path: the credentials, the rules and known_hosts.
func filesInUse(h *host.Host) []any {
	var out []any
	if h.SSH != nil {
		out = append(out, "credentials", h.SSH.Creds.Path(), "knownHosts", h.SSH.HostKeys.Path())
	}
	if h.Rules != nil {
		out = append(out, "rules", h.Rules.Path())
	}
	return out
}
