package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/testutil"
)

// lockedBuf is a log sink the test reads while the host writes to it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// askHost starts a host (telnet, vt, dialect, ssh: the credentials)
// over HTTP with credentials creds, and an MCP client that takes URL
// elicitations: each URL it is sent comes on urls, every elicitation's
// params are kept in seen; logs is the host's log.
type askHost struct {
	h    *host.Host
	srv  *httptest.Server
	base string
	cs   *sdk.ClientSession
	urls chan string
	seen *strings.Builder
	logs *lockedBuf
	dir  string
}

func newAskHost(t *testing.T, creds string) *askHost {
	t.Helper()
	dir := t.TempDir()
	credFile := filepath.Join(dir, "credentials.json")
	if err := os.WriteFile(credFile, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	plugins := fstest.MapFS{}
	for _, p := range []string{"telnet/telnet.wasm", "vt/vt.wasm", "ssh/ssh.wasm", "dialect/dialect.wasm"} {
		b, err := os.ReadFile("../../plugins/" + p)
		if err != nil {
			t.Fatalf("plugin %s: %v", p, err)
		}
		plugins[p] = &fstest.MapFile{Data: b}
	}
	logs := &lockedBuf{}
	h, err := host.New(context.Background(), host.Config{Plugins: plugins, CacheDir: testCacheDir(), CredentialsFile: credFile,
		RecordDir: filepath.Join(dir, "rec"), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.MCP.HTTPHandler(mcp.HTTPOptions{Token: testToken}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		h.Close()
	})
	base := srv.URL
	waitPlugins(t, h)

	urls := make(chan string, 1)
	seen := &strings.Builder{}
	opts := &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			b, _ := json.Marshal(req.Params)
			seen.Write(b)
			urls <- req.Params.URL
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "elicit", Version: "1"}, opts).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, HTTPClient: authClient}, &sdk.ClientSessionOptions{ProtocolVersion: eraLegacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	return &askHost{h: h, srv: srv, base: base, cs: cs, urls: urls, seen: seen, logs: logs, dir: dir}
}

// closeSession DELETEs the client's MCP session as a client that closes
// it with a call in flight does (go-sdk's own Close first waits for its
// calls); it returns the DELETE's status, or -1.
func (a *askHost) closeSession(timeout time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, a.base+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", a.cs.ID())
	req.Header.Set("Mcp-Protocol-Version", eraLegacy)
	resp, err := authClient.Do(req)
	if err != nil {
		return -1
	}
	resp.Body.Close()
	return resp.StatusCode
}

// answer waits for the elicitation (or result ending the call first),
// checks its page and posts value on it.
func (a *askHost) answer(t *testing.T, result chan testutil.Result, field, value string) {
	t.Helper()
	url := a.elicited(t, result)
	r, body := get(t, url, nil)
	if r.StatusCode != 200 || !strings.Contains(body, field) || !strings.Contains(body, `type="password"`) {
		t.Fatalf("the page: %d %.400s", r.StatusCode, body)
	}
	form := "secret=" + value
	if strings.Contains(body, `name="confirm"`) { // the person trusts the destination the page shows
		form += "&confirm=yes"
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", a.base)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Sent into the session") {
		t.Fatalf("posting the %s: %d %.400s", field, resp.StatusCode, b)
	}
}

// waitPlugins waits (bounded) until the host's plugins are compiled: the
// first test of the package pays a cold cache (CI runs with a fresh one),
// which under -race on a loaded machine took longer than a call's 60 s.
func waitPlugins(t *testing.T, h *host.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := h.Plugins.Wait(ctx); err != nil {
		t.Fatalf("the plugins: %v", err)
	}
}

