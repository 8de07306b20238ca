package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/internal/testutil"
)

// The live view (/view) in process: its login code and key, the Origin
// and Host guards; a token's sessions and no other's; the handover (take
// control, the agent's HUMAN_CONTROL refusals, waits ending "human",
// wait_for {human: "released"}). The page in a real browser is
// cmd/termhost/view_browser_test.go.

// newViewHost starts a host with the telnet and vt plugins (sessions get a
// screen) behind an httptest server; it returns the host and the server's
// base URL.
func newViewHost(t *testing.T) (*host.Host, string) {
	t.Helper()
	return newViewHostWith(t, mcp.HTTPOptions{Token: testToken})
}

func newViewHostWith(t *testing.T, opts mcp.HTTPOptions) (*host.Host, string) {
	t.Helper()
	plugins := fstest.MapFS{}
	for _, p := range []string{"telnet/telnet.wasm", "vt/vt.wasm"} {
		b, err := os.ReadFile("../../plugins/" + p)
		if err != nil {
			t.Fatalf("plugin %s: %v", p, err)
		}
		plugins[p] = &fstest.MapFile{Data: b}
	}
	h, err := host.New(context.Background(), host.Config{Plugins: plugins, CacheDir: testCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.MCP.HTTPHandler(opts))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		h.Close()
	})
	return h, srv.URL
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func viewDo(t *testing.T, method, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// viewCode mints a login code with the bearer token, as `termhost view`
// does.
func viewCode(t *testing.T, base string) string {
	t.Helper()
	r, body := viewDo(t, http.MethodPost, base+mcp.ViewCodePath, "", map[string]string{"Authorization": "Bearer " + testToken})
	var out struct {
		Code      string `json:"code"`
		ExpiresIn int    `json:"expires_in_s"`
	}
	if r.StatusCode != 200 || json.Unmarshal([]byte(body), &out) != nil || len(out.Code) != 24 || out.ExpiresIn <= 0 {
		t.Fatalf("a login code: %d %s", r.StatusCode, body)
	}
	return out.Code
}

// viewLogin exchanges a code for a view key, as the page does: a POST
// from its own origin. It returns the status and the key.
func viewLogin(t *testing.T, base, code string, hdr map[string]string) (int, string) {
	t.Helper()
	if hdr == nil {
		hdr = map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}
	}
	hdr["Content-Type"] = "application/json"
	r, body := viewDo(t, http.MethodPost, base+"/view/login", `{"code":"`+code+`"}`, hdr)
	var out struct {
		Key string `json:"key"`
	}
	json.Unmarshal([]byte(body), &out)
	return r.StatusCode, out.Key
}

// viewKey is a fresh view key.
func viewKey(t *testing.T, base string) string {
	t.Helper()
	status, key := viewLogin(t, base, viewCode(t, base), nil)
	if status != 200 || len(key) != 43 {
		t.Fatalf("login: %d %q", status, key)
	}
	return key
}

// dialKey opens a screen with a view key as the page does: the key as a
// second subprotocol.
func dialKey(base, id, key string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return websocket.Dial(ctx, wsURL(base, id), &websocket.DialOptions{HTTPHeader: hdr, Subprotocols: []string{"termhost-view", "termhost-key." + key}})
}

