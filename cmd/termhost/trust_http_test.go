package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/testutil"
)

// Issue 16, items 9 and 10 over the built binary: HTTP needs the bearer
// token, and one client cannot see or reach another's sessions (SPEC
// TRUST-5). The slow-body bound is tested in process, where it can be
// made short (host/mcp/http_test.go: TestHTTPSlowBodies).

// TestHTTPIsolation: client A opens a session of each kind (a program
// under launch_app, one under start_pty, a Telnet session, each with a
// name); client B, with the same token but another MCP session, finds
// none of them — not in telnet_list, list_sessions, list_pty or
// pty://sessions/list, and not by id or name with any tool, resource or
// subscription: each answer is word for word the answer for a session
// that does not exist. B can take A's names for its own sessions, and
// A's sessions are untouched afterwards. Pairs of eras: a 2026-07-28
// client has no MCP session, so its owner is the token alone.
func TestHTTPIsolation(t *testing.T) {
	devHost, devPort := startDevsim(t, devsim.Config{EOR: true})
	srv := startHTTP(t)
	for _, pair := range []struct{ a, b string }{
		{eraLegacy, eraLegacy}, {eraLegacy, eraModern}, {eraModern, eraLegacy},
	} {
		t.Run(pair.a+"-vs-"+pair.b, func(t *testing.T) {
			a := connectEra(t, srv, pair.a, nil)
			updated := make(chan string, 64)
			b := connectEra(t, srv, pair.b, &sdk.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
					select {
					case updated <- r.Params.URI:
					default:
					}
				},
			})
			suffix := strings.ReplaceAll(pair.a+pair.b, "-", "")
			app := mustCall(t, a, "launch_app", map[string]any{"command": "cat", "name": "app" + suffix})["session_id"].(string)
			proc := mustCall(t, a, "start_pty", map[string]any{"command": "cat"})["processId"].(string)
			tel := mustCall(t, a, "telnet_connect", map[string]any{"host": devHost, "port": devPort, "name": "tel" + suffix})["sessionId"].(string)
			mustCall(t, a, "send_keys", map[string]any{"session_id": app, "text": "secret-of-a", "keys": "Enter"})

			// Nothing of A's in B's lists.
			for _, l := range []struct {
				tool string
				args map[string]any
			}{{"list_sessions", nil}, {"telnet_list", nil}} {
				res := mustCall(t, b, l.tool, l.args)
				if s := jsonText(res); strings.Contains(s, app) || strings.Contains(s, proc) || strings.Contains(s, tel) {
					t.Errorf("B's %s shows A's sessions: %s", l.tool, s)
				}
			}
			if s := readText(t, b, "pty://sessions/list"); strings.Contains(s, app) || strings.Contains(s, proc) {
				t.Errorf("B's pty://sessions/list shows A's processes: %s", s)
			}
			mustCall(t, b, "activate_pty_tools", nil)
			if s := jsonText(mustCall(t, b, "list_pty", nil)); strings.Contains(s, app) || strings.Contains(s, proc) {
				t.Errorf("B's list_pty shows A's processes: %s", s)
			}

			// Nothing of A's by id or name: each answer is the one for a
			// session that does not exist.
			const none = "01KQZZZZZZZZZZZZZZZZZZZZZZ"
			for _, c := range []struct {
				tool, field string
				ref         string
				args        map[string]any
			}{
				{"view_screen", "session_id", app, nil},
				{"view_screen", "session_id", "app" + suffix, nil},
				{"send_keys", "session_id", app, map[string]any{"text": "x"}},
				{"get_cursor_position", "session_id", app, nil},
				{"get_screen_size", "session_id", tel, nil},
				{"resize_terminal", "session_id", app, map[string]any{"cols": 10, "rows": 5}},
				{"restart_app", "session_id", app, nil},
				{"stop_app", "session_id", app, nil},
				{"stop_app", "session_id", "tel" + suffix, nil},
				{"wait_for", "session_id", app, map[string]any{"timeoutMs": 10}},
				{"share_session", "session_id", app, nil},
				{"telnet_send", "sessionId", tel, map[string]any{"command": "show version"}},
				{"telnet_send", "sessionId", "tel" + suffix, map[string]any{"command": "show version"}},
				{"telnet_read", "sessionId", tel, nil},
				{"telnet_read", "sessionId", app, nil},
				{"telnet_disconnect", "sessionId", tel, nil},
				{"kill_pty", "processId", proc, nil},
				{"read_pty", "processId", proc, nil},
				{"run_command", "sessionId", tel, map[string]any{"command": "show version"}},
			} {
				args := map[string]any{c.field: c.ref}
				for k, v := range c.args {
					args[k] = v
				}
				other := map[string]any{c.field: none}
				if !strings.HasPrefix(c.ref, "01") {
					other[c.field] = "none" + suffix
				}
				for k, v := range c.args {
					other[k] = v
				}
				got := answer(t, b, c.tool, args, c.ref)
				want := answer(t, b, c.tool, other, other[c.field].(string))
				if got != want {
					t.Errorf("B's %s on A's %s:\n got  %s\n want %s (the answer for a session that does not exist)", c.tool, c.ref, got, want)
				}
			}
			// Resources and subscriptions. go-sdk's 2026 client does not
			// report a refused subscriptions/listen, so what counts is that
			// no update comes while A's programs write, although B's own
			// subscription gets its updates.
			for _, uri := range []string{"pty://session/" + proc + "/output", "pty://session/" + app + "/output", "pty://session/" + app + "/status"} {
				if _, err := b.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri}); err == nil {
					t.Errorf("B reads %s", uri)
				}
				if err := b.Subscribe(context.Background(), &sdk.SubscribeParams{URI: uri}); err == nil && pair.b == eraLegacy {
					t.Errorf("B subscribes to %s", uri)
				}
			}
			mine := mustCall(t, b, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
			mineURI := "pty://session/" + mine + "/output"
			if err := b.Subscribe(context.Background(), &sdk.SubscribeParams{URI: mineURI}); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for try := 0; !seen[mineURI] && try < 20; try++ {
				mustCall(t, a, "send_keys", map[string]any{"session_id": app, "text": "more", "keys": "Enter"})
				mustCall(t, b, "send_keys", map[string]any{"session_id": mine, "text": "mine", "keys": "Enter"})
				timeout := time.After(500 * time.Millisecond)
			drain:
				for {
					select {
					case uri := <-updated:
						seen[uri] = true
					case <-timeout:
						break drain
					}
				}
			}
			if !seen[mineURI] {
				t.Fatal("B's own subscription got no update")
			}
			for uri := range seen {
				if uri != mineURI {
					t.Errorf("B got an update of %s", uri)
				}
			}
			mustCall(t, b, "stop_app", map[string]any{"session_id": mine})

			// B may use A's names for its own sessions.
			own := mustCall(t, b, "launch_app", map[string]any{"command": "cat", "name": "app" + suffix})["session_id"].(string)
			if own == app {
				t.Fatal("B got A's session back for its name")
			}
			mustCall(t, b, "stop_app", map[string]any{"session_id": "app" + suffix})

			// A's sessions are as they were.
			v := mustCall(t, a, "view_screen", map[string]any{"session_id": "app" + suffix})
			if !strings.Contains(screenOf(t, v), "secret-of-a") || v["session_id"] != app {
				t.Fatalf("A's session after B's attempts: %v", v)
			}
			if s := jsonText(mustCall(t, a, "telnet_list", nil)); !strings.Contains(s, tel) {
				t.Fatalf("A's telnet session is gone: %s", s)
			}
			mustCall(t, a, "kill_pty", map[string]any{"processId": proc})
			mustCall(t, a, "stop_app", map[string]any{"session_id": app})
			mustCall(t, a, "telnet_disconnect", map[string]any{"sessionId": tel})
		})
	}
}

