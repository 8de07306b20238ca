package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termhost/termhost/internal/testutil"
)

// `termhost serve --http`, end to end: the built binary on a loopback port,
// go-sdk's client in both protocol eras, raw HTTP for the guards, and the
// official TypeScript clients. The transport's own tests (routing, SSE
// resumption with Last-Event-ID, orphans) are in host/mcp/http_test.go.

const (
	eraModern = "2026-07-28"
	eraLegacy = "2025-11-25"
)

// httpServer is a `termhost serve --http` process.
type httpServer struct {
	cmd       *exec.Cmd
	url       string // http://127.0.0.1:port/mcp
	token     string // the bearer token ("" with --no-auth)
	tokenFile string
	logs      *lockedWriter
	done      chan error // the process's exit
}

var urlLine = regexp.MustCompile(`serving MCP over Streamable HTTP.* url=(\S+)`)

// startHTTP starts the binary with --http on a free loopback port and
// waits for the address it logs. Unless args name a --token-file (or say
// --no-auth), the server gets a token file of its own in a temporary
// directory, which it fills at start; s.token is what it holds.
func startHTTP(t testing.TB, args ...string) *httpServer {
	t.Helper()
	s := &httpServer{logs: &lockedWriter{b: &strings.Builder{}}, done: make(chan error, 1)}
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--token-file="); ok {
			s.tokenFile = v
		} else if a == "--token-file" && i+1 < len(args) {
			s.tokenFile = args[i+1]
		}
	}
	if s.tokenFile == "" && !slices.Contains(args, "--no-auth") {
		s.tokenFile = filepath.Join(t.TempDir(), "termhost", "token")
		args = append([]string{"--token-file", s.tokenFile}, args...)
	}
	s.cmd = exec.Command(binary, append([]string{"serve", "--http", "127.0.0.1:0", "--cache-dir", cacheDir(), "--log-level", "info"}, args...)...)
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("termhost stderr:\n%s", s.logs)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := urlLine.FindStringSubmatch(s.logs.String()); m != nil {
			s.url = m[1]
			if s.tokenFile != "" {
				b, err := os.ReadFile(s.tokenFile)
				if err != nil {
					t.Fatalf("token file: %v", err)
				}
				s.token = strings.TrimSpace(string(b))
			}
			return s
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("termhost serve --http exited: %v\n%s", err, s.logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("termhost serve --http did not log its address\n%s", s.logs)
		}
	}
}