// TestViewLogin (issue 33 item 3): the view has no cookie and no token in
// an address. The page loads without a credential; `termhost view`'s
// login code (minted with the bearer token, never for a page) is
// exchanged once, by a POST from the view's own origin, for a key the
// page sends as a header or a WebSocket subprotocol — nothing the browser
// sends by itself. Without the key (or the bearer token) the session list
// and the screens refuse; the key works on the Host it was given for
// only, from the view's own pages only, and never on /mcp.
func TestViewLogin(t *testing.T) {
	_, base := newViewHost(t)
	cs := connectHTTP(t, base+"/mcp", eraModern, nil)
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)

	// The page and its assets: no credential, and no cookie.
	if r, body := get(t, base+"/view", nil); r.StatusCode != 200 || !strings.Contains(body, "/view/xterm.js") || len(r.Cookies()) != 0 {
		t.Fatalf("the page: %d %v %.200s", r.StatusCode, r.Cookies(), body)
	}
	if r, body := get(t, base+"/view/xterm.js", nil); r.StatusCode != 200 || len(body) < 100000 {
		t.Fatalf("xterm.js: %d, %d bytes", r.StatusCode, len(body))
	}
	// The token in the address opens nothing (and sets no cookie); an
	// earlier version's cookie is cleared.
	if r, body := get(t, base+"/view?token="+testToken, nil); r.StatusCode != http.StatusBadRequest || len(r.Cookies()) != 0 || !strings.Contains(body, "termhost view") {
		t.Fatalf("/view?token=: %d %v %q, want 400, no cookie", r.StatusCode, r.Cookies(), body)
	}
	if r, _ := get(t, base+"/view", map[string]string{"Cookie": "termhost_view=old"}); len(r.Cookies()) != 1 || r.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("an old cookie is not cleared: %v", r.Cookies())
	}
	for _, p := range []string{"/view/sessions", "/view/sessions?token=" + testToken} {
		if r, _ := get(t, base+p, nil); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without a credential: %d, want 401", p, r.StatusCode)
		}
	}

	// A login code: for the bearer token, never for a page.
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	for what, hdr := range map[string]map[string]string{
		"no token":       {},
		"a wrong token":  {"Authorization": "Bearer " + testToken + "x"},
		"the view's key": {"X-Termhost-View-Key": viewKey(t, base)},
	} {
		if r, _ := viewDo(t, http.MethodPost, base+mcp.ViewCodePath, "", hdr); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a login code with %s: %d, want 401", what, r.StatusCode)
		}
	}
	for _, extra := range []map[string]string{{"Origin": base}, {"Sec-Fetch-Site": "same-origin"}} {
		for k, v := range bearer {
			extra[k] = v
		}
		if r, _ := viewDo(t, http.MethodPost, base+mcp.ViewCodePath, "", extra); r.StatusCode != http.StatusForbidden {
			t.Fatalf("a login code for a page (%v): %d, want 403", extra, r.StatusCode)
		}
	}
	if r, _ := viewDo(t, http.MethodGet, base+mcp.ViewCodePath, "", bearer); r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET of a login code: %d, want 405", r.StatusCode)
	}
	code := viewCode(t, base)
	if strings.Contains(code, testToken) || code == viewCode(t, base) {
		t.Fatal("login codes are not fresh random text")
	}

	// The exchange: from the view's own origin only, once.
	for what, hdr := range map[string]map[string]string{
		"no Origin":                  {},
		"Origin null":                {"Origin": "null"},
		"a foreign Origin":           {"Origin": "http://evil.example"},
		"another local port":         {"Origin": "http://127.0.0.1:1"},
		"a same-site page elsewhere": {"Origin": base, "Sec-Fetch-Site": "same-site"},
	} {
		if status, key := viewLogin(t, base, code, hdr); status != http.StatusForbidden || key != "" {
			t.Fatalf("login with %s: %d %q, want 403", what, status, key)
		}
	}
	if status, _ := viewLogin(t, base, "not-a-code-not-a-code-00", nil); status != http.StatusUnauthorized {
		t.Fatalf("login with a wrong code: %d, want 401", status)
	}
	if r, _ := viewDo(t, http.MethodGet, base+"/view/login?code="+code, "", map[string]string{"Origin": base}); r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET of a login: %d, want 405", r.StatusCode)
	}
	status, key := viewLogin(t, base, code, nil) // the refusals above did not use the code up
	if status != 200 || len(key) != 43 || strings.Contains(key, testToken) {
		t.Fatalf("login: %d %q", status, key)
	}
	if status, again := viewLogin(t, base, code, nil); status != http.StatusUnauthorized || again != "" {
		t.Fatalf("the code a second time: %d %q, want 401", status, again)
	}

	// The key: a header on the view's own requests, on its Host only.
	host := strings.TrimPrefix(base, "http://")
	if r, body := get(t, base+"/view/sessions", map[string]string{"X-Termhost-View-Key": key, "Sec-Fetch-Site": "same-origin"}); r.StatusCode != 200 || !strings.Contains(body, id) {
		t.Fatalf("sessions with the key: %d %.200s", r.StatusCode, body)
	}
	_, port, _ := strings.Cut(host, ":")
	wrong := key[:42] + "A"
	if wrong == key {
		wrong = key[:42] + "B"
	}
	for what, hdr := range map[string]map[string]string{
		"the key as a cookie":              {"Cookie": "termhost_view=" + key},
		"the key as a bearer token":        {"Authorization": "Bearer " + key},
		"the key from a same-site page":    {"X-Termhost-View-Key": key, "Sec-Fetch-Site": "same-site"},
		"the key from another site":        {"X-Termhost-View-Key": key, "Sec-Fetch-Site": "cross-site"},
		"the key for another Host":         {"X-Termhost-View-Key": key, "Host": "localhost:" + port},
		"the key with a wrong last letter": {"X-Termhost-View-Key": wrong},
	} {
		if r, _ := get(t, base+"/view/sessions", hdr); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("sessions with %s: %d, want 401", what, r.StatusCode)
		}
	}
	if r, _ := get(t, base+"/view/sessions?key="+key, nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the key in the address: %d, want 401", r.StatusCode)
	}
	for _, hdr := range []map[string]string{
		{"Origin": "http://evil.example", "X-Termhost-View-Key": key},
		{"Origin": "http://localhost:1", "X-Termhost-View-Key": key}, // another local page
		{"Host": "evil.example", "X-Termhost-View-Key": key},
	} {
		if r, _ := get(t, base+"/view/sessions", hdr); r.StatusCode != http.StatusForbidden {
			t.Fatalf("%v: %d, want 403", hdr, r.StatusCode)
		}
	}
	if r, _ := get(t, base+"/view/sessions", bearer); r.StatusCode != 200 {
		t.Fatalf("sessions with the bearer token (programs): %d", r.StatusCode)
	}
	// The key is no bearer token for /mcp.
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the key as /mcp's bearer token: %v %v, want 401", resp, err)
	}

	// The screens: the key as a subprotocol, the answer names the other.
	c, _, err := dialKey(base, id, key, http.Header{"Origin": {base}})
	if err != nil {
		t.Fatalf("a screen with the key: %v", err)
	}
	if c.Subprotocol() != "termhost-view" {
		t.Fatalf("the screen's subprotocol: %q", c.Subprotocol())
	}
	c.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for what, opts := range map[string]*websocket.DialOptions{
		"no credential":       {Subprotocols: []string{"termhost-view"}},
		"the key as a cookie": {HTTPHeader: http.Header{"Cookie": {"termhost_view=" + key}}, Subprotocols: []string{"termhost-view"}},
		"the key from a page elsewhere": {HTTPHeader: http.Header{"Origin": {"http://127.0.0.1:1"}},
			Subprotocols: []string{"termhost-view", "termhost-key." + key}},
	} {
		c, resp, err := websocket.Dial(ctx, wsURL(base, id), opts)
		if err == nil {
			c.CloseNow()
			t.Fatalf("a screen with %s was opened", what)
		}
		if resp == nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			t.Fatalf("a screen with %s: %v %v", what, resp, err)
		}
	}
	if c, _, err := websocket.Dial(ctx, wsURL(base, id)+"&key="+key, nil); err == nil {
		c.CloseNow()
		t.Fatal("a screen with the key in its address was opened")
	}
}

