package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/host/session"
)

// The Streamable HTTP transport in process, under the race detector:
// go-sdk's client in both protocol eras against one handler. The built
// binary's tests (cmd/termhost/http_test.go) cover the flags, the real
// screen, the TypeScript clients and shutdown.

const (
	eraModern = "2026-07-28"
	eraLegacy = "2025-11-25"
)

// testToken is the bearer token of the test servers; authClient sends it.
var testToken = mcp.NewToken()

var authClient = &http.Client{Transport: bearer{}}

// bearer sends Authorization: Bearer testToken unless the request has an
// Authorization header.
type bearer struct{}

func (bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+testToken)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// newHTTPHost starts a host (telnet plugin only: these tests need no
// screen) behind an httptest server; it returns the host and /mcp's URL.
// The server wants testToken unless opts say otherwise.
func newHTTPHost(t *testing.T, opts mcp.HTTPOptions) (*host.Host, string) {
	t.Helper()
	if opts.Token == "" && !opts.NoAuth {
		opts.Token = testToken
	}
	h, err := host.New(context.Background(), host.Config{Plugins: os.DirFS("../../plugins/telnet"), CacheDir: testCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.MCP.HTTPHandler(opts))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		h.Close()
	})
	return h, srv.URL + mcp.HTTPPath
}

// connectHTTP connects go-sdk's client in an era; updated receives the URIs
// of notifications/resources/updated.
func connectHTTP(t *testing.T, url, era string, updated chan<- string) *sdk.ClientSession {
	t.Helper()
	opts := &sdk.ClientOptions{}
	if updated != nil {
		opts.ResourceUpdatedHandler = func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- r.Params.URI:
			default:
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "1"}, opts).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: authClient}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect (%s): %v", era, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func readResourceText(t *testing.T, cs *sdk.ClientSession, uri string) string {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	return res.Contents[0].Text
}

func TestHTTPBothEras(t *testing.T) {
	h, url := newHTTPHost(t, mcp.HTTPOptions{})
	for _, era := range []string{eraModern, eraLegacy} {
		t.Run(era, func(t *testing.T) {
			updated := make(chan string, 64)
			cs := connectHTTP(t, url, era, updated)
			if stateful := cs.ID() != ""; stateful != (era == eraLegacy) {
				t.Fatalf("MCP session id %q in era %s", cs.ID(), era)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != era {
				t.Fatalf("negotiated %q, want %s", got, era)
			}
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(tools.Tools) < 10 {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
			if era == eraLegacy && !h.Sessions.Owns(cs.ID(), id) {
				t.Fatalf("the session is not the MCP session's %q", cs.ID())
			}
			if h.Sessions.Owns("", id) {
				t.Fatal("the session is the stdio client's")
			}
			out := "pty://session/" + id + "/output"
			if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: out}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			// A 2025-era client gets the update on its standalone GET stream,
			// which it opens in the background after initialize: an update
			// sent before it is up is not replayed. Type until one arrives.
			got := ""
			for try := 0; got == "" && try < 20; try++ {
				mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "over-http\r"})
				select {
				case got = <-updated:
				case <-time.After(500 * time.Millisecond):
				}
			}
			if got != out {
				t.Fatalf("notifications/resources/updated: got %q, want %s", got, out)
			}
			if text := readResourceText(t, cs, out); !strings.Contains(text, "over-http") {
				t.Fatalf("output %q", text)
			}
			mustCall(t, cs, "stop_app", map[string]any{"session_id": id})
		})
	}
}

