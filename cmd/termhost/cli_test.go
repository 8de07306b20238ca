package main

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/internal/devsim"
)

// runBinary runs the built termhost and returns its output and exit status.
func runBinary(t *testing.T, env []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	if env != nil {
		cmd.Env = append(cmd.Environ(), env...)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), status
}

// Every way of asking for help shows what the command does and its own
// flags on stdout, and succeeds.
func TestHelp(t *testing.T) {
	serveFlags := []string{"-write-timeout", "-max-wait", "-plugin-dir", "-cache-dir", "-log-level", "-max-sessions", "TERMHOST_WRITE_TIMEOUT", "-http", "-allow-remote", "$PORT"}
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"--help"}, []string{"serve", "demo", "plugins list", "version", "help [command]"}, nil},
		{[]string{"-h"}, []string{"serve", "demo", "plugins list"}, nil},
		{[]string{"help"}, []string{"serve", "demo", "plugins list"}, nil},
		{[]string{"serve", "--help"}, append([]string{"serve MCP over stdio", "Usage:\n  termhost serve [flags]"}, serveFlags...), []string{"-color"}},
		{[]string{"serve", "-h"}, serveFlags, nil},
		{[]string{"help", "serve"}, serveFlags, nil},
		{[]string{"demo", "-h"}, []string{"simulated router", "-color", "-cache-dir", "NO_COLOR"}, []string{"-write-timeout", "-max-sessions", "-tools", "-log-level"}},
		{[]string{"plugins", "list", "-h"}, []string{"list the plugins", "-plugin-dir", "-cache-dir", "-log-level"}, []string{"-write-timeout", "-max-sessions", "-color", "-tools"}},
		{[]string{"help", "plugins", "list"}, []string{"list the plugins", "-plugin-dir"}, nil},
		{[]string{"plugins", "--help"}, []string{"termhost plugins list"}, nil},
		{[]string{"version", "--help"}, []string{"print termhost's version"}, []string{"Flags:"}},
	} {
		stdout, stderr, status := runBinary(t, nil, tc.args...)
		if status != 0 || stderr != "" {
			t.Errorf("termhost %s: status %d, stderr %q", strings.Join(tc.args, " "), status, stderr)
		}
		if strings.Contains(stdout, "\n  -") && !strings.Contains(stdout, "\n  --") {
			t.Errorf("termhost %s: flags shown as -name, where the README writes --name:\n%s", strings.Join(tc.args, " "), stdout)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("termhost %s: %q: want --name", strings.Join(tc.args, " "), line)
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("termhost %s: no %q in:\n%s", strings.Join(tc.args, " "), w, stdout)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(stdout, n) {
				t.Errorf("termhost %s: shows another command's %q:\n%s", strings.Join(tc.args, " "), n, stdout)
			}
		}
	}
}

// Mistakes exit 2 with one clear line, not a page of usage.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"serv"}, `unknown command "serv"`},
		{nil, []string{"help", "nope"}, `unknown command "nope"`},
		{nil, []string{"plugins"}, `"plugins" needs a subcommand`},
		{nil, []string{"plugins", "remove"}, `unknown command "plugins remove"`},
		{nil, []string{"serve", "--nope"}, "serve: flag provided but not defined: -nope (see \"termhost serve --help\")"},
		{nil, []string{"demo", "--write-timeout", "1s"}, "demo: flag provided but not defined: -write-timeout"},
		{nil, []string{"serve", "extra"}, `serve: unexpected argument "extra"`},
		{nil, []string{"serve", "--write-timeout", "soon"}, `invalid value "soon" for flag -write-timeout`},
		{nil, []string{"serve", "--write-timeout", "0s"}, "write-timeout 0s: must be more than 0"},
		{[]string{"TERMHOST_WRITE_TIMEOUT=forever"}, []string{"serve"}, `environment TERMHOST_WRITE_TIMEOUT="forever"`},
		{nil, []string{"demo", "--color=sometimes"}, `invalid value "sometimes" for flag -color: expected auto, always or never`},
		{nil, []string{"serve", "--tools", "telnet,foo"}, `tools "foo": unknown tool group (known: telnet,ssh,pty,tui,devices,plugins)`},
		{[]string{"TERMHOST_TOOLS=pty,bar"}, []string{"serve"}, `tools "bar": unknown tool group`},
	} {
		stdout, stderr, status := runBinary(t, tc.env, tc.args...)
		if status != 2 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("termhost %s: status %d, stdout %q, stderr %q; want status 2 and %q", strings.Join(tc.args, " "), status, stdout, stderr, tc.want)
		}
		if strings.Count(stderr, "\n") > 1 {
			t.Errorf("termhost %s: more than one line on stderr:\n%s", strings.Join(tc.args, " "), stderr)
		}
	}
	// No command at all: the list of commands, on stderr.
	_, stderr, status := runBinary(t, nil)
	if status != 2 || !strings.Contains(stderr, "Commands:") || !strings.Contains(stderr, "no command given") {
		t.Errorf("termhost: status %d, stderr %q", status, stderr)
	}
}

