package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// The live view (issue 21): /view on the same port as /mcp, behind the
// same token, shows a person the sessions of their token — each with its
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

// viewCookie carries the view key (never the token itself: the cookie
// opens the view, not /mcp).
const viewCookie = "termhost_view"

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
	key     [32]byte // the view key: what the cookie holds
	viewers chan struct{}
}

func newViewHandler(h *httpHandler) *viewHandler {
	v := &viewHandler{h: h, viewers: make(chan struct{}, maxViewers)}
	v.key = sha256.Sum256([]byte("termhost view\x00" + h.opts.Token))
	return v
}

func (v *viewHandler) cookieValue() string { return base64.RawURLEncoding.EncodeToString(v.key[:]) }

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
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "Method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == ViewPath && r.URL.Query().Has("token") {
		v.login(w, r)
		return
	}
	if !v.authorized(r) {
		http.Error(w, "Unauthorized: open the address `termhost view` prints (it carries the token once, then a cookie does)", http.StatusUnauthorized)
		return
	}
	switch p := strings.TrimPrefix(r.URL.Path, ViewPath); p {
	case "", "/":
		v.asset(w, "view.html", "text/html; charset=utf-8")
	case "/view.js":
		v.asset(w, "view.js", "text/javascript; charset=utf-8")
	case "/view.css":
		v.asset(w, "view.css", "text/css; charset=utf-8")
	case "/xterm.js":
		v.asset(w, "xterm.js", "text/javascript; charset=utf-8")
	case "/xterm.css":
		v.asset(w, "xterm.css", "text/css; charset=utf-8")
	case "/sessions":
		v.list(w, r)
	case "/ws":
		v.socket(w, r)
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

// login checks ?token=, sets the cookie (HttpOnly, SameSite=Strict) and
// redirects to the same page without the token, so it leaves the address
// bar and the history.
func (v *viewHandler) login(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !v.h.opts.NoAuth && !v.h.tokenOK(q.Get("token")) {
		http.Error(w, "Unauthorized: the token is not this server's; use the address `termhost view` prints", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: viewCookie, Value: v.cookieValue(), Path: ViewPath, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	q.Del("token")
	to := ViewPath
	if len(q) > 0 {
		to += "?" + q.Encode()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// authorized: no token needed (--no-auth), the view cookie, or the bearer
// token in the Authorization header (for programs).
func (v *viewHandler) authorized(r *http.Request) bool {
	if v.h.opts.NoAuth {
		return true
	}
	if c, err := r.Cookie(viewCookie); err == nil {
		got, err := base64.RawURLEncoding.DecodeString(c.Value)
		if err == nil && subtle.ConstantTimeCompare(got, v.key[:]) == 1 {
			return true
		}
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return strings.EqualFold(scheme, "Bearer") && v.h.tokenOK(strings.TrimSpace(token))
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
// person's take, give and keys come back on it.
func (v *viewHandler) socket(w http.ResponseWriter, r *http.Request) {
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
	// library checks it again against the Host.
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(viewKeysMax + 1024)
	var b [12]byte
	rand.Read(b[:])
	me := "view-" + base64.RawURLEncoding.EncodeToString(b[:])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer sess.GiveBack(me) // a person who goes away gives the keyboard back
	go v.person(ctx, cancel, c, sess, me)
	v.stream(ctx, c, sess, me)
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
func (v *viewHandler) stream(ctx context.Context, c *websocket.Conn, sess *session.Session, me string) {
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