// registered reports whether the registry holds the session id.
func registered(h *host.Host, id string) *session.Session {
	for _, s := range h.Sessions.List("") {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// TestHTTPDeleteEndsTerminalSessions: DELETE ends the MCP session and its
// terminal sessions with it (SPEC MCP-2); another client never saw them.
func TestHTTPDeleteEndsTerminalSessions(t *testing.T) {
	h, url := newHTTPHost(t, mcp.HTTPOptions{})
	first := connectHTTP(t, url, eraLegacy, nil)
	id := mustCall(t, first, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	other := connectHTTP(t, url, eraLegacy, nil)
	if strings.Contains(readResourceText(t, other, "pty://sessions/list"), id) {
		t.Fatal("another live client lists the session")
	}
	sess := registered(h, id)
	if err := first.Close(); err != nil { // DELETE
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for registered(h, id) != nil || sess.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("the terminal session outlived the DELETE of its MCP session")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHTTPGuards(t *testing.T) {
	_, url := newHTTPHost(t, mcp.HTTPOptions{MaxBodyBytes: 1 << 20})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := authClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"foreign Host", map[string]string{"Host": "evil.example:80"}, http.StatusForbidden},
		{"rebinding Host", map[string]string{"Host": "attacker.test"}, http.StatusForbidden},
		{"foreign Origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"null Origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"localhost Host", map[string]string{"Host": "localhost:1234"}, http.StatusOK},
		{"[::1] Host", map[string]string{"Host": "[::1]:1234"}, http.StatusOK},
		{"localhost Origin", map[string]string{"Origin": "http://localhost:3000"}, http.StatusOK},
		{"127.0.0.1 Origin", map[string]string{"Origin": "https://127.0.0.1"}, http.StatusOK},
	} {
		if got := post(initialize, c.hdr).StatusCode; got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"telnet_list","arguments":{"x":"` + strings.Repeat("x", 2<<20) + `"}}}`
	for _, hdr := range []map[string]string{
		nil, // no session: the router reads the body
		{"Mcp-Protocol-Version": eraModern},
		{"Mcp-Protocol-Version": eraLegacy},
	} {
		if got := post(big, hdr).StatusCode; got != http.StatusRequestEntityTooLarge {
			t.Errorf("oversized body with %v: status %d, want 413", hdr, got)
		}
	}
	sid := post(initialize, nil).Header.Get("Mcp-Session-Id")
	if got := post(big, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": eraLegacy}).StatusCode; got != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body in a session: status %d, want 413", got)
	}
	// Stateless without a session id, no initialize: served.
	resp := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"telnet_list","arguments":{}}}`, nil)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) {
		t.Errorf("sessionless call: %d %s", resp.StatusCode, b)
	}
	if resp, err := authClient.Get(strings.TrimSuffix(url, mcp.HTTPPath) + "/other"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("another path: %v %v", resp, err)
	}
}

// TestHTTPJSONRPCErrors: what is not a JSON-RPC 2.0 request gets a
// JSON-RPC error in a JSON body (status 400), in a session and without
// one: -32700 for a body that does not parse, -32600 for another version
// or no method, -32601 for a method the server does not have.
func TestHTTPJSONRPCErrors(t *testing.T) {
	_, url := newHTTPHost(t, mcp.HTTPOptions{})
	post := func(body string, hdr map[string]string) (int, string, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := authClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp.StatusCode, resp.Header.Get("Content-Type") + " " + resp.Header.Get("Mcp-Session-Id"), m
	}
	_, hdr, _ := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	_, sid, _ := strings.Cut(hdr, " ")
	for _, where := range []map[string]string{
		{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": eraLegacy},
		{"Mcp-Protocol-Version": eraModern},
		nil,
	} {
		for _, c := range []struct {
			body string
			code float64
			id   any
		}{
			{`{"jsonrpc":"2.0","id":2,`, -32700, nil},
			{`not json`, -32700, nil},
			{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600, 3.0},
			{`{"id":4,"method":"ping"}`, -32600, 4.0},
			{`{"jsonrpc":"2.0","id":5}`, -32600, 5.0},
			{`[]`, -32600, nil},
			{`{"jsonrpc":"2.0","id":"six","method":"no/such/method"}`, -32601, "six"},
		} {
			status, ctype, m := post(c.body, where)
			e, _ := m["error"].(map[string]any)
			// go-sdk answers an unknown method of the 2026 era itself: a
			// JSON-RPC error with 404.
			okStatus := status == http.StatusBadRequest || (c.code == -32601 && status == http.StatusNotFound)
			if !okStatus || !strings.HasPrefix(ctype, "application/json") || e == nil || e["code"] != c.code || m["id"] != c.id || m["jsonrpc"] != "2.0" {
				t.Errorf("%v %s: status %d, %s, %v; want 400, a JSON error %v with id %v", where, c.body, status, ctype, m, c.code, c.id)
			}
		}
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, data string }

// readEvents reads events from an SSE body into a channel until it ends.
func readEvents(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.id != "" || e.data != "" {
					ch <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id:"):
				e.id = strings.TrimSpace(line[3:])
			case strings.HasPrefix(line, "data:"):
				e.data += strings.TrimSpace(line[5:])
			}
		}
	}()
	return ch
}