// connectEra connects go-sdk's client in an era, with the server's token.
func connectEra(t testing.TB, srv *httpServer, era string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	cs, err := connectWith(srv.url, srv.token, era, opts)
	if err != nil {
		t.Fatalf("connect in %s: %v", era, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectWith connects go-sdk's client in an era, sending token as the
// bearer token ("" sends none).
func connectWith(url, token, era string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return sdk.NewClient(&sdk.Implementation{Name: "e2e-http", Version: "1"}, opts).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: bearerClient(token)},
		&sdk.ClientSessionOptions{ProtocolVersion: era})
}

// bearerClient is an HTTP client that sends Authorization: Bearer token
// with every request ("" sends none).
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token, http.DefaultTransport}}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// TestHTTPServeBothEras: go-sdk's client in each era against the binary:
// discover or initialize, tools/list, launch_app of cat, send_keys,
// view_screen, a subscription that sees the output change; then the
// 2025-11-25 client leaves (DELETE), which ends its terminal session.
func TestHTTPServeBothEras(t *testing.T) {
	srv := startHTTP(t)
	ids := map[string]string{}
	for _, era := range []string{eraModern, eraLegacy} {
		t.Run(era, func(t *testing.T) {
			updated := make(chan string, 64)
			cs := connectEra(t, srv, era, &sdk.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
					select {
					case updated <- r.Params.URI:
					default:
					}
				},
			})
			if got := cs.InitializeResult().ProtocolVersion; got != era {
				t.Fatalf("negotiated %q, want %s", got, era)
			}
			if (cs.ID() != "") != (era == eraLegacy) {
				t.Fatalf("MCP session id %q in era %s", cs.ID(), era)
			}
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil || !strings.Contains(toolNames(tools), "view_screen") {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat", "cols": 80, "rows": 24})["session_id"].(string)
			ids[era] = id
			out := "pty://session/" + id + "/output"
			if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: out}); err != nil {
				t.Fatal(err)
			}
			// A 2025-era client gets the update on its standalone GET stream,
			// which it opens in the background after initialize: an update
			// sent before it is up is not replayed. Type until one arrives.
			got := ""
			for try := 0; got == "" && try < 20; try++ {
				mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "typed-" + era, "keys": "Enter"})
				select {
				case got = <-updated:
				case <-time.After(500 * time.Millisecond):
				}
			}
			if got != out {
				t.Fatalf("notifications/resources/updated: got %q, want %s", got, out)
			}
			r := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "until": "typed-" + era, "onScreen": true, "timeoutMs": 10000})
			if r["reason"] != "matched" {
				t.Fatalf("wait_for: %v", r)
			}
			if v := mustCall(t, cs, "view_screen", map[string]any{"session_id": id}); !strings.Contains(screenOf(t, v), "typed-"+era) {
				t.Fatalf("view_screen: %v", v)
			}
			if era == eraLegacy {
				if err := cs.Close(); err != nil { // DELETE /mcp
					t.Fatalf("close (DELETE): %v", err)
				}
			}
		})
	}
	// The legacy client's terminal session ended with its MCP session;
	// the modern client's is there for the token's next client.
	if !testutil.Poll(10*time.Second, func() bool {
		return strings.Contains(srv.logs.String(), "MCP session deleted by its client; its terminal sessions were stopped")
	}) {
		t.Fatal("no log of the deleted MCP session's terminal sessions")
	}
	cs := connectEra(t, srv, eraModern, nil)
	if _, msg, isErr := call(t, cs, "view_screen", map[string]any{"session_id": ids[eraLegacy]}); !isErr || !strings.HasPrefix(msg, "SESSION_NOT_FOUND") {
		t.Fatalf("the deleted MCP session's terminal session: %v %s", isErr, msg)
	}
	if v := mustCall(t, cs, "view_screen", map[string]any{"session_id": ids[eraModern]}); !strings.Contains(screenOf(t, v), "typed-"+eraModern) {
		t.Fatalf("the modern client's session: %v", v)
	}
}

func toolNames(res *sdk.ListToolsResult) string {
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}

// TestHTTPServeGuards: Host and Origin must be localhost (403), bodies are
// capped at 4 MiB (413), the stateless era needs no session id.
func TestHTTPServeGuards(t *testing.T) {
	srv := startHTTP(t)
	post := func(body string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+srv.token)
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`
	modern := map[string]string{"Mcp-Protocol-Version": eraModern, "Mcp-Method": "tools/list"}
	if code, body := post(list, modern); code != http.StatusOK || !strings.Contains(body, "launch_app") {
		t.Fatalf("stateless tools/list without a session: %d %s", code, body)
	}
	for name, hdr := range map[string]map[string]string{
		"foreign Origin": {"Origin": "https://evil.example", "Mcp-Protocol-Version": eraModern},
		"foreign Host":   {"Host": "evil.example:4000", "Mcp-Protocol-Version": eraModern},
	} {
		if code, body := post(list, hdr); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", name, code, body)
		}
	}
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`
	if code, _ := post(big, modern); code != http.StatusRequestEntityTooLarge {
		t.Errorf("5 MiB body: %d, want 413", code)
	}
	if code, _ := post(big, nil); code != http.StatusRequestEntityTooLarge {
		t.Errorf("5 MiB body without headers: %d, want 413", code)
	}
}