// TestViewNoAuth: a server without a token (--no-auth, loopback only)
// needs no key: the page's requests and screens work without one.
func TestViewNoAuth(t *testing.T) {
	_, base := newViewHostWith(t, mcp.HTTPOptions{NoAuth: true})
	cs := connectHTTP(t, base+"/mcp", eraModern, nil)
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	if r, body := get(t, base+"/view/sessions", nil); r.StatusCode != 200 || !strings.Contains(body, id) {
		t.Fatalf("sessions without a token: %d %.200s", r.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(base, id), &websocket.DialOptions{Subprotocols: []string{"termhost-view"}})
	if err != nil {
		t.Fatalf("a screen without a token: %v", err)
	}
	c.CloseNow()
}

// TestViewLoginExpiry: a login code not used within its life opens
// nothing; a key lives while it is used (the page uses it every second)
// and dies unused, closing the screens it opened.
func TestViewLoginExpiry(t *testing.T) {
	defer mcp.SetViewTTLs(400*time.Millisecond, 700*time.Millisecond)()
	_, base := newViewHost(t)
	cs := connectHTTP(t, base+"/mcp", eraModern, nil)
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	code := viewCode(t, base)
	time.Sleep(600 * time.Millisecond)
	if status, key := viewLogin(t, base, code, nil); status != http.StatusUnauthorized || key != "" {
		t.Fatalf("an expired code: %d %q, want 401", status, key)
	}
	key := viewKey(t, base)
	withKey := map[string]string{"X-Termhost-View-Key": key}
	c, _, err := dialKey(base, id, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	closed := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				closed <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	for start := time.Now(); time.Since(start) < 2*time.Second; time.Sleep(200 * time.Millisecond) {
		if r, _ := get(t, base+"/view/sessions", withKey); r.StatusCode != 200 {
			t.Fatalf("a key in use died after %v: %d", time.Since(start), r.StatusCode)
		}
	}
	select {
	case st := <-closed:
		t.Fatalf("the screen closed while its key was in use: %v", st)
	default:
	}
	time.Sleep(time.Second)
	if r, _ := get(t, base+"/view/sessions", withKey); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a key unused beyond its life: %d, want 401", r.StatusCode)
	}
	select {
	case st := <-closed:
		if st != 4401 {
			t.Fatalf("the screen of an expired key closed with %v, want 4401", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the screen of an expired key stays open")
	}
	if _, _, err := dialKey(base, id, key, nil); err == nil {
		t.Fatal("an expired key opened a screen")
	}
}

func wsURL(base, id string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/view/ws?session=" + id
}

// viewSessions lists the view's sessions (bearer token).
func viewSessions(t *testing.T, base string) []map[string]any {
	t.Helper()
	r, body := get(t, base+"/view/sessions", map[string]string{"Authorization": "Bearer " + testToken})
	if r.StatusCode != 200 {
		t.Fatalf("/view/sessions: %d %s", r.StatusCode, body)
	}
	var out struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	return out.Sessions
}

// viewer is a WebSocket of the view on one session.
type viewer struct {
	t *testing.T
	c *websocket.Conn
	// out is every byte of output received; msgs every text message.
	out  chan []byte
	msgs chan map[string]any
}

func dialView(t *testing.T, base, id string) (*viewer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(base, id), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(8 << 20)
	v := &viewer{t: t, c: c, out: make(chan []byte, 1024), msgs: make(chan map[string]any, 64)}
	t.Cleanup(func() { c.CloseNow() })
	go func() {
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				close(v.msgs)
				return
			}
			if typ == websocket.MessageBinary {
				v.out <- b
				continue
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			v.msgs <- m
		}
	}()
	return v, nil
}

func (v *viewer) send(m map[string]any) {
	b, _ := json.Marshal(m)
	if err := v.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		v.t.Fatal(err)
	}
}

// msg waits for the next text message of type typ.
func (v *viewer) msg(typ string) map[string]any {
	v.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-v.msgs:
			if !ok {
				v.t.Fatalf("the WebSocket closed before a %q message", typ)
			}
			if m["t"] == typ {
				return m
			}
		case <-deadline:
			v.t.Fatalf("no %q message within 10 s", typ)
		}
	}
}