// TestHTTPResumption: a standalone SSE stream dropped by the client is
// resumed with Last-Event-ID, and what was sent while it was down arrives.
func TestHTTPResumption(t *testing.T) {
	_, url := newHTTPHost(t, mcp.HTTPOptions{})
	var sid string
	send := func(method string, params any, id int) *http.Response {
		t.Helper()
		msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if id > 0 {
			msg["id"] = id
		}
		b, _ := json.Marshal(msg)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", eraLegacy)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := authClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		}
		return resp
	}
	result := func(resp *http.Response) string {
		t.Helper()
		defer resp.Body.Close()
		for e := range readEvents(resp.Body) {
			if strings.Contains(e.data, `"id"`) {
				return e.data
			}
		}
		t.Fatal("no response on the stream")
		return ""
	}
	resp := send("initialize", map[string]any{"protocolVersion": eraLegacy, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}, 1)
	sid = resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no Mcp-Session-Id")
	}
	result(resp)
	send("notifications/initialized", map[string]any{}, 0).Body.Close()
	result(send("resources/subscribe", map[string]any{"uri": "pty://status"}, 2))

	get := func(lastID string) (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", eraLegacy)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := authClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %v %v", resp, err)
		}
		return resp, cancel
	}
	next := func(ch <-chan sseEvent, want string) sseEvent {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case e, ok := <-ch:
				if !ok {
					t.Fatalf("stream ended before %q", want)
				}
				if strings.Contains(e.data, want) {
					return e
				}
			case <-timeout:
				t.Fatalf("no event with %q", want)
			}
		}
	}
	stream, drop := get("")
	events := readEvents(stream.Body)
	start := result(send("tools/call", map[string]any{"name": "start_pty", "arguments": map[string]any{"command": "cat"}}, 3))
	var started struct {
		Result struct {
			Content []struct{ Text string }
		}
	}
	json.Unmarshal([]byte(start), &started)
	first := next(events, "pty://status")
	if first.id == "" {
		t.Fatal("the event has no id")
	}
	drop()
	stream.Body.Close()
	// While the stream is down: kill_pty notifies again.
	var pid struct{ ProcessID string }
	json.Unmarshal([]byte(started.Result.Content[0].Text), &pid)
	result(send("tools/call", map[string]any{"name": "kill_pty", "arguments": map[string]any{"processId": pid.ProcessID}}, 4))

	resumed, stop := get(first.id)
	defer stop()
	defer resumed.Body.Close()
	replayed := next(readEvents(resumed.Body), "pty://status")
	if replayed.id == first.id || replayed.id == "" {
		t.Fatalf("replayed event id %q after %q", replayed.id, first.id)
	}
}

