package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// The live view (issue 21): /view on the same port as /mcp, opened with a
// one-time link the token's holder asks for (see "The view's
// credentials" below), shows a person the sessions of their token — each with its
// kind, target, state, last events and its live screen — and lets them
// take the keyboard from the agent and give it back. A screen starts from
// the emulator's current screen and scrollback (the vt plugin's ansi
// render, asked with the chain held, so it matches an offset of the
// output exactly) and then gets the session's own output from that offset
// over a WebSocket: the viewer reads the ring buffer (ReadRange) and is
// no reader of the owner's, so it moves no read position or wait mark of
// the agent's, and a slow viewer never holds the session back.
//
// The page loads xterm.js, vendored in viewassets (tools/fetch-xterm.sh)
// and embedded: nothing comes from a CDN.

// ViewPath is the live view's page.
const ViewPath = "/view"

// ViewCodePath mints a login code for the view (POST, with the bearer
// token): what `termhost view` asks for. The address it prints,
// ViewPath#login=<code>, opens the view once.
const ViewCodePath = ViewPath + "/code"

// The view's credentials (issue 33 item 3). A cookie is sent by the
// browser to every port of the host (cookies ignore ports, and to
// SameSite another port is the same site), and a link in the token's
// address stays in the history; so the view has neither:
//   - a login code, minted for the bearer token's holder (ViewCodePath),
//     144 random bits, usable once within viewCodeTTL, in the address's
//     fragment (never sent to a server, not even this one);
//   - which the page exchanges (POST /view/login, its own Origin) for a
//     view key, 256 random bits, that it keeps in its memory only and
//     sends as a header (viewKeyHeader) on its requests and as a WebSocket
//     subprotocol (viewKeyProtocol) on its screens. A key is bound to the
//     Host it was given for and expires viewKeyTTL after its last use (the
//     page uses it every second while it is open). The browser sends it
//     nowhere by itself.
const (
	viewLoginPath   = ViewPath + "/login"
	viewKeyHeader   = "X-Termhost-View-Key"
	viewProtocol    = "termhost-view"  // the subprotocol the server selects
	viewKeyProtocol = "termhost-key."  // + the key: the one the page offers with it
	viewCodeTTL     = 60 * time.Second // a login code's life
	viewKeyTTL      = 5 * time.Minute  // a key's life after its last use
	maxViewCodes    = 16               // login codes waiting at once (the oldest goes)
	maxViewKeys     = 64               // keys alive at once (the nearest its end goes)
	viewLoginMax    = 1 << 10          // bytes of a login's body
	// viewKeyExpired is the close code of a screen whose key expired.
	viewKeyExpired websocket.StatusCode = 4401
)

// Tests shorten the lives of codes and keys (nanoseconds; 0: the constant).
var viewCodeTTLFor, viewKeyTTLFor atomic.Int64

func viewTTL(d time.Duration, over *atomic.Int64) time.Duration {
	if o := over.Load(); o > 0 {
		return time.Duration(o)
	}
	return d
}

// oldViewCookie is the cookie earlier versions set; it opens nothing now,
// and a page load clears it.
const oldViewCookie = "termhost_view"

// Bounds of the view.
const (
	maxViewers      = 128                   // WebSockets open at once (503 beyond)
	viewScrollLines = 1000                  // scrollback lines a viewer starts with
	viewResyncLines = 100                   // and gets again when it was left behind
	viewChunk       = 256 << 10             // bytes of output per message
	viewFrame       = 20 * time.Millisecond // between two sends of output
	viewResync      = 2 * time.Second       // between two screens sent to a viewer left behind
	viewRate        = 2 << 20               // bytes of output a second to one viewer
	viewWriteWait   = 10 * time.Second
	viewKeysMax     = 16 << 10 // bytes of one keys message
)

//go:embed viewassets
var viewAssets embed.FS

// viewHandler serves the page, its assets, the session list and the
// WebSockets of the screens.
type viewHandler struct {
	h       *httpHandler
	viewers chan struct{}
	mu      sync.Mutex
	// codes are the login codes waiting, keys the view keys alive, each
	// by the SHA-256 of its text: the table holds no credential.
	codes map[[32]byte]time.Time // → when it expires
	keys  map[[32]byte]*viewKey
}