// until waits for output containing want (what came so far, joined).
func (v *viewer) until(want string) {
	v.t.Helper()
	var got strings.Builder
	deadline := time.After(10 * time.Second)
	for !strings.Contains(got.String(), want) {
		select {
		case b := <-v.out:
			got.Write(b)
		case <-deadline:
			v.t.Fatalf("the view did not show %q within 10 s; got %q", want, got.String())
		}
	}
}

// TestViewOwnerIsolation: the view shows the token's sessions — opened
// without an MCP session and by MCP sessions it created — and not another
// owner's, which it can neither stream nor control.
func TestViewOwnerIsolation(t *testing.T) {
	h, base := newViewHost(t)
	modern := connectHTTP(t, base+"/mcp", eraModern, nil)
	legacy := connectHTTP(t, base+"/mcp", eraLegacy, nil)
	mine := mustCall(t, modern, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	minted := mustCall(t, legacy, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	theirs := mustCall(t, modern, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	sess := registered(h, theirs)
	code, _, err := h.Sessions.Share(sess.Owner(), sess)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Sessions.Claim("token:someone-else", code); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range viewSessions(t, base) {
		ids[s["id"].(string)] = true
	}
	if !ids[mine] || !ids[minted] || ids[theirs] || len(ids) != 2 {
		t.Fatalf("the view lists %v; want %s and %s, not %s", ids, mine, minted, theirs)
	}
	if _, err := dialView(t, base, theirs); err == nil {
		t.Fatal("a WebSocket on another owner's session was accepted")
	}
	if _, held := sess.HumanHolder(); held {
		t.Fatal("another owner's session is held")
	}
	v, err := dialView(t, base, minted)
	if err != nil {
		t.Fatal(err)
	}
	if m := v.msg("reset"); m["control"] != "none" {
		t.Fatalf("reset: %v", m)
	}
}

// TestViewHandover: the view streams the agent's output; a person who
// takes control types into the program while the agent's input tools
// answer HUMAN_CONTROL and its waits end "human"; wait_for {human:
// "released"} returns when they give it back, and the agent goes on. A
// person who goes away gives the keyboard back.
func TestViewHandover(t *testing.T) {
	h, base := newViewHost(t)
	cs := connectHTTP(t, base+"/mcp", eraModern, nil)
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "before\r"})
	testutil.Eventually(t, 10*time.Second, "cat echoes", func() bool {
		return strings.Contains(viewText(t, cs, id), "before")
	})
	v, err := dialView(t, base, id)
	if err != nil {
		t.Fatal(err)
	}
	reset := v.msg("reset")
	if !strings.Contains(reset["data"].(string), "before") || reset["control"] != "none" {
		t.Fatalf("reset: %v", reset)
	}
	mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "agent-line\r"})
	v.until("agent-line")

	v.send(map[string]any{"t": "take"})
	if m := v.msg("control"); m["control"] != "you" {
		t.Fatalf("take: %v", m)
	}
	sess := registered(h, id)
	for _, c := range []struct{ tool, field string }{{"send_keys", "session_id"}, {"telnet_send", "sessionId"}} {
		args := map[string]any{c.field: id, "text": "refused\r"}
		if c.tool == "telnet_send" {
			args = map[string]any{c.field: id, "command": "refused"}
		}
		_, msg, isErr := testutil.Call(t, cs, c.tool, args)
		if !isErr || !strings.HasPrefix(msg, "HUMAN_CONTROL: ") {
			t.Fatalf("%s while a person holds the keyboard: %v %q, want HUMAN_CONTROL", c.tool, isErr, msg)
		}
	}
	w := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "timeoutMs": 200})
	if w["reason"] != "human" {
		t.Fatalf("a wait that ended while the person holds the keyboard: %v", w)
	}
	v.send(map[string]any{"t": "keys", "data": "from-person\r"})
	v.until("from-person")
	testutil.Eventually(t, 10*time.Second, "the person's keys reach the program", func() bool {
		return strings.Count(viewText(t, cs, id), "from-person") >= 2 // the echo and cat's copy
	})
	released := make(chan map[string]any, 1)
	go func() {
		res, _, _, _ := testutil.CallJSON(cs, "wait_for", map[string]any{"session_id": id, "human": "released", "timeoutMs": 20000})
		released <- res
	}()
	time.Sleep(100 * time.Millisecond) // let the wait start (it also passes if it starts late)
	v.send(map[string]any{"t": "give"})
	if m := v.msg("control"); m["control"] != "none" {
		t.Fatalf("give: %v", m)
	}
	select {
	case res := <-released:
		if res["reason"] != "released" {
			t.Fatalf("wait_for human released: %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait_for {human: released} did not return after the hand-back")
	}
	mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "agent-again\r"})
	v.until("agent-again")
	var marks []bool
	for _, e := range sess.Events(0) {
		if hc, ok := e.Body.(*session.HumanControl); ok {
			marks = append(marks, hc.Taken)
		}
	}
	if len(marks) != 2 || !marks[0] || marks[1] {
		t.Fatalf("human_control events: %v, want taken then given back", marks)
	}
	// A person who goes away gives the keyboard back.
	v.send(map[string]any{"t": "take"})
	v.msg("control")
	if _, held := sess.HumanHolder(); !held {
		t.Fatal("take did not take")
	}
	v.c.Close(websocket.StatusNormalClosure, "")
	testutil.Eventually(t, 10*time.Second, "the keyboard returns when the viewer goes", func() bool {
		_, held := sess.HumanHolder()
		return !held
	})
}