// TestHTTPIdleMCPSessionOrphans: an MCP session without requests for
// SessionTimeout is closed (its open GET stream does not keep it), and its
// terminal sessions become orphans rather than ending (a client that went
// away without a DELETE); they stay their owner's, out of every other
// client's sight.
//
// A launch_app still running when the MCP session times out opens its
// session as an orphan (session.TestOwnerGoneBeforeOpenEnds).
func TestHTTPIdleMCPSessionOrphans(t *testing.T) {
	h, url := newHTTPHost(t, mcp.HTTPOptions{SessionTimeout: 2 * time.Second})
	cs := connectHTTP(t, url, eraLegacy, nil)
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	// 2 s. It failed in full CI runs when the client's DELETE, sent as
	// the timeout ended its GET stream, stopped the terminal session
	// instead (TestHTTPIdleTimeoutThenDeleteOrphans, idle.go).
	deadline := time.Now().Add(10 * time.Second)
	began := time.Now()
	for !h.Sessions.Orphaned(id) {
		if time.Now().After(deadline) {
			t.Fatal("the idle MCP session's terminal session did not become an orphan")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("orphaned %v after launch_app returned", time.Since(began).Round(time.Millisecond))
	if sess := registered(h, id); sess == nil || !sess.Alive() {
		t.Fatal("the terminal session ended with its MCP session")
	}
	for _, era := range []string{eraLegacy, eraModern} {
		other := connectHTTP(t, url, era, nil)
		if strings.Contains(readResourceText(t, other, "pty://sessions/list"), id) {
			t.Fatalf("%s: another client lists the orphan", era)
		}
		if _, _, isErr := call(t, other, "view_screen", map[string]any{"session_id": id}); !isErr {
			t.Fatalf("%s: another client reaches the orphan", era)
		}
	}
}

// TestHTTPAllowRemote: with AllowRemote any Host passes, a foreign Origin
// still does not.
func TestHTTPAllowRemote(t *testing.T) {
	_, url := newHTTPHost(t, mcp.HTTPOptions{AllowRemote: true})
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"termhost.lan:4000", "", http.StatusOK},
		{"termhost.lan:4000", "http://evil.example", http.StatusForbidden},
		{"termhost.lan:4000", "http://localhost:5173", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := authClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %s Origin %q: %d, want %d", c.host, c.origin, resp.StatusCode, c.want)
		}
	}
}