// viewKey is a key a page holds.
type viewKey struct {
	host    string       // the Host it was given for: it works there only
	expires atomic.Int64 // unix nanoseconds; renewed by each use, 0 when evicted
}

func (k *viewKey) alive() bool { return time.Now().UnixNano() < k.expires.Load() }

func newViewHandler(h *httpHandler) *viewHandler {
	return &viewHandler{h: h, viewers: make(chan struct{}, maxViewers),
		codes: map[[32]byte]time.Time{}, keys: map[[32]byte]*viewKey{}}
}

func (v *viewHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	if !v.h.opts.AllowRemote && !isLocalHost(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: Host %q is not localhost (DNS-rebinding guard)", r.Host), http.StatusForbidden)
		return
	}
	// A page elsewhere never reads or drives a terminal here: an Origin,
	// when sent, must be this server's own (the page itself).
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not this server's", origin), http.StatusForbidden)
		return
	}
	if code, ok := strings.CutPrefix(r.URL.Path, secretPagePath); ok && (r.Method == http.MethodGet || r.Method == http.MethodPost) {
		v.secret(w, r, code) // asksecret.go: the one-time code is the page's credential
		return
	}
	switch r.URL.Path {
	case ViewCodePath:
		v.mint(w, r)
		return
	case viewLoginPath:
		v.login(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "Method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// The page and its assets hold nothing secret: they load without a
	// credential, and the page then logs in with the code in its
	// address's fragment.
	switch p := strings.TrimPrefix(r.URL.Path, ViewPath); p {
	case "", "/":
		if r.URL.Query().Has("token") {
			http.Error(w, "The token no longer goes in the view's address (it opened the view to whoever had the address, and stayed in the history). Run `termhost view` for a one-time link.", http.StatusBadRequest)
			return
		}
		if _, err := r.Cookie(oldViewCookie); err == nil {
			http.SetCookie(w, &http.Cookie{Name: oldViewCookie, Value: "", Path: ViewPath, MaxAge: -1})
		}
		v.asset(w, "view.html", "text/html; charset=utf-8")
		return
	case "/view.js":
		v.asset(w, "view.js", "text/javascript; charset=utf-8")
		return
	case "/view.css":
		v.asset(w, "view.css", "text/css; charset=utf-8")
		return
	case "/xterm.js":
		v.asset(w, "xterm.js", "text/javascript; charset=utf-8")
		return
	case "/xterm.css":
		v.asset(w, "xterm.css", "text/css; charset=utf-8")
		return
	}
	key, ok := v.authorized(r)
	if !ok {
		http.Error(w, "Unauthorized: this needs the view's key, which only the page that logged in holds (or the bearer token); run `termhost view` for a new link", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case ViewPath + "/sessions":
		v.list(w, r)
	case ViewPath + "/ws":
		v.socket(w, r, key)
	default:
		http.NotFound(w, r)
	}
}

// sameOrigin reports whether an Origin header names the host the request
// was sent to.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

// crossSite reports whether the browser says the request comes from
// another page than the view's own (Sec-Fetch-Site; programs send none).
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}

// mint answers a POST with the bearer token with a login code:
// {"code", "expires_in_s"}. It is what `termhost view` asks for; a
// browser never does (a request with an Origin, or the browser's fetch
// metadata, is refused).
func (v *viewHandler) mint(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
		http.Error(w, "Forbidden: a login code is minted for a program with the token (termhost view), not for a page", http.StatusForbidden)
		return
	}
	if !v.h.opts.NoAuth {
		scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		if !strings.EqualFold(scheme, "Bearer") || !v.h.tokenOK(strings.TrimSpace(token)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="termhost"`)
			http.Error(w, "Unauthorized: a login code needs the header Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
	}
	code := randomText(18)
	ttl := viewTTL(viewCodeTTL, &viewCodeTTLFor)
	now := time.Now()
	v.mu.Lock()
	v.prune(now)
	for len(v.codes) >= maxViewCodes { // the oldest goes
		var oldest [32]byte
		var at time.Time
		for h, exp := range v.codes {
			if at.IsZero() || exp.Before(at) {
				oldest, at = h, exp
			}
		}
		delete(v.codes, oldest)
	}
	v.codes[sha256.Sum256([]byte(code))] = now.Add(ttl)
	v.mu.Unlock()
	writeViewJSON(w, map[string]any{"code": code, "expires_in_s": int((ttl + time.Second - 1) / time.Second)})
}

// login exchanges a login code (JSON {"code"}, POSTed by the view's page
// from its own origin) for a view key: {"key", "expires_in_s"}. A code
// works once, within its life; the key works on this Host only.
func (v *viewHandler) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// ServeHTTP checked an Origin sent is this server's; here one must be.
	if r.Header.Get("Origin") == "" || crossSite(r) {
		http.Error(w, "Forbidden: a login comes from the view's own page", http.StatusForbidden)
		return
	}
	var in struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, viewLoginMax)).Decode(&in); err != nil || in.Code == "" {
		http.Error(w, "Bad request: the body is {\"code\": …}", http.StatusBadRequest)
		return
	}
	sum := sha256.Sum256([]byte(in.Code))
	now := time.Now()
	ttl := viewTTL(viewKeyTTL, &viewKeyTTLFor)
	v.mu.Lock()
	v.prune(now)
	_, ok := v.codes[sum]
	delete(v.codes, sum)
	var key string
	if ok {
		for len(v.keys) >= maxViewKeys { // the nearest its end goes
			var last [32]byte
			var k *viewKey
			for h, kk := range v.keys {
				if k == nil || kk.expires.Load() < k.expires.Load() {
					last, k = h, kk
				}
			}
			k.expires.Store(0)
			delete(v.keys, last)
		}
		key = randomText(32)
		k := &viewKey{host: r.Host}
		k.expires.Store(now.Add(ttl).UnixNano())
		v.keys[sha256.Sum256([]byte(key))] = k
	}
	v.mu.Unlock()
	if !ok {
		http.Error(w, "Unauthorized: this link was used or has expired (a link works once, within a minute); run `termhost view` for a new one", http.StatusUnauthorized)
		return
	}
	writeViewJSON(w, map[string]any{"key": key, "expires_in_s": int((ttl + time.Second - 1) / time.Second)})
}

// prune forgets expired codes and keys. v.mu is held.
func (v *viewHandler) prune(now time.Time) {
	for h, exp := range v.codes {
		if !now.Before(exp) {
			delete(v.codes, h)
		}
	}
	for h, k := range v.keys {
		if !k.alive() {
			delete(v.keys, h)
		}
	}
}

// authorized: no token needed (--no-auth), the bearer token (programs),
// or a view key — in the viewKeyHeader header, or for a WebSocket as the
// subprotocol viewKeyProtocol+key — alive, for this Host, and not sent
// from another page. A key's use renews it; the key is returned (nil for
// the other two).
func (v *viewHandler) authorized(r *http.Request) (*viewKey, bool) {
	if v.h.opts.NoAuth {
		return nil, true
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if strings.EqualFold(scheme, "Bearer") && v.h.tokenOK(strings.TrimSpace(token)) {
		return nil, true
	}
	given := r.Header.Get(viewKeyHeader)
	if given == "" {
		for _, p := range strings.Split(strings.Join(r.Header.Values("Sec-WebSocket-Protocol"), ","), ",") {
			if k, ok := strings.CutPrefix(strings.TrimSpace(p), viewKeyProtocol); ok {
				given = k
				break
			}
		}
	}
	if given == "" || crossSite(r) {
		return nil, false
	}
	sum := sha256.Sum256([]byte(given))
	v.mu.Lock()
	k := v.keys[sum]
	v.mu.Unlock()
	if k == nil || !strings.EqualFold(k.host, r.Host) {
		return nil, false
	}
	now := time.Now()
	renewed := now.Add(viewTTL(viewKeyTTL, &viewKeyTTLFor)).UnixNano()
	for { // renewed only while alive: an expired or evicted key stays dead
		exp := k.expires.Load()
		if exp <= now.UnixNano() {
			return nil, false
		}
		if k.expires.CompareAndSwap(exp, max(exp, renewed)) {
			return k, true
		}
	}
}

// randomText is n random bytes, base64url.
func randomText(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeViewJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (v *viewHandler) asset(w http.ResponseWriter, name, ctype string) {
	dir := "viewassets/"
	b, err := viewAssets.ReadFile(dir + name)
	if err != nil {
		http.NotFound(w, nil)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(b)
}

// visible reports whether a session owned by owner is the token's: opened
// without an MCP session under it, or by an MCP session it created.
func (v *viewHandler) visible(owner string) bool {
	if owner == v.h.owner {
		return true
	}
	user, ok := v.h.srv.minted.Load(owner)
	return ok && user.(string) == v.h.user
}

// sessions are the token's sessions, oldest first.
func (v *viewHandler) sessions() []*session.Session {
	var out []*session.Session
	for _, s := range v.h.srv.deps.Sessions.List("") {
		if v.visible(s.Owner()) {
			out = append(out, s)
		}
	}
	return out
}

// find is one of the token's sessions by id: another token's is not found.
func (v *viewHandler) find(id string) *session.Session {
	for _, s := range v.sessions() {
		if s.ID == id {
			return s
		}
	}
	return nil
}

type viewEvent struct {
	Type   string          `json:"type"`
	At     time.Time       `json:"at"`
	Fields json.RawMessage `json:"fields,omitempty"`
}

type viewEntry struct {
	ID      string      `json:"id"`
	Name    string      `json:"name,omitempty"`
	Kind    string      `json:"kind"`
	Target  string      `json:"target"`
	State   string      `json:"state"`
	Cols    int         `json:"cols"`
	Rows    int         `json:"rows"`
	Screen  bool        `json:"screen"`
	Control string      `json:"control"` // "agent" or "person"
	Events  []viewEvent `json:"events"`
}

// lastEvents is how many of a session's newest events the list shows.
const lastEvents = 6

func (v *viewHandler) list(w http.ResponseWriter, _ *http.Request) {
	out := []viewEntry{}
	for _, s := range v.sessions() {
		in := s.Info()
		e := viewEntry{ID: s.ID, Name: s.Name, Kind: string(s.Kind), Target: s.Peer.String(), State: string(in.State),
			Cols: in.Cols, Rows: in.Rows, Screen: s.HasScreen(), Control: "agent", Events: []viewEvent{}}
		if _, held := s.HumanHolder(); held {
			e.Control = "person"
		}
		evs := s.Events(0)
		for _, ev := range evs[max(0, len(evs)-lastEvents):] {
			ve := viewEvent{Type: string(ev.Type), At: ev.At}
			if ev.Body != nil {
				ve.Fields = abi.FieldsJSON(ev.Body)
			}
			e.Events = append(e.Events, ve)
		}
		out = append(out, e)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"sessions": out})
}

// viewMsg is a message of the page's WebSocket, either way.
type viewMsg struct {
	T       string `json:"t"`                 // reset, size, control, end; take, give, keys
	Cols    int    `json:"cols,omitempty"`    // reset, size
	Rows    int    `json:"rows,omitempty"`    // reset, size
	Data    string `json:"data,omitempty"`    // reset: the screen as ANSI; keys: the person's keys
	Control string `json:"control,omitempty"` // reset, control: you, other, none
	State   string `json:"state,omitempty"`   // reset, end
	Error   string `json:"error,omitempty"`   // a refused take or keys
}

// socket streams one session's screen: a reset with the current screen,
// then output as binary messages from the offset the screen matches; a
// resize, a change of control or the session's end as text messages. The
// person's take, give and keys come back on it. A screen opened with a
// view key closes (viewKeyExpired) when the key expires.
func (v *viewHandler) socket(w http.ResponseWriter, r *http.Request, key *viewKey) {
	sess := v.find(r.URL.Query().Get("session"))
	if sess == nil {
		http.Error(w, "Session not found", http.StatusNotFound)
		return
	}
	select {
	case v.viewers <- struct{}{}:
		defer func() { <-v.viewers }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("Service Unavailable: %d viewers are open", maxViewers), http.StatusServiceUnavailable)
		return
	}
	// Origin was checked above (this server's own, when sent); the
	// library checks it again against the Host. The page offers two
	// subprotocols, viewProtocol and its key: the answer names the first.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{viewProtocol}})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(viewKeysMax + 1024)
	me := "view-" + randomText(12)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer sess.GiveBack(me) // a person who goes away gives the keyboard back
	go v.person(ctx, cancel, c, sess, me)
	v.stream(ctx, c, sess, me, key)
}

// person reads the page's messages: take, give, keys.
func (v *viewHandler) person(ctx context.Context, cancel context.CancelFunc, c *websocket.Conn, sess *session.Session, me string) {
	defer cancel()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m viewMsg
		if typ != websocket.MessageText || json.Unmarshal(data, &m) != nil {
			continue
		}
		switch m.T {
		case "take":
			if !sess.HasScreen() {
				v.send(ctx, c, viewMsg{T: "control", Control: "none", Error: "this session takes no keys"})
			} else if err := sess.TakeControl(me); err != nil {
				v.send(ctx, c, viewMsg{T: "control", Control: "other", Error: err.Error()})
			}
		case "give":
			sess.GiveBack(me)
		case "keys":
			if len(m.Data) > viewKeysMax {
				continue
			}
			sctx, done := context.WithTimeout(ctx, viewWriteWait)
			err := sess.SendHuman(sctx, me, []byte(m.Data))
			done()
			if err != nil {
				v.send(ctx, c, viewMsg{T: "control", Control: v.control(sess, me), Error: err.Error()})
			}
		}
	}
}

// control is who holds the keyboard, as the viewer me sees it.
func (v *viewHandler) control(sess *session.Session, me string) string {
	switch holder, held := sess.HumanHolder(); {
	case !held:
		return "none"
	case holder == me:
		return "you"
	}
	return "other"
}

func (v *viewHandler) send(ctx context.Context, c *websocket.Conn, m viewMsg) error {
	b, _ := json.Marshal(m)
	wctx, cancel := context.WithTimeout(ctx, viewWriteWait)
	defer cancel()
	return c.Write(wctx, websocket.MessageText, b)
}

// stream sends the screen, then the output from the offset the screen
// matches, until the page goes away. Output evicted before it was sent
// (a viewer far behind) sends the screen again.
func (v *viewHandler) stream(ctx context.Context, c *websocket.Conn, sess *session.Session, me string, key *viewKey) {
	var at uint64
	var cols, rows int
	var control, state string
	lines := viewScrollLines
	reset := func() error {
		data, off, err := screenANSI(ctx, sess, lines)
		if err != nil {
			return err
		}
		at = off
		cols, rows = sess.Size()
		control, state = v.control(sess, me), string(sess.State())
		return v.send(ctx, c, viewMsg{T: "reset", Cols: cols, Rows: rows, Data: data, Control: control, State: state})
	}
	if err := reset(); err != nil {
		v.send(ctx, c, viewMsg{T: "end", Error: err.Error()})
		c.Close(websocket.StatusNormalClosure, "")
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ended := false
	var sent, resynced time.Time
	allowance, filled := viewChunk, time.Now()
	for {
		if key != nil && !key.alive() {
			c.Close(viewKeyExpired, "the view's key expired: run termhost view for a new link")
			return
		}
		changed := sess.Changed()
		// Output that comes in a flood goes in frames: at most one a
		// viewFrame, each with all there is (up to viewChunk a message),
		// so a busy session costs its viewers few wake-ups and messages.
		// The first change after a quiet spell goes at once.
		if wait := viewFrame - time.Since(sent); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
		}
		// A viewer gets at most viewRate bytes a second (in bursts of up
		// to viewChunk): a person reads a screen, not a flood, and
		// twenty viewers must not take a busy session's CPU. What a
		// viewer is not sent in time is evicted from the ring, and the
		// screen is sent instead (below).
		allowance = min(allowance+int(time.Since(filled).Seconds()*viewRate), viewChunk)
		filled = time.Now()
		for allowance > 0 {
			p, start := sess.ReadRange(at, at+uint64(allowance))
			if start > at {
				// Far behind (a flood): the screen again, at most once a
				// viewResync, as asking it holds the session's walks off.
				if wait := viewResync - time.Since(resynced); wait > 0 {
					select {
					case <-time.After(wait):
					case <-ctx.Done():
						return
					}
				}
				lines = viewResyncLines
				if err := reset(); err != nil {
					return
				}
				resynced = time.Now()
				continue
			}
			if len(p) == 0 {
				break
			}
			wctx, cancel := context.WithTimeout(ctx, viewWriteWait)
			err := c.Write(wctx, websocket.MessageBinary, p)
			cancel()
			if err != nil {
				return
			}
			at = start + uint64(len(p))
			allowance -= len(p)
			sent = time.Now()
		}
		if cc, rr := sess.Size(); cc != cols || rr != rows {
			cols, rows = cc, rr
			if v.send(ctx, c, viewMsg{T: "size", Cols: cols, Rows: rows}) != nil {
				return
			}
		}
		if now := v.control(sess, me); now != control {
			control = now
			if v.send(ctx, c, viewMsg{T: "control", Control: control}) != nil {
				return
			}
		}
		if !ended && !sess.Alive() {
			ended = true
			if v.send(ctx, c, viewMsg{T: "end", State: string(sess.State())}) != nil {
				return
			}
		}
		var more <-chan time.Time
		if allowance <= 0 { // output is waiting: the next frame sends it
			more = time.After(viewFrame)
		}
		select {
		case <-changed:
		case <-more:
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// screenANSI renders the session's screen and the end of its scrollback
// as ANSI that puts an xterm of the session's size into the same state
// (text, colours, cursor, the modes keys depend on), and returns the
// output offset it matches. A session without a screen gives the end of
// its output instead.
func screenANSI(ctx context.Context, sess *session.Session, lines int) (string, uint64, error) {
	if !sess.HasScreen() {
		m := sess.Mark()
		p, start := sess.ReadRange(m.Off-min(m.Off, viewChunk), m.Off)
		return string(p), start + uint64(len(p)), nil
	}
	type reply struct {
		Cols          int      `json:"cols"`
		Rows          int      `json:"rows"`
		Cursor        position `json:"cursor"`
		CursorVisible bool     `json:"cursorVisible"`
		AltScreen     bool     `json:"altScreen"`
		Modes         struct {
			AppCursor      bool `json:"appCursor"`
			AppKeypad      bool `json:"appKeypad"`
			BracketedPaste bool `json:"bracketedPaste"`
		} `json:"modes"`
		Total   int      `json:"total"`
		History int      `json:"history"`
		Offset  int      `json:"offset"`
		Lines   []string `json:"lines"`
	}
	var rep reply
	at, err := sess.ViewScreen(ctx, func(q func([]byte) ([]byte, error)) error {
		ask := func(off, limit int) error {
			req, _ := json.Marshal(map[string]any{"op": "scrollback", "format": "ansi", "offset": off, "limit": limit})
			b, err := q(req)
			if err != nil {
				return err
			}
			return json.Unmarshal(b, &rep)
		}
		if err := ask(0, 1); err != nil {
			return err
		}
		if err := ask(max(0, rep.Total-lines), lines); err != nil {
			return err
		}
		if rep.Offset+len(rep.Lines) < rep.Total { // the page ended early (its byte bound): the screen alone
			return ask(max(0, rep.Total-rep.Rows), rep.Rows)
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	var b strings.Builder
	rows := rep.Lines
	split := max(0, len(rows)-rep.Rows) // history lines before the screen
	if rep.AltScreen {
		for i, l := range rows[:split] {
			if i > 0 {
				b.WriteString("\r\n")
			}
			b.WriteString("\x1b[0m" + l)
		}
		b.WriteString("\x1b[0m\x1b[?1049h\x1b[H\x1b[2J")
		for i, l := range rows[split:] {
			b.WriteString("\x1b[" + strconv.Itoa(i+1) + ";1H\x1b[0m" + l)
		}
	} else {
		for i, l := range rows {
			if i > 0 {
				b.WriteString("\r\n")
			}
			b.WriteString("\x1b[0m" + l)
		}
	}
	b.WriteString("\x1b[0m")
	fmt.Fprintf(&b, "\x1b[%d;%dH", rep.Cursor.Row+1, rep.Cursor.Col+1)
	if rep.Modes.AppCursor {
		b.WriteString("\x1b[?1h")
	}
	if rep.Modes.AppKeypad {
		b.WriteString("\x1b=")
	}
	if rep.Modes.BracketedPaste {
		b.WriteString("\x1b[?2004h")
	}
	if !rep.CursorVisible {
		b.WriteString("\x1b[?25l")
	}
	return b.String(), at, nil
}