// elicited waits for the URL elicitation, or the result that ends the
// call first: within the call's own budget (the callers' 60 s), which a
// cold plugin cache under -race in a loaded CI run can take much of — a
// 20 s wait here once failed that way, and the login then waited on the
// closed client for the page's 10 minutes.
func (a *askHost) elicited(t *testing.T, result chan testutil.Result) string {
	t.Helper()
	var url string
	select {
	case url = <-a.urls:
	case r := <-result:
		t.Fatalf("the call returned without asking the person: %+v", r)
	case <-time.After(90 * time.Second):
		t.Fatal("no URL elicitation, and the call did not end")
	}
	if !strings.HasPrefix(url, a.base+"/view/secret/") {
		t.Fatalf("elicitation URL %q", url)
	}
	return url
}

// TestLoginAsksPerson (issue 21, item 3): telnet_connect with a
// password-only credential to a device whose login asks for a username:
// over HTTP, to a client that takes URL elicitations, the person is sent
// ask_secret's one-time page; what they post there is typed into the
// session and the login completes. The username typed appears in no MCP
// message, log line or recording.
func TestLoginAsksPerson(t *testing.T) {
	const user = "netops-Ask-4412"
	dev, err := devsim.Listen("127.0.0.1:0", devsim.Config{Username: user, Password: "termhost", NoColor: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	dh, dp, _ := net.SplitHostPort(dev.Addr())
	port, _ := strconv.Atoi(dp)
	creds := fmt.Sprintf(`{"version":"1.0","credentials":[{"id":"line","host":%q,"port":%d,"password":"dGVybWhvc3Q="}]}`, dh, port)
	a := newAskHost(t, creds)
	cs := a.cs
	result := make(chan testutil.Result, 1)
	go func() {
		result <- testutil.CallTool(cs, 60*time.Second, "telnet_connect", map[string]any{"credentialId": "line", "record": true, "dialect": "none"})
	}()
	a.answer(t, result, "username", user)
	var res testutil.Result
	select {
	case res = <-result:
	case <-time.After(30 * time.Second):
		t.Fatal("telnet_connect did not return after the person typed the username")
	}
	if res.Err != nil || res.IsError || !strings.Contains(res.Text, `"loggedIn":true`) {
		t.Fatalf("telnet_connect: %+v", res)
	}
	var out map[string]any
	json.Unmarshal([]byte(res.Text), &out)
	id, _ := out["sessionId"].(string)
	read := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "waitMs": 200})
	a.h.Close() // the recording flushed
	rec := ""
	if p, _ := out["recording"].(string); p != "" {
		rb, _ := os.ReadFile(p)
		rec = string(rb)
	} else {
		t.Fatalf("no recording: %v", out)
	}
	for what, text := range map[string]string{"elicitation": a.seen.String(), "result": res.Text, "read": fmt.Sprint(read), "log": a.logs.String(), "recording": rec} {
		if strings.Contains(text, user) {
			t.Fatalf("the username typed on the page is in the %s: %s", what, text)
		}
	}
}