// TestHTTPModernClientsShareTheToken: a 2026-07-28 client has no MCP
// session; two of them with the same token are one owner.
func TestHTTPModernClientsShareTheToken(t *testing.T) {
	srv := startHTTP(t)
	a := connectEra(t, srv, eraModern, nil)
	b := connectEra(t, srv, eraModern, nil)
	id := mustCall(t, a, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	mustCall(t, b, "view_screen", map[string]any{"session_id": id})
	mustCall(t, b, "stop_app", map[string]any{"session_id": id})
}

// TestHTTPShareClaim: A hands a session to B with share_session and
// claim_session; then B has it and A does not. A code works once, and a
// made-up one not at all.
func TestHTTPShareClaim(t *testing.T) {
	srv := startHTTP(t)
	a := connectEra(t, srv, eraLegacy, nil)
	b := connectEra(t, srv, eraLegacy, nil)
	id := mustCall(t, a, "launch_app", map[string]any{"command": "cat", "name": "handed"})["session_id"].(string)
	mustCall(t, a, "send_keys", map[string]any{"session_id": id, "text": "before-handover", "keys": "Enter"})
	code, _ := mustCall(t, a, "share_session", map[string]any{"session_id": "handed"})["code"].(string)
	if len(code) < 22 {
		t.Fatalf("share code %q: want at least 128 bits", code)
	}
	if _, _, isErr := call(t, b, "view_screen", map[string]any{"session_id": id}); !isErr {
		t.Fatal("sharing alone handed the session over")
	}
	got := mustCall(t, b, "claim_session", map[string]any{"code": code})
	if got["session_id"] != id || got["name"] != "handed" {
		t.Fatalf("claim_session: %v", got)
	}
	// The program's echo may still be on its way: wait for it as a client
	// would, through the claimed session.
	mustCall(t, b, "wait_for", map[string]any{"session_id": "handed", "until": "before-handover", "onScreen": true, "timeoutMs": 10000})
	v := mustCall(t, b, "view_screen", map[string]any{"session_id": "handed"})
	if !strings.Contains(screenOf(t, v), "before-handover") {
		t.Fatalf("B's view of the claimed session: %v", v)
	}
	if _, msg, isErr := call(t, a, "view_screen", map[string]any{"session_id": id}); !isErr || !strings.HasPrefix(msg, "SESSION_NOT_FOUND") {
		t.Fatalf("A after the handover: %v %s", isErr, msg)
	}
	if s := jsonText(mustCall(t, a, "list_sessions", nil)); strings.Contains(s, id) {
		t.Fatalf("A still lists the session: %s", s)
	}
	for _, c := range []string{code, "not-a-code-at-all-aaaaaaaaaaaa"} {
		if _, msg, isErr := call(t, a, "claim_session", map[string]any{"code": c}); !isErr || !strings.Contains(msg, "code") {
			t.Fatalf("claim_session %q: %v %s", c, isErr, msg)
		}
	}
	mustCall(t, b, "stop_app", map[string]any{"session_id": id})
}

// TestHTTPDeleteEndsSessions: a 2025-11-25 client that ends its MCP
// session (DELETE) ends its terminal sessions with it (SPEC MCP-2).
func TestHTTPDeleteEndsSessions(t *testing.T) {
	srv := startHTTP(t)
	a := connectEra(t, srv, eraLegacy, nil)
	marker := "termhost-delete-" + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "")
	mustCall(t, a, "launch_app", map[string]any{"command": "sh", "args": []string{"-c", "sleep 1000; : " + marker}})
	running := func() bool {
		out, _ := exec.Command("pgrep", "-f", marker).Output()
		return len(strings.TrimSpace(string(out))) > 0
	}
	if !testutil.Poll(5*time.Second, running) {
		t.Fatal("the program never started")
	}
	if err := a.Close(); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	if !testutil.Poll(10*time.Second, func() bool { return !running() }) {
		t.Fatal("the program outlived the DELETE of its MCP session")
	}
}