// viewText is the session's screen as view_screen gives it.
func viewText(t *testing.T, cs *sdk.ClientSession, id string) string {
	t.Helper()
	res := mustCall(t, cs, "view_screen", map[string]any{"session_id": id})
	s, _ := res["content"].(string)
	return s
}

// TestViewViewersCost: twenty viewers on a session that floods its
// output cost it little of its throughput (issue 21's figure: under 10%).
// The viewers read the ring buffer on their own goroutines; the session
// never waits for them. Logged; the bound asserted is looser (double the
// time), as the machine's other work moves the figure.
func TestViewViewersCost(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("a throughput figure (not under -short or -race)")
	}
	_, base := newViewHost(t)
	cs := connectHTTP(t, base+"/mcp", eraModern, nil)
	const size = 32 << 20
	run := func(viewers int) time.Duration {
		id := mustCall(t, cs, "launch_app", map[string]any{"command": "sh", "args": []string{"-c", fmt.Sprintf("read go; head -c %d /dev/zero | tr '\\0' a", size)}})["session_id"].(string)
		var vs []*viewer
		for range viewers {
			v, err := dialView(t, base, id)
			if err != nil {
				t.Fatal(err)
			}
			v.msg("reset")
			go func() { // drain
				for range v.out {
				}
			}()
			vs = append(vs, v)
		}
		start := time.Now()
		mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "\r"})
		w := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 120000})
		took := time.Since(start)
		if w["reason"] != "exit" {
			t.Fatalf("the flood did not end: %v", w)
		}
		for _, v := range vs {
			v.c.CloseNow()
		}
		return took
	}
	run(0) // warm-up
	// The best of three each, interleaved: the machine's other work only
	// ever slows a run down.
	alone, watched := run(0), run(20)
	for range 2 {
		alone, watched = min(alone, run(0)), min(watched, run(20))
	}
	cost := float64(watched-alone) / float64(alone) * 100
	t.Logf("%d MiB through a PTY: alone %v, with 20 viewers %v (%.1f%% slower)", size>>20, alone.Round(time.Millisecond), watched.Round(time.Millisecond), cost)
	if cost > 100 { // sending every byte to every viewer cost 120-260% (RATIONALE)
		t.Errorf("20 viewers cost the session %.0f%% of its throughput", cost)
	}
}