// TestSetModeAsksPerson: set_mode to privileged with no credential on a
// device whose enable asks for a secret: over HTTP, to a client that
// takes URL elicitations, the person is asked on the one-time page; what
// they post is typed and the move completes. The secret appears in no
// MCP message or log line.
func TestSetModeAsksPerson(t *testing.T) {
	const enable = "en-Ask-5521"
	dev, err := devsim.Listen("127.0.0.1:0", devsim.Config{NoLogin: true, EnableSecret: enable, NoColor: true, PageLines: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	dh, dp, _ := net.SplitHostPort(dev.Addr())
	port, _ := strconv.Atoi(dp)
	a := newAskHost(t, `{"version":"1.0","credentials":[]}`)
	id := mustCall(t, a.cs, "telnet_connect", map[string]any{"host": dh, "port": port})["sessionId"].(string)
	// The prompt first: set_mode's dialect detects from it.
	if r := mustCall(t, a.cs, "telnet_read", map[string]any{"sessionId": id, "until": `edge-r1>\s*$`, "timeoutMs": 10000}); !strings.Contains(fmt.Sprint(r), "edge-r1>") {
		t.Fatalf("no prompt: %v", r)
	}
	result := make(chan testutil.Result, 1)
	go func() {
		result <- testutil.CallTool(a.cs, 60*time.Second, "set_mode", map[string]any{"sessionId": id, "mode": "privileged"})
	}()
	a.answer(t, result, "enable", enable)
	var res testutil.Result
	select {
	case res = <-result:
	case <-time.After(30 * time.Second):
		t.Fatal("set_mode did not return after the person typed the secret")
	}
	if res.Err != nil || res.IsError || !strings.Contains(res.Text, `"mode":"privileged"`) {
		t.Fatalf("set_mode: %+v", res)
	}
	read := mustCall(t, a.cs, "telnet_read", map[string]any{"sessionId": id, "waitMs": 200})
	for what, text := range map[string]string{"elicitation": a.seen.String(), "result": res.Text, "read": fmt.Sprint(read), "log": a.logs.String()} {
		if strings.Contains(text, enable) {
			t.Fatalf("the enable secret typed on the page is in the %s: %s", what, text)
		}
	}
}

// heldDevice is a device whose login asks for a username once release
// is closed; gone is closed when termhost drops the connection.
type heldDevice struct {
	addr                    string
	accepted, release, gone chan struct{}
}

func holdDevice(t *testing.T) *heldDevice {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &heldDevice{addr: ln.Addr().String(), accepted: make(chan struct{}), release: make(chan struct{}), gone: make(chan struct{})}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		close(d.accepted)
		select {
		case <-d.release:
		case <-stop:
			return
		}
		io.WriteString(c, "\r\nUser Access Verification\r\n\r\nUsername: ")
		io.Copy(io.Discard, c) // until termhost closes it
		close(d.gone)
	}()
	return d
}

func (d *heldDevice) creds() string {
	h, p, _ := net.SplitHostPort(d.addr)
	return fmt.Sprintf(`{"version":"1.0","credentials":[{"id":"line","host":%q,"port":%s,"password":"dGVybWhvc3Q="}]}`, h, p)
}

// within fails the test unless c is closed (or sends) within d.
func within[T any](t *testing.T, d time.Duration, what string, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
	panic("unreachable")
}

// TestLoginAskEndsWithMCPSession: the client closes its MCP session
// (DELETE) while a login waits on the person — before the elicitation went
// out, and with its page open — and the call ends at once: the DELETE is
// answered, the device's connection closes, and the HTTP server's Close
// returns, each within seconds. go-sdk's ServerSession.Close waits for the calls in
// flight without cancelling them; before the waits were bounded, this
// hung for the page's 10 minutes (a CI run, 15 min).
func TestLoginAskEndsWithMCPSession(t *testing.T) {
	for _, when := range []string{"before the elicitation", "page open"} {
		t.Run(when, func(t *testing.T) {
			dev := holdDevice(t)
			a := newAskHost(t, dev.creds())
			result := make(chan testutil.Result, 1)
			go func() {
				result <- testutil.CallTool(a.cs, 60*time.Second, "telnet_connect", map[string]any{"credentialId": "line", "dialect": "none"})
			}()
			within(t, 60*time.Second, "the device is dialed", dev.accepted)
			var url string
			if when == "page open" {
				close(dev.release)
				url = a.elicited(t, result)
			}
			deleted := make(chan int, 1)
			start := time.Now()
			go func() { deleted <- a.closeSession(60 * time.Second) }()
			if when != "page open" {
				time.Sleep(100 * time.Millisecond)
				close(dev.release) // the login asks while (or after) the session closes
			}
			if st := within(t, 20*time.Second, "the DELETE is answered", deleted); st/100 != 2 {
				t.Fatalf("the DELETE answered %d", st)
			}
			within(t, 10*time.Second, "the device's connection closes", dev.gone)
			t.Logf("the call ended %v after the DELETE", time.Since(start).Round(time.Millisecond))
			if url != "" {
				if r, _ := get(t, url, nil); r.StatusCode != http.StatusNotFound {
					t.Fatalf("the page outlived its MCP session: %d", r.StatusCode)
				}
			}
			srvClosed := make(chan struct{})
			go func() { a.srv.CloseClientConnections(); a.srv.Close(); close(srvClosed) }()
			within(t, 10*time.Second, "the HTTP server closes", srvClosed)
		})
	}
}

// TestLoginAskTimesOut: no person answers — the login's wait on the page
// ends at askWait (shortened here) with an error naming the field and how
// long it waited, rather than at the page's 10 minutes.
func TestLoginAskTimesOut(t *testing.T) {
	defer mcp.SetAskWait(1500 * time.Millisecond)()
	dev := holdDevice(t)
	close(dev.release)
	a := newAskHost(t, dev.creds())
	result := make(chan testutil.Result, 1)
	go func() {
		result <- testutil.CallTool(a.cs, 60*time.Second, "telnet_connect", map[string]any{"credentialId": "line", "dialect": "none"})
	}()
	url := a.elicited(t, result)
	start := time.Now()
	res := within(t, 30*time.Second, "telnet_connect ends", result)
	if res.Err != nil || !res.IsError || !strings.Contains(res.Text, "username") || !strings.Contains(res.Text, "no secret was typed on the page within 1.5s") {
		t.Fatalf("telnet_connect: %+v", res)
	}
	t.Logf("ended %v after the elicitation: %s", time.Since(start).Round(time.Millisecond), res.Text)
	within(t, 10*time.Second, "the device's connection closes", dev.gone)
	if r, _ := get(t, url, nil); r.StatusCode != http.StatusNotFound {
		t.Fatalf("the login's page outlived it: %d", r.StatusCode)
	}
}

// TestLoginWithoutElicitationNamesField (issue 21, item 3): over HTTP, a
// client that does not take URL elicitations gets the login's error naming
// the missing field and the credential, and what it can do with this
// client: ask_secret at the prompt of a session opened without the
// credential (before, it said to serve over --http, which it was).
func TestLoginWithoutElicitationNamesField(t *testing.T) {
	dev := holdDevice(t)
	close(dev.release)
	a := newAskHost(t, dev.creds())
	plain := connectHTTP(t, a.base+"/mcp", eraLegacy, nil)
	res := testutil.CallTool(plain, 60*time.Second, "telnet_connect", map[string]any{"credentialId": "line", "dialect": "none"})
	for _, want := range []string{`the device asked for a username, and credential "line" has none`, "does not take URL elicitations",
		"telnet_connect without credentialId and call ask_secret at the username prompt"} {
		if res.Err != nil || !res.IsError || !strings.Contains(res.Text, want) {
			t.Fatalf("telnet_connect without URL elicitation: want %q in %+v", want, res)
		}
	}
	t.Log(res.Text)
}

// askSession launches a program that asks for a code with echo off and
// says whether it got want: sh, which ask_secret types into only where
// the server's AskPrograms names it (newAskViewHost).
func askSession(t *testing.T, cs *sdk.ClientSession, want string) string {
	t.Helper()
	script := `while :; do stty -echo; printf 'Code: '; read -r pw; stty echo; echo; [ "$pw" = "` + want + `" ] && echo LOGGED-IN || echo WRONG; done`
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "sh", "args": []string{"-c", script}})["session_id"].(string)
	testutil.Eventually(t, 10*time.Second, "the program asks", func() bool { return strings.Contains(viewText(t, cs, id), "Code:") })
	return id
}

