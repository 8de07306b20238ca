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
		&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: authClient}, &sdk.ClientSessionOptions{ProtocolVersion: eraLegacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	return &askHost{h: h, base: base, cs: cs, urls: urls, seen: seen, logs: logs, dir: dir}
}

// answer waits for the elicitation (or result ending the call first),
// checks its page and posts value on it.
func (a *askHost) answer(t *testing.T, result chan testutil.Result, field, value string) {
	t.Helper()
	var url string
	select {
	case url = <-a.urls:
	case r := <-result:
		t.Fatalf("the call returned without asking the person: %+v", r)
	case <-time.After(20 * time.Second):
		t.Fatal("no URL elicitation")
	}
	if !strings.HasPrefix(url, a.base+"/view/secret/") {
		t.Fatalf("elicitation URL %q", url)
	}
	if r, body := get(t, url, nil); r.StatusCode != 200 || !strings.Contains(body, field) || !strings.Contains(body, `type="password"`) {
		t.Fatalf("the page: %d %.400s", r.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("secret="+value))
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