// TestHTTPAuth: without the token, or with a wrong one, every request
// gets 401 with a JSON body and WWW-Authenticate: Bearer; the token is
// generated at start into a 0600 file (directory 0700), printed once,
// reused by the next start, and a token file others can read is refused.
func TestHTTPAuth(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	file := filepath.Join(dir, "termhost", "token")
	srv := startHTTP(t, "--token-file", file, "--log-level", "debug")
	if len(srv.token) < 22 {
		t.Fatalf("token %q: want at least 128 bits, URL-safe", srv.token)
	}
	for path, want := range map[string]os.FileMode{file: 0o600, filepath.Dir(file): 0o700} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: %v %v, want mode %o", path, st.Mode(), err, want)
		}
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`
	modern := map[string]string{"Mcp-Protocol-Version": eraModern, "Mcp-Method": "tools/list"}
	for name, auth := range map[string]string{
		"no header":      "",
		"wrong token":    "Bearer " + strings.Repeat("A", len(srv.token)),
		"token prefix":   "Bearer " + srv.token[:len(srv.token)-1],
		"basic":          "Basic " + srv.token,
		"token, no type": srv.token,
	} {
		code, body, hdr := rawPost(t, srv.url, auth, list, modern)
		if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") ||
			!strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || !json.Valid([]byte(body)) {
			t.Errorf("%s: %d %q %v; want 401, JSON, WWW-Authenticate: Bearer", name, code, body, hdr)
		}
		if strings.Contains(body, srv.token) {
			t.Errorf("%s: the answer holds the token", name)
		}
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, srv.url, nil)
		req.Header.Set("Mcp-Session-Id", "x")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %v %v", method, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	if code, body, _ := rawPost(t, srv.url, "Bearer "+srv.token, list, modern); code != http.StatusOK || !strings.Contains(body, "launch_app") {
		t.Fatalf("with the token: %d %s", code, body)
	}
	for _, era := range []string{eraLegacy, eraModern} {
		if _, err := connectWith(srv.url, "", era, nil); err == nil {
			t.Errorf("%s: go-sdk's client connected without the token", era)
		}
		cs := connectEra(t, srv, era, nil)
		mustCall(t, cs, "list_sessions", nil)
	}
	logs := srv.logs.String()
	if n := strings.Count(logs, srv.token); n != 1 {
		t.Fatalf("the token appears %d times in the debug log, want once (the start line):\n%s", n, logs)
	}
	if !strings.Contains(logs, "Authorization: Bearer "+srv.token) {
		t.Fatalf("the start line does not show the header:\n%s", logs)
	}

	// The next start reuses the token (client configs keep working).
	srv.cmd.Process.Signal(os.Interrupt)
	<-srv.done
	srv.done <- nil
	again := startHTTP(t, "--token-file", file)
	if again.token != srv.token {
		t.Fatalf("a restart made a new token")
	}
	cs := connectEra(t, again, eraModern, nil)
	mustCall(t, cs, "list_sessions", nil)

	// A token file others can read is refused, as are a symlink and a
	// file that holds no token.
	loose := filepath.Join(t.TempDir(), "loose")
	os.WriteFile(loose, []byte(srv.token+"\n"), 0o644)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(file, link)
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	for _, f := range []string{loose, link, short} {
		out, err := exec.Command(binary, "serve", "--http", "127.0.0.1:0", "--cache-dir", "off", "--token-file", f).CombinedOutput()
		if err == nil || !strings.Contains(string(out), f) {
			t.Errorf("--token-file %s: %v %s; want a refusal naming the file", f, err, out)
		}
		if strings.Contains(string(out), srv.token) {
			t.Errorf("--token-file %s: the refusal shows the token", f)
		}
	}
	// TERMHOST_TOKEN_FILE names it too.
	envFile := filepath.Join(t.TempDir(), "from-env")
	cmd := exec.Command(binary, "serve", "--http", "127.0.0.1:0", "--cache-dir", "off")
	cmd.Env = append(os.Environ(), "TERMHOST_TOKEN_FILE="+envFile)
	if err := startAndStop(cmd); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(envFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("TERMHOST_TOKEN_FILE was not used: %v", err)
	}
}

// startAndStop runs cmd until it logs that it serves, then interrupts it.
func startAndStop(cmd *exec.Cmd) error {
	logs := &lockedWriter{b: &strings.Builder{}}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	served := testutil.Poll(20*time.Second, func() bool { return urlLine.MatchString(logs.String()) })
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	if !served {
		return errors.New("it did not start:\n" + logs.String())
	}
	return nil
}

// TestHTTPNoAuth: --no-auth serves without a token on loopback, with a
// warning; with a non-loopback address (which needs --allow-remote) it is
// refused.
func TestHTTPNoAuth(t *testing.T) {
	srv := startHTTP(t, "--no-auth")
	if !strings.Contains(srv.logs.String(), "level=WARN") || !strings.Contains(srv.logs.String(), "--no-auth") {
		t.Fatalf("no warning for --no-auth:\n%s", srv.logs)
	}
	for _, era := range []string{eraLegacy, eraModern} {
		cs := connectEra(t, srv, era, nil)
		mustCall(t, cs, "list_sessions", nil)
	}
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		out, err := exec.Command(binary, "serve", "--http", addr, "--allow-remote", "--no-auth", "--cache-dir", "off").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--no-auth") {
			t.Errorf("--http %s --allow-remote --no-auth: %v %s; want exit status 2 naming --no-auth", addr, err, out)
		}
	}
}

// rawPost posts body with an Authorization header auth ("" for none).
func rawPost(t *testing.T, url, auth, body string, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// answer is a tool's answer, error or not, with ref replaced by <ref>.
func answer(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, ref string) string {
	t.Helper()
	_, msg, isErr := call(t, cs, tool, args)
	if !isErr {
		// telnet_disconnect answers {"disconnected":false} for a session
		// it does not know.
		msg = "ok: " + msg
	}
	return strings.ReplaceAll(msg, ref, "<ref>")
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func readText(t *testing.T, cs *sdk.ClientSession, uri string) string {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	return res.Contents[0].Text
}

// TestHTTPTokenHiddenFromPrograms: a program the agent launches cannot
// read the token file (with it, it could act as any stateless client of
// this server).
func TestHTTPTokenHiddenFromPrograms(t *testing.T) {
	srv := startHTTP(t)
	a := connectEra(t, srv, eraLegacy, nil)
	token, err := os.ReadFile(srv.tokenFile)
	if err != nil || len(strings.TrimSpace(string(token))) < 22 {
		t.Fatalf("token file: %q %v", token, err)
	}
	if !testutil.Poll(10*time.Second, func() bool { return strings.Contains(srv.logs.String(), "sandbox:") }) {
		t.Fatal("no sandbox line in the log")
	}
	if strings.Contains(srv.logs.String(), `level=WARN msg="sandbox:`) {
		t.Skipf("no sandbox on this machine")
	}
	id := mustCall(t, a, "launch_app", map[string]any{"command": "cat", "args": []string{srv.tokenFile}})["session_id"].(string)
	mustCall(t, a, "wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 10000})
	out := screenOf(t, mustCall(t, a, "view_screen", map[string]any{"session_id": id}))
	if strings.Contains(out, strings.TrimSpace(string(token))) {
		t.Fatalf("a program read the token: %q", out)
	}
}