// postSecret types value on a secret page as the person would.
func postSecret(t *testing.T, base, url, value string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("secret="+value))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Sent into the session") {
		t.Fatalf("posting the secret: %d %.300s", resp.StatusCode, b)
	}
}

// TestAskSecretWaitsWithoutElicitation (issue 21, item 3): to a client
// without URL elicitation, ask_secret returns the page's address at once
// ("waiting"); a second call with the same prompt reuses that page (no new
// address) and waits for the person: "typed" once they have, at once if
// they already had; an error naming how long it waited when they did not
// (the page stays open); and the end of the terminal session ends the
// wait. Both eras: a stateful session, and 2026-07-28 requests.
func TestAskSecretWaitsWithoutElicitation(t *testing.T) {
	defer mcp.SetAskWait(2 * time.Second)()
	const secret = "w41t-Ask-9043"
	h, base := newAskViewHost(t, "sh") // askSession's program asks itself
	waitPlugins(t, h)
	for _, era := range []string{eraLegacy, eraModern} {
		t.Run(era, func(t *testing.T) {
			cs := connectHTTP(t, base+"/mcp", era, nil)
			ask := map[string]any{"prompt": "the MFA code"}
			first := func(id string) string {
				t.Helper()
				ask["sessionId"] = id
				out := mustCall(t, cs, "ask_secret", ask)
				url, _ := out["url"].(string)
				if out["status"] != "waiting" || !strings.HasPrefix(url, base+"/view/secret/") || !strings.Contains(fmt.Sprint(out["note"]), "again") {
					t.Fatalf("ask_secret without URL elicitation: %v", out)
				}
				return url
			}
			again := func() chan testutil.Result {
				c := make(chan testutil.Result, 1)
				args := map[string]any{"sessionId": ask["sessionId"], "prompt": ask["prompt"]}
				go func() { c <- testutil.CallTool(cs, 30*time.Second, "ask_secret", args) }()
				return c
			}

			// The person types while the second call waits.
			id := askSession(t, cs, secret)
			url := first(id)
			waiting := again()
			select {
			case r := <-waiting:
				t.Fatalf("the second call did not wait for the person: %+v", r)
			case <-time.After(300 * time.Millisecond):
			}
			postSecret(t, base, url, secret)
			if r := within(t, 10*time.Second, "the waiting call returns", waiting); r.Err != nil || r.IsError || !strings.Contains(r.Text, `"typed"`) || strings.Contains(r.Text, secret) {
				t.Fatalf("the waiting ask_secret: %+v", r)
			}
			testutil.Eventually(t, 10*time.Second, "the program took the secret", func() bool { return strings.Contains(viewText(t, cs, id), "LOGGED-IN") })

			// Nobody types: the wait ends naming its length; the page stays.
			id = askSession(t, cs, secret)
			url = first(id)
			r := within(t, 20*time.Second, "the waiting call gives up", again())
			if r.Err != nil || !r.IsError || !strings.Contains(r.Text, "no secret was typed on the page within 2s") || !strings.Contains(r.Text, "stays open") {
				t.Fatalf("the unanswered wait: %+v", r)
			}
			// The person types before the agent calls again: the next
			// call says so at once.
			postSecret(t, base, url, secret)
			if r := within(t, 10*time.Second, "the call after the person typed", again()); r.Err != nil || r.IsError || !strings.Contains(r.Text, `"typed"`) {
				t.Fatalf("ask_secret after the person typed: %+v", r)
			}
			// ... once: the next ask (at the program's next prompt) is a
			// new page.
			testutil.Eventually(t, 10*time.Second, "the program asks again", func() bool {
				v := viewText(t, cs, id)
				return strings.Contains(v, "LOGGED-IN") && strings.HasSuffix(strings.TrimRight(v, " \n"), "Code:")
			})
			if next := first(id); next == url {
				t.Fatal("a used page was offered again")
			}

			// The session ends while a call waits on its page.
			id = askSession(t, cs, secret)
			first(id)
			waiting = again()
			time.Sleep(200 * time.Millisecond)
			mustCall(t, cs, "stop_app", map[string]any{"session_id": id})
			if r := within(t, 10*time.Second, "the wait ends with the session", waiting); r.Err != nil || !r.IsError || !strings.Contains(r.Text, "ended") {
				t.Fatalf("the wait on an ended session: %+v", r)
			}
		})
	}
}