// TestHTTPDeleteWithoutInitialized: a client that initializes but never
// sends notifications/initialized (go-sdk serves its calls anyway) keeps
// its sessions across connections with its MCP-Session-Id, and has them
// ended when it deletes its MCP session; a DELETE of a session that does
// not exist ends nothing.
func TestHTTPDeleteWithoutInitialized(t *testing.T) {
	h, url := newHTTPHost(t, mcp.HTTPOptions{})
	var sid string
	do := func(method, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", eraLegacy)
		}
		resp, err := authClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	io.ReadAll(resp.Body)
	sid = resp.Header.Get("Mcp-Session-Id")
	resp = do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"launch_app","arguments":{"command":"cat"}}}`)
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`session_id\\":\\"([0-9A-Z]+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("launch_app: %s", b)
	}
	id := string(m[1])
	// On a new connection, with the same MCP-Session-Id, the session is
	// still this client's.
	authClient.CloseIdleConnections()
	resp = do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`)
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), id) {
		t.Fatalf("list_sessions on a new connection: %s", b)
	}
	real := sid
	sid = "no-such-session"
	if resp := do(http.MethodDelete, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("DELETE of a session that does not exist: %d", resp.StatusCode)
	}
	sid = real
	if resp := do(http.MethodDelete, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for registered(h, id) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the terminal session outlived the DELETE")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHTTPProgress: a long wait sends progress notifications over HTTP in
// both eras, on the call's own stream.
func TestHTTPProgress(t *testing.T) {
	_, url := newHTTPHost(t, mcp.HTTPOptions{})
	for _, era := range []string{eraModern, eraLegacy} {
		t.Run(era, func(t *testing.T) {
			progress := make(chan float64, 16)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "progress", Version: "1"}, &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
					select {
					case progress <- r.Params.Progress:
					default:
					}
				},
			}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: authClient}, &sdk.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
			params := &sdk.CallToolParams{Name: "wait_for", Arguments: map[string]any{"session_id": id, "until": "never-printed", "timeoutMs": 2500}}
			params.SetProgressToken("wait-1")
			if _, err := cs.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			select {
			case <-progress:
			default:
				t.Fatal("no notifications/progress during a 2.5 s wait")
			}
		})
	}
}

// runHTTP serves a host with RunHTTP (the real http.Server, with its
// timeouts) on a loopback port; it returns the host and /mcp's URL.
func runHTTP(t *testing.T, opts mcp.HTTPOptions) (*host.Host, string) {
	t.Helper()
	if opts.Token == "" && !opts.NoAuth {
		opts.Token = testToken
	}
	h, err := host.New(context.Background(), host.Config{Plugins: os.DirFS("../../plugins/telnet"), CacheDir: testCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.MCP.RunHTTP(ctx, ln, opts) }()
	t.Cleanup(func() {
		cancel()
		<-done
		h.Close()
	})
	return h, "http://" + ln.Addr().String() + mcp.HTTPPath
}

// trickle opens a connection that sends a POST's headers and then its
// body one byte every `every`; it returns when the server closes the
// connection (or after `limit`), with the status line it answered (if
// any) and how long the connection lasted.
func trickle(addr string, token string, every, limit time.Duration) (status string, lasted time.Duration, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	start := time.Now()
	hdr := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
	if token != "" {
		hdr += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(c, hdr+"\r\n"); err != nil {
		return "", 0, err
	}
	closed := make(chan string, 1)
	go func() {
		r := bufio.NewReader(c)
		line, _ := r.ReadString('\n')
		io.Copy(io.Discard, r) // until the server closes
		closed <- strings.TrimSpace(line)
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case status = <-closed:
			return status, time.Since(start), nil
		case <-tick.C:
			if time.Since(start) > limit {
				return "", time.Since(start), fmt.Errorf("still open after %v", limit)
			}
			c.Write([]byte{' '})
		}
	}
}

// TestHTTPSlowBodies: connections that trickle a body (one byte per 300
// ms) are answered 408 and closed once BodyTimeout has passed, with the
// token or without it (401 at once); meanwhile a normal client keeps
// working, its SSE streams outliving BodyTimeout (no ReadTimeout cuts
// them). Beyond MaxBodyReads bodies at once, 503 with Retry-After.
func TestHTTPSlowBodies(t *testing.T) {
	const bound = time.Second
	_, url := runHTTP(t, mcp.HTTPOptions{BodyTimeout: bound})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), mcp.HTTPPath)
	cs := connectHTTP(t, url, eraLegacy, nil)
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)

	type result struct {
		token  bool
		status string
		lasted time.Duration
		err    error
	}
	results := make(chan result, 20)
	for i := range 20 {
		token := ""
		if i%2 == 0 {
			token = testToken
		}
		go func() {
			status, lasted, err := trickle(addr, token, 300*time.Millisecond, 10*time.Second)
			results <- result{token != "", status, lasted, err}
		}()
	}
	// A wait longer than the bound, on an SSE response, and calls beside.
	start := time.Now()
	r := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "until": "never-printed", "timeoutMs": 2500})
	if r["reason"] != "timeout" || time.Since(start) < 2500*time.Millisecond {
		t.Fatalf("wait_for across the body bound: %v after %v", r, time.Since(start))
	}
	mustCall(t, cs, "list_sessions", nil)
	for range 20 {
		res := <-results
		// Generous margins for a loaded machine: without the bound they
		// stay open until the test gives up (10 s).
		want, within := "408", 3*bound
		if !res.token {
			want, within = "401", bound
		}
		if res.err != nil || !strings.Contains(res.status, want) || res.lasted > within {
			t.Errorf("trickling body (token %v): %q after %v (%v); want %s within %v", res.token, res.status, res.lasted, res.err, want, within)
		}
	}

	_, url = runHTTP(t, mcp.HTTPOptions{BodyTimeout: bound, MaxBodyReads: 4})
	addr = strings.TrimSuffix(strings.TrimPrefix(url, "http://"), mcp.HTTPPath)
	for range 4 {
		go func() {
			status, lasted, err := trickle(addr, testToken, 300*time.Millisecond, 10*time.Second)
			results <- result{true, status, lasted, err}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+"\r\nContent-Length: 10\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(bound))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a fifth body at once: %v %v; want 503 with Retry-After at once", resp, err)
	}
	for range 4 {
		if res := <-results; !strings.Contains(res.status, "408") {
			t.Errorf("trickling body: %q after %v (%v)", res.status, res.lasted, res.err)
		}
	}
}