// TestAskSecret: ask_secret sends a URL-mode elicitation to a client that
// takes one; the one-time page types what the person sends into the
// session (echo off), the call answers "typed" and no MCP message carries
// the secret; the page works once. A client without URL elicitation gets
// the page's address in the result.
func TestAskSecret(t *testing.T) {
	const secret = "s3cret-Ask-7731"
	_, base := newAskViewHost(t, "sh")
	urls := make(chan string, 1)
	var seen strings.Builder // every elicitation the client got, as JSON
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
	script := `stty -echo; printf 'Code: '; read -r pw; stty echo; echo; [ "$pw" = "` + secret + `" ] && echo LOGGED-IN || echo WRONG`
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "sh", "args": []string{"-c", script + "; sleep 30"}})["session_id"].(string)
	testutil.Eventually(t, 10*time.Second, "the program asks", func() bool { return strings.Contains(viewText(t, cs, id), "Code:") })
	result := make(chan testutil.Result, 1)
	go func() {
		result <- testutil.CallTool(cs, 30*time.Second, "ask_secret", map[string]any{"sessionId": id, "prompt": "the MFA code"})
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(10 * time.Second):
		t.Fatal("no URL elicitation")
	}
	if !strings.HasPrefix(url, base+"/view/secret/") {
		t.Fatalf("elicitation URL %q", url)
	}
	if r, body := get(t, url, nil); r.StatusCode != 200 || !strings.Contains(body, "the MFA code") || !strings.Contains(body, `type="password"`) {
		t.Fatalf("the page: %d %.300s", r.StatusCode, body)
	}
	post := func() (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("secret="+secret))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if r, body := post(); r.StatusCode != 200 || !strings.Contains(body, "Sent into the session") {
		t.Fatalf("posting the secret: %d %.300s", r.StatusCode, body)
	}
	var res testutil.Result
	select {
	case res = <-result:
	case <-time.After(20 * time.Second):
		t.Fatal("ask_secret did not return after the secret was typed")
	}
	if res.Err != nil || res.IsError || !strings.Contains(res.Text, `"typed"`) {
		t.Fatalf("ask_secret: %+v", res)
	}
	testutil.Eventually(t, 10*time.Second, "the program took the secret", func() bool { return strings.Contains(viewText(t, cs, id), "LOGGED-IN") })
	raw := mustCall(t, cs, "view_screen", map[string]any{"session_id": id, "format": "raw"})
	for what, text := range map[string]string{"elicitation": seen.String(), "result": res.Text, "raw output": fmt.Sprint(raw)} {
		if strings.Contains(text, secret) {
			t.Fatalf("the secret is in the %s: %s", what, text)
		}
	}
	if r, _ := post(); r.StatusCode != http.StatusNotFound {
		t.Fatalf("the page worked twice: %d", r.StatusCode)
	}

	// Without URL elicitation: the address in the result.
	plain := connectHTTP(t, base+"/mcp", eraModern, nil)
	id2 := askSession(t, plain, secret)
	out := mustCall(t, plain, "ask_secret", map[string]any{"sessionId": id2, "prompt": "a password"})
	if out["status"] != "waiting" || !strings.HasPrefix(fmt.Sprint(out["url"]), base+"/view/secret/") {
		t.Fatalf("ask_secret without URL elicitation: %v", out)
	}
}