// TestHTTPServeBind: a non-loopback --http address is refused without
// --allow-remote, with a message that says how; PORT gives the port when
// --http names none.
func TestHTTPServeBind(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:4000"} {
		out, err := exec.Command(binary, "serve", "--http", addr, "--cache-dir", "off").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--allow-remote") {
			t.Errorf("--http %s: %v %s; want exit status 2 naming --allow-remote", addr, err, out)
		}
	}
	for _, c := range []struct {
		addr, port string
		ok         bool
	}{
		{"", "0", true}, {":0", "", true}, {"127.0.0.1", "0", true}, {"localhost:0", "", true},
		{"", "notaport", false}, {"127.0.0.1:99999", "", false},
	} {
		o := httpOptions{addr: c.addr}
		t.Setenv("PORT", c.port)
		addr, err := o.resolve(context.Background())
		if (err == nil) != c.ok {
			t.Errorf("--http %q PORT=%q: %q %v", c.addr, c.port, addr, err)
		}
	}
	t.Setenv("PORT", "")
	if addr, _ := (&httpOptions{}).resolve(context.Background()); addr != "127.0.0.1:4000" {
		t.Errorf("default address %q, want 127.0.0.1:4000", addr)
	}
	t.Setenv("PORT", "4567")
	if addr, _ := (&httpOptions{addr: "localhost"}).resolve(context.Background()); addr != "localhost:4567" {
		t.Errorf("PORT: address %q, want localhost:4567", addr)
	}
	if addr, err := (&httpOptions{addr: "0.0.0.0:1", allowRemote: true}).resolve(context.Background()); err != nil || addr != "0.0.0.0:1" {
		t.Errorf("--allow-remote: %q %v", addr, err)
	}
}

// TestHTTPServeShutdown: SIGTERM with a client connected (its SSE stream
// open) and a program running: the server stops the program and exits 0
// within about two seconds.
func TestHTTPServeShutdown(t *testing.T) {
	srv := startHTTP(t)
	cs := connectEra(t, srv, eraLegacy, nil)
	marker := fmt.Sprintf("termhost-http-shutdown-%d", time.Now().UnixNano())
	mustCall(t, cs, "launch_app", map[string]any{"command": "sh", "args": []string{"-c", "sleep 1000; : " + marker}})
	running := func() bool {
		out, _ := exec.Command("pgrep", "-f", marker).Output()
		return len(strings.TrimSpace(string(out))) > 0
	}
	for deadline := time.Now().Add(5 * time.Second); !running(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the program never showed up in the process table")
		}
	}
	start := time.Now()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-srv.done:
		srv.done <- err
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5 s after SIGTERM")
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("shutdown took %v", took)
	}
	if running() {
		t.Fatal("the program outlived the server")
	}
}

// TestHTTPTypeScriptClients: the official TypeScript clients against the
// binary — @modelcontextprotocol/sdk 1.x (2025-11-25) and
// @modelcontextprotocol/client 2.x (2026-07-28), pinned in
// internal/tsclients — passing the bearer token as their users configure
// it (requestInit: { headers }). Skipped without node and npm, except in
// CI.
func TestHTTPTypeScriptClients(t *testing.T) {
	dir := tsClients(t)
	srv := startHTTP(t)
	for _, c := range []struct{ script, era string }{{"legacy.mjs", eraLegacy}, {"modern.mjs", eraModern}} {
		t.Run(c.script, func(t *testing.T) {
			res := runTSClient(t, dir, c.script, c.era, []string{"TERMHOST_TOKEN=" + srv.token}, srv.url)
			if !res.Unauthorized {
				t.Fatalf("%s connected without the token", c.script)
			}
			switch c.era {
			case eraLegacy:
				if res.MCPSessionID == "" || !res.Terminated {
					t.Fatalf("2025-11-25: MCP session %q, terminated %v", res.MCPSessionID, res.Terminated)
				}
			case eraModern:
				if res.MCPSessionID != "" || res.Era != "modern" {
					t.Fatalf("2026-07-28: MCP session %q, era %q", res.MCPSessionID, res.Era)
				}
			}
		})
	}
}