// serveConfig parses serve's flags as termhost does and returns the host's
// Config.
func serveConfig(t *testing.T, args ...string) (host.Config, error) {
	t.Helper()
	fs := newFlags("serve")
	var o serveOptions
	o.register(fs)
	if err := fs.parse(args); err != nil {
		return host.Config{}, err
	}
	return o.config(nil)
}

func TestServeFlagsReachConfig(t *testing.T) {
	cfg, err := serveConfig(t)
	if err != nil || cfg.WriteTimeout != 10*time.Second || cfg.MaxWait != 5*time.Minute || cfg.MaxSessions != 100 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	t.Setenv("TERMHOST_WRITE_TIMEOUT", "3s")
	t.Setenv("TERMHOST_MAX_WAIT", "90s")
	t.Setenv("TERMHOST_TOOLS", "telnet")
	cfg, err = serveConfig(t)
	if err != nil || cfg.WriteTimeout != 3*time.Second || cfg.MaxWait != 90*time.Second || len(cfg.Tools) != 1 {
		t.Errorf("from the environment: %+v, %v", cfg, err)
	}
	// A flag wins over the environment.
	cfg, err = serveConfig(t, "--write-timeout", "250ms", "--max-wait=2s", "--max-sessions", "7")
	if err != nil || cfg.WriteTimeout != 250*time.Millisecond || cfg.MaxWait != 2*time.Second || cfg.MaxSessions != 7 {
		t.Errorf("flags: %+v, %v", cfg, err)
	}
	var ue usageError
	if _, err := serveConfig(t, "--max-wait", "-1s"); !errors.As(err, &ue) {
		t.Errorf("negative max-wait: %v", err)
	}
}

// holdingPeer accepts connections on loopback and never reads from them.
func holdingPeer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// --write-timeout reaches the sessions: a peer that stops reading fails a
// send after that long, with the time in the message.
func TestServeWriteTimeout(t *testing.T) {
	port := holdingPeer(t)
	cs := startServe(t, "--write-timeout", "300ms")
	id := mustCall(t, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	chunk := strings.Repeat("y", 1<<20)
	for i := 0; ; i++ {
		_, msg, isErr := call(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": chunk, "noNewline": true})
		if isErr {
			if !strings.Contains(msg, "300ms") {
				t.Fatalf("send failed with %q; want the 300ms write timeout", msg)
			}
			return
		}
		if i == 256 {
			t.Fatal("256 MiB sent to a peer that never reads")
		}
	}
}

// --max-wait caps a read's timeout, and the result says which one it used.
func TestServeMaxWait(t *testing.T) {
	h, port := startDevsim(t, devsim.Config{NoLogin: true, EOR: true})
	cs := startServe(t, "--max-wait", "400ms")
	id := mustCall(t, cs, "telnet_connect", map[string]any{"host": h, "port": port})["sessionId"].(string)
	start := time.Now()
	res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "until": "never-appears", "timeoutMs": 60000})
	if res["reason"] != "timeout" || res["timeoutMs"] != float64(400) || time.Since(start) > 30*time.Second {
		t.Fatalf("read: %v after %v; want a timeout after 400ms", res, time.Since(start))
	}
}

// The start line names the files in use by absolute path, wherever the
// server was started from (an MCP client picks the directory), and the
// hint for missing credentials names the directory too.
func TestStartLineNamesFiles(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "serve", "--cache-dir", cacheDir(), "--known-hosts", "kh")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.Stdin = strings.NewReader("")
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve with no input: %v\n%s", err, stderr.String())
	}
	var start string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "serving MCP over stdio") {
			start = l
		}
	}
	for _, want := range []string{"credentials=" + filepath.Join(dir, "credentials.json"), "rules=" + filepath.Join(dir, "rules.json"),
		"knownHosts=" + filepath.Join(dir, "kh")} {
		if !strings.Contains(start, want) {
			t.Errorf("start line %q: no %s", start, want)
		}
	}
}