// TestStdioTypeScriptClients: the same official TypeScript clients over
// stdio, as the MCP hosts start a server: every step of the HTTP test, a
// program left running, then the client's own close (stdin closed, SIGTERM
// 2 s later, SIGKILL 2 s after that). The server must exit cleanly and
// take the program with it.
func TestStdioTypeScriptClients(t *testing.T) {
	dir := tsClients(t)
	for _, c := range []struct{ script, era string }{{"legacy.mjs", eraLegacy}, {"modern.mjs", eraModern}} {
		t.Run(c.script, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			res := runTSClient(t, dir, c.script, c.era, nil, binary, cacheDir(), pidFile)
			t.Logf("%s: the client's close took %d ms", c.script, res.CloseMs)
			if res.ExitCode == nil || *res.ExitCode != 0 || res.Signal != "" {
				t.Errorf("the server did not exit cleanly on the client's close: exit code %v, signal %q", res.ExitCode, res.Signal)
			}
			if len(res.SignalsSent) > 0 {
				t.Errorf("the server did not exit when its stdin closed: the client had to send %v", res.SignalsSent)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the lingering program never wrote its pid: %v", err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if pid <= 0 {
				t.Fatalf("pid file: %q", b)
			}
			if !testutil.Poll(5*time.Second, func() bool { return len(alive([]int{pid})) == 0 }) {
				t.Errorf("the program the client left running (pid %d) outlived the server", pid)
			}
		})
	}
}

// tsResult is what a script in internal/tsclients prints (common.mjs).
type tsResult struct {
	OK              bool
	Error           string
	ProtocolVersion string
	Era             string
	MCPSessionID    string
	Tools           int
	HasLaunchApp    bool
	SessionID       string
	Updated         string
	WaitReason      string
	ScreenHasText   bool
	Terminated      bool
	// HTTP only: a connection without the token was refused (401).
	Unauthorized bool
	// stdio only: the program left running, and the client's close.
	CloseMs     int
	ExitCode    *int
	Signal      string
	SignalsSent []string
}

// runTSClient runs one client script in dir with args (and env added to
// the environment: TERMHOST_TOKEN, the bearer token) and checks the
// steps every script takes (common.mjs: steps) in protocol era.
func runTSClient(t *testing.T, dir, script, era string, env []string, args ...string) tsResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res tsResult
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("node %s: %v %v\nstdout: %s\nstderr: %s", script, err, jerr, out, stderr.String())
	}
	if !res.OK {
		t.Fatalf("node %s failed: %s\nstderr: %s", script, res.Error, stderr.String())
	}
	if res.ProtocolVersion != era || !res.HasLaunchApp || res.Tools < 10 || res.SessionID == "" ||
		res.Updated != "pty://session/"+res.SessionID+"/output" || res.WaitReason != "matched" || !res.ScreenHasText {
		t.Fatalf("node %s: %s", script, out)
	}
	return res
}

// tsClients installs internal/tsclients (npm ci, from its lockfile) into a
// cache directory keyed by the lockfile's hash, and copies the scripts
// there; it returns that directory.
func tsClients(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		testutil.NeedProgram(t, tool)
	}
	// @modelcontextprotocol/client 2.x needs node 20 or later.
	if v, err := exec.Command("node", "--version").Output(); err == nil {
		var major int
		fmt.Sscanf(string(v), "v%d", &major)
		if major < 20 {
			testutil.SkipUnlessCI(t, "node %s is too old: the TypeScript client 2.x needs node 20 or later", strings.TrimSpace(string(v)))
		}
	}
	src := filepath.Join("..", "..", "internal", "tsclients")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(filepath.Dir(cacheDir()), "tsclients-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "*"))
	for _, f := range files {
		if filepath.Base(f) == "node_modules" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(dir, "node_modules", ".installed")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		if testutil.InCI() {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
		t.Skipf("npm ci failed (no registry?): %v\n%s", err, lastLines(string(out), 5))
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
