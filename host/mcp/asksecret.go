package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/device"
	"github.com/termhost/termhost/host/session"
)

// ask_secret (issue 21): a secret no credential supplies (an MFA code, a
// password the person keeps to themselves) asked of the person, never of
// the model. The tool makes a one-time page on this server,
// /view/secret/<code>, and sends its address as an MCP URL-mode
// elicitation (2025-11-25) when the client supports one; otherwise the
// result gives the address for the agent to show its person, and a
// second call with the same prompt waits for them. What the person types
// there goes straight into the session as send_secret types a secret
// (session.SendCredential: masked from then on, refused where the
// terminal would echo it, the line before it checked) and never passes
// through MCP. Served over HTTP only: there is no page to serve over
// stdio.
//
// The agent chose the session, so the page is made only where the person
// can see where the secret goes (askgate.go: a program of --ask-programs
// asking for it, or a Telnet/SSH destination the page shows and the person
// confirms), and it is typed only if it still goes to the very place the
// page showed. What is typed is one line: no line end or other control
// character (notOneLine), so a submission cannot type a command after it.
//
// Every wait on the person is bounded (bound): by askWait, the page's
// expiry, the call's context, the terminal session ending, and the MCP
// session closing or the server shutting down. go-sdk's ServerSession.Close
// waits for the calls in flight without cancelling them, so an ask that
// waited on anything else would hold a DELETE (and the server's close)
// until someone typed.

// Bounds of the pages waiting for a secret.
const (
	askTTL         = 10 * time.Minute
	maxAsksOwner   = 16
	maxAsks        = 256
	maxPromptLen   = 200
	maxSecretForm  = 8 << 10
	secretPagePath = ViewPath + "/secret/"
)

// askWait is the longest one call waits for the person: a login's field,
// or an ask_secret that waits for its page. Shorter than a page's life: an
// ask_secret page stays open after a call stops waiting, for another call
// to wait on. Tests shorten it (askWaitFor).
const askWait = 2 * time.Minute

var askWaitFor atomic.Int64 // nanoseconds; 0: askWait

func askWaitLimit() time.Duration {
	if d := askWaitFor.Load(); d > 0 {
		return time.Duration(d)
	}
	return askWait
}

// secretAsk is one page waiting for a secret.
type secretAsk struct {
	sess   *session.Session
	owner  string
	prompt string
	login  bool // a login's page: only that login waits on it
	// dest is where the secret goes, as the page shows it; gated: it must
	// still go there (askDestination) when the person sends it — every
	// page but that of a login with a credential, whose target the
	// credential names (TRUST-1).
	dest    askDest
	gated   bool
	expires time.Time
	done    chan struct{} // closed once the page was used; err is what typing it gave
	err     error
	// used: the person sent the page (it serves no more); seen: a call
	// reported that. An ask_secret page used but not yet seen stays for
	// the next ask_secret with its prompt to report (guarded by asks.mu).
	used, seen bool
}

// asks are the pages waiting, by code, and the calls waiting on them.
type asks struct {
	mu sync.Mutex
	m  map[string]*secretAsk
	// waits are the calls waiting on the person, each with the MCP
	// session it belongs to; closing are the MCP sessions being closed
	// (and why), shut why the server is shutting down: a wait that starts
	// then ends at once.
	waits   map[*askWaiter]struct{}
	closing map[string]error
	shut    error
	// progs: the programs a local secret may go to (Config.AskPrograms),
	// resolved once.
	progsOnce sync.Once
	progs     askPrograms
}

type askWaiter struct {
	mcp    string
	cancel context.CancelCauseFunc
}

// add makes a page for owner's session k.sess; it returns its code.
func (a *asks) add(owner string, k *secretAsk) (string, *secretAsk, error) {
	var b [18]byte // 144 bits
	rand.Read(b[:])
	code := base64.RawURLEncoding.EncodeToString(b[:])
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[string]*secretAsk)
	}
	now, mine := time.Now(), 0
	for c, k := range a.m {
		switch {
		case now.After(k.expires):
			delete(a.m, c)
		case k.owner == owner && !k.used:
			mine++
		}
	}
	if mine >= maxAsksOwner || len(a.m) >= maxAsks {
		return "", nil, fmt.Errorf("%w: %d pages of yours are waiting for a secret (at most %d, %d in all); each expires %s after it is made",
			session.ErrLimit, mine, maxAsksOwner, maxAsks, askTTL)
	}
	k.owner, k.expires, k.done = owner, now.Add(askTTL), make(chan struct{})
	a.m[code] = k
	return code, k, nil
}

// pending finds owner's newest ask_secret page for sess with this prompt
// that still waits, or that was used and no call has said so yet.
func (a *asks) pending(owner string, sess *session.Session, prompt string) (string, *secretAsk) {
	a.mu.Lock()
	defer a.mu.Unlock()
	code, found, now := "", (*secretAsk)(nil), time.Now()
	for c, k := range a.m {
		if k.login || k.owner != owner || k.sess != sess || k.prompt != prompt || k.seen || now.After(k.expires) {
			continue
		}
		if found == nil || k.expires.After(found.expires) {
			code, found = c, k
		}
	}
	return code, found
}

// peek finds a live page without using it; take uses it (once), and
// finish records what typing it gave.
func (a *asks) peek(code string) *secretAsk {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.m[code]
	if k == nil || k.used || time.Now().After(k.expires) {
		return nil
	}
	return k
}

func (a *asks) take(code string) *secretAsk {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.m[code]
	if k == nil || k.used || time.Now().After(k.expires) {
		delete(a.m, code)
		return nil
	}
	k.used = true
	if k.login {
		delete(a.m, code) // its login waits on it; nothing else asks
	}
	return k
}

func (a *asks) finish(k *secretAsk, err error) {
	k.err = err
	close(k.done)
}

// markSeen: a call reported the page's outcome; it is forgotten.
func (a *asks) markSeen(code string, k *secretAsk) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k.seen = true
	if a.m[code] == k {
		delete(a.m, code)
	}
}

func (a *asks) drop(code string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, code)
}

// endMCP ends every wait of the MCP session id, and any that starts
// before forgetMCP, with why, and drops the pages it owns: go-sdk closes
// a session only once its calls have returned (see above).
func (a *asks) endMCP(id string, why error) {
	if id == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing == nil {
		a.closing = make(map[string]error)
	}
	a.closing[id] = why
	for w := range a.waits {
		if w.mcp == id {
			w.cancel(why)
		}
	}
	for c, k := range a.m {
		if k.owner == id {
			delete(a.m, c)
		}
	}
}

// forgetMCP: the MCP session id closed (or its DELETE failed).
func (a *asks) forgetMCP(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.closing, id)
}

// shutdown ends every wait, and any that starts after, with why.
func (a *asks) shutdown(why error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.shut = why
	for w := range a.waits {
		w.cancel(why)
	}
}

// errAskTimeout: the person typed nothing on the page while a call waited.
var errAskTimeout = errors.New("no secret was typed on the page")

// bound is the context one call waits on the person under: ctx, ended
// also (each with its cause, context.Cause) at askWait or the page's
// expiry, when the terminal session ends, and when the MCP session mcp
// closes or the server shuts down. stop releases it.
func (a *asks) bound(ctx context.Context, mcp string, k *secretAsk) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	limit := askWaitLimit()
	why := fmt.Errorf("%w within %s", errAskTimeout, limit)
	if left := time.Until(k.expires); left < limit {
		limit, why = left, fmt.Errorf("%w: the page expired (%s after it was made)", errAskTimeout, askTTL)
	}
	ctx, cancelT := context.WithTimeoutCause(ctx, limit, why)
	w := &askWaiter{mcp: mcp, cancel: cancel}
	a.mu.Lock()
	switch {
	case a.shut != nil:
		cancel(a.shut)
	case mcp != "" && a.closing[mcp] != nil:
		cancel(a.closing[mcp])
	default:
		if a.waits == nil {
			a.waits = make(map[*askWaiter]struct{})
		}
		a.waits[w] = struct{}{}
	}
	a.mu.Unlock()
	go func() {
		select {
		case <-k.sess.Released():
			cancel(fmt.Errorf("session %s ended (%v)", k.sess.ID, k.sess.DisconnectedErr()))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		a.mu.Lock()
		delete(a.waits, w)
		a.mu.Unlock()
		cancelT()
		cancel(nil)
	}
}

// await waits, under a context from bound, for the page to be used: used
// then says it was and err is what typing it gave; otherwise err is why
// the wait ended.
func (a *asks) await(ctx context.Context, code string, k *secretAsk) (used bool, err error) {
	select {
	case <-k.done:
	case <-ctx.Done():
		select {
		case <-k.done: // both at once: the page's outcome wins
		default:
			return false, waitEnded(ctx)
		}
	}
	a.markSeen(code, k)
	if k.err != nil {
		return true, fmt.Errorf("what the person sent was not typed into the session: %w", k.err)
	}
	return true, nil
}

// waitEnded says why a bound context ended.
func waitEnded(ctx context.Context) error {
	err := context.Cause(ctx)
	if errors.Is(err, context.Canceled) {
		return errors.New("the call was cancelled while it waited for the person")
	}
	return err
}

// mcpID is the id of the MCP session a call came on ("" without one).
func mcpID(req *sdk.CallToolRequest) string {
	if req == nil || req.Session == nil {
		return ""
	}
	return req.Session.ID()
}

type askIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
	Prompt    string `json:"prompt" jsonschema:"what to ask"`
}

// addAskSecret registers ask_secret (once: the HTTP transport calls it).
func (s *Server) addAskSecret() {
	s.askOnce.Do(func() {
		p := s.askPrograms()
		s.log.Debug("ask_secret types into local programs of --ask-programs", "programs", p.named, "found", len(p.paths))
		if len(p.writable) > 0 {
			s.log.Warn("ask-programs: programs this user can replace (so can a program the agent runs); a name found in PATH is left out",
				"programs", strings.Join(p.writable, ", "))
		}
		addTool(s, textVoice, &sdk.Tool{
			Name: "ask_secret",
			// No annotations: the defaults (destructive, open world) are
			// this tool's.
			Description: "A secret from your person, typed into the session on a page you never see. Call again to wait for it.",
		}, func(p schemaProps) {
			sessionRef(p)
			p["prompt"].MaxLength = ptr(maxPromptLen)
		}, s.askSecret)
	})
}

func (s *Server) askSecret(ctx context.Context, req *sdk.CallToolRequest, in askIn) (any, error) {
	sess, err := s.lookup(req, "sessionId", in.SessionID)
	if err != nil {
		return nil, err
	}
	if !sess.Alive() {
		return nil, sess.DisconnectedErr()
	}
	base, _ := s.httpBase.Load().(string)
	if base == "" {
		return nil, fmt.Errorf("%w: ask_secret needs serve --http (the person types the secret on a page of this server)", session.ErrUnsupported)
	}
	own := owner(req)
	// Only where the person can see the secret goes: refused before any
	// page is made (askgate.go).
	dest, refusal := s.askDestination(sess)
	// A page of an earlier call with this prompt: waited on, not made
	// again — unless it still waits and its secret would now go elsewhere.
	code, ask := s.asks.pending(own, sess, in.Prompt)
	if ask != nil && !isDone(ask.done) && (refusal != nil || !ask.dest.same(dest)) {
		s.asks.drop(code)
		ask = nil
	}
	if ask == nil && refusal != nil {
		return nil, invalid("sessionId", "%v", refusal)
	}
	again := ask != nil
	if !again {
		if code, ask, err = s.asks.add(own, &secretAsk{sess: sess, prompt: in.Prompt, dest: dest, gated: true}); err != nil {
			return nil, err
		}
	}
	url := base + secretPagePath + code
	msg := fmt.Sprintf("The agent asks for a secret for session %s; you type it on termhost's page, and the agent never sees it.", sess.ID)
	if in.Prompt != "" {
		msg = fmt.Sprintf("The agent asks, for session %s: \u201c%s\u201d. You type it on termhost's page, and the agent never sees it.", sess.ID, shown(in.Prompt))
	}
	typed := map[string]any{"sessionId": sess.ID, "status": "typed"}
	if ss := req.Session; ss != nil && urlElicitation(ss) && !isDone(ask.done) {
		status, err := s.elicitAsk(ctx, ss, code, ask, url, msg)
		switch {
		case err == nil:
			return map[string]any{"sessionId": sess.ID, "status": status}, nil
		case !errors.Is(err, errNoElicit):
			return nil, s.askErr(err, ask)
		}
		// The client would not take it (a stateless request cannot be
		// asked back): the address goes in the result instead.
	}
	if again {
		actx, stop := s.asks.bound(ctx, mcpID(req), ask)
		defer stop()
		if _, err := s.asks.await(actx, code, ask); err != nil {
			return nil, s.askErr(err, ask)
		}
		return typed, nil
	}
	return map[string]any{"sessionId": sess.ID, "status": "waiting", "url": url, "expires_in_s": int(askTTL.Seconds()),
		"note": "show this url to your person: what they type there goes into the session, not through you. " +
			"Then call ask_secret again with the same prompt: it waits until they have typed it"}, nil
}

// askPrograms is the allow-list of local programs, resolved (PATH
// lookups) on first use: when HTTP serving starts (addAskSecret).
func (s *Server) askPrograms() askPrograms {
	s.asks.progsOnce.Do(func() {
		names := s.cfg.AskPrograms
		if names == nil {
			names = DefaultAskPrograms
		}
		s.asks.progs = resolveAskPrograms(names)
	})
	return s.asks.progs
}

// askErr is an ask_secret wait that ended with nothing typed: the page,
// still open, can be waited on again.
func (s *Server) askErr(err error, ask *secretAsk) error {
	if errors.Is(err, errAskTimeout) && time.Now().Before(ask.expires) {
		return fmt.Errorf("%w; the page stays open until %s: call ask_secret again with the same prompt to wait for it",
			err, ask.expires.UTC().Format(time.TimeOnly+" UTC"))
	}
	return err
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// errNoElicit: the client did not take the elicitation (the page is still
// waiting).
var errNoElicit = errors.New("the client did not take the URL elicitation")

// elicitAsk sends the page's address as a URL-mode elicitation and waits
// for the person (bounded: asks.bound): "typed", or the client's action
// ("decline", "cancel", the page dropped) when they would not; errNoElicit
// when the client did not take it.
func (s *Server) elicitAsk(ctx context.Context, ss *sdk.ServerSession, code string, ask *secretAsk, url, msg string) (string, error) {
	ctx, stop := s.asks.bound(ctx, ss.ID(), ask)
	defer stop()
	res, err := ss.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: msg, URL: url, ElicitationID: code})
	if err != nil {
		if ctx.Err() != nil {
			return "", waitEnded(ctx) // not refused: the wait ended first
		}
		return "", fmt.Errorf("%w: %v", errNoElicit, err)
	}
	if res.Action != "accept" {
		s.asks.drop(code)
		return res.Action, nil
	}
	used, err := s.asks.await(ctx, code, ask)
	if used {
		ss.NotifyElicitationComplete(ctx, &sdk.ElicitationCompleteParams{ElicitationID: code})
	}
	if err != nil {
		return "", err
	}
	return "typed", nil
}

// loginAsk is the device.Ask of a login (telnet_connect with a
// credential, set_mode) that meets a field no credential supplies: over
// HTTP, to a client that takes URL elicitations, the person is sent a
// one-time page as ask_secret sends one, and what they type there goes
// into the session; the login waits for them at most askWait. nil
// otherwise (stdio, or a client that cannot be asked): the login then
// fails naming the field.
func (s *Server) loginAsk(req *sdk.CallToolRequest, sess *session.Session, credID string) device.Ask {
	base, _ := s.httpBase.Load().(string)
	ss := req.Session
	if base == "" || ss == nil || !urlElicitation(ss) {
		return nil
	}
	own := owner(req)
	return func(ctx context.Context, field, prompt string) error {
		if len(prompt) > maxPromptLen {
			prompt = prompt[:maxPromptLen]
		}
		lacks := fmt.Sprintf("credential %q has none", credID)
		if credID == "" {
			lacks = "no credential was given"
		}
		what := fmt.Sprintf("the %s (%s); the device says %q", field, lacks, prompt)
		// A credential's login goes to the credential's own target
		// (checked before it started); any other only where ask_secret
		// would type.
		dest, refusal := s.askDestination(sess)
		if credID == "" && refusal != nil {
			return fmt.Errorf("no page was made for the person: %w", refusal)
		}
		code, ask, err := s.asks.add(own, &secretAsk{sess: sess, prompt: what, login: true, dest: dest, gated: credID == ""})
		if err != nil {
			return err
		}
		defer s.asks.drop(code) // the login's alone: it ends with the login's wait
		msg := fmt.Sprintf("termhost's login of session %s asks for the %s: %s. Type it on this page; the agent never sees it.", sess.ID, field, lacks)
		status, err := s.elicitAsk(ctx, ss, code, ask, base+secretPagePath+code, msg)
		if err != nil {
			return err
		}
		if status != "typed" {
			return fmt.Errorf("the person answered %q on the page (nothing was typed)", status)
		}
		return nil
	}
}

// noLoginField is a login's error for a field credential credID lacks
// when the person could not be asked (loginAsk gave nil): what would
// supply it.
func (s *Server) noLoginField(field, credID string) error {
	hint := fmt.Sprintf("add %q to it for this device", field)
	if field == "username" {
		hint = "it is for password-only lines; " + hint
	}
	if base, _ := s.httpBase.Load().(string); base == "" {
		hint += "; or serve over --http to a client that takes URL elicitations: the login then asks the person for it on a one-time page"
	} else {
		hint += "; or, since this client does not take URL elicitations and the login cannot ask the person itself, telnet_connect without credentialId " +
			"and call ask_secret at the " + field + " prompt: the person types it on a page you never see"
	}
	return fmt.Errorf("%w: the device asked for a %s, and credential %q has none (%s)", device.ErrLogin, field, credID, hint)
}

// urlElicitation reports whether the client said it takes URL-mode
// elicitations.
func urlElicitation(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
}

var secretPage = template.Must(template.New("secret").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>termhost — a secret</title><link rel="stylesheet" href="/view/view.css"></head>
<body><header><h1>termhost: a secret for session {{.Session}}</h1></header>
<main><section class="card">
{{if .Done}}<p id="done">{{.Done}}</p>{{else}}
{{if .Agent}}<p id="asks">The agent asks, in its own words (not termhost's): <q>{{.Prompt}}</q></p>
{{else}}<p id="asks">termhost's login of this session asks for {{.Prompt}}.</p>{{end}}
<p>What you type goes to:</p>
<ul id="where">{{range .Where}}<li>{{.}}</li>{{end}}</ul>
<p class="meta">It is typed there as one line, followed by Enter; the agent never sees it. If that is not where you mean your secret to go, close this page.</p>
{{if .Error}}<p id="error" role="alert">Not sent: {{.Error}}. Nothing was typed.</p>{{end}}
<form method="post">
{{if .Confirm}}<p><label><input type="checkbox" name="confirm" id="confirm" value="yes" required> I trust {{.Target}} with this secret</label></p>{{end}}
<input type="password" name="secret" id="secret" autocomplete="off" autofocus maxlength="1024" required>
<button type="submit" id="send">Send</button></form>{{end}}
</section></main></body></html>
`))

// askStill refuses a page's secret unless it still goes where the page
// shows (askDestination, the same processes or connection).
func (s *Server) askStill(ask *secretAsk) error {
	cur, err := s.askDestination(ask.sess)
	if err != nil {
		return err
	}
	if !cur.same(ask.dest) {
		what := "the connection"
		if !ask.dest.network() {
			what = "the program reading the terminal"
		}
		return refusef("%s changed since this page was made, so it would not go where this page shows", what)
	}
	if ask.dest.network() && !s.secretPromptShown(ask.sess) {
		// Over Telnet or SSH nothing says whether the far end echoes or
		// runs what it reads: the secret (and its Enter) goes only to a
		// prompt that asks for one, never to a shell's command line,
		// where it would run as a command no rule checked.
		return refusef("session %s does not show a prompt asking for a secret (a password, passphrase, PIN or code) on its cursor's line; nothing was typed", ask.sess.ID)
	}
	return nil
}

// secretPrompt: a line that asks for a secret.
var secretPrompt = regexp.MustCompile(`(?i)(pass(word|phrase|code)?|pin|otp|token|secret|(verification|one-time|security|auth\w*) code|code)\b[^\n]{0,40}[:?]\s*$`)

// secretPromptShown says whether the session's cursor line (up to the
// cursor) asks for a secret.
func (s *Server) secretPromptShown(sess *session.Session) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	line, _, ok := device.CursorLine(ctx, sess)
	return ok && secretPrompt.MatchString(strings.TrimRight(line, " "))
}

// secret serves a page waiting for a secret: GET shows the form, POST
// types what the person sent (once).
func (v *viewHandler) secret(w http.ResponseWriter, r *http.Request, code string) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	// same-origin, not no-referrer: under no-referrer a browser posts the
	// form with Origin "null", which the Origin check refuses. The address
	// (and its code) still goes to no other site.
	w.Header().Set("Referrer-Policy", "same-origin")
	srv := v.h.srv
	ask := srv.asks.peek(code)
	if ask == nil {
		http.Error(w, "No such page: it was used, or it expired (ask the agent for a new one)", http.StatusNotFound)
		return
	}
	confirm := ask.gated && ask.dest.network()
	data := map[string]any{"Session": ask.sess.ID, "Prompt": shown(ask.prompt), "Agent": !ask.login, "Where": ask.dest.lines(), "Confirm": confirm,
		"Target": fmt.Sprintf("%s, port %d (%s)", ask.dest.host, ask.dest.port, ask.dest.remote)}
	status := http.StatusOK
	show := func() {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		secretPage.Execute(w, data)
	}
	// Where it would go now must be where the page shows: else no form
	// (the page stays: a program between two prompts may ask again).
	if ask.gated {
		if err := srv.askStill(ask); err != nil {
			data["Done"] = "Not available now: " + err.Error() + ". Nothing was typed. Reload this page when the program asks again, or ask the agent for a new page."
			show()
			return
		}
	}
	if r.Method != http.MethodPost {
		show()
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSecretForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Bad form", http.StatusBadRequest)
		return
	}
	secret := []byte(r.PostForm.Get("secret"))
	defer clear(secret)
	// One line, and where the person confirmed: else the page stays for
	// them to try again.
	why := notOneLine(string(secret))
	if err := session.CheckCredential(secret); why == "" && err != nil {
		why = err.Error()
	}
	if why != "" {
		data["Error"], status = why, http.StatusBadRequest
		show()
		return
	}
	if confirm && r.PostForm.Get("confirm") != "yes" {
		data["Error"], status = "confirm that you trust where it goes (tick the box)", http.StatusBadRequest
		show()
		return
	}
	if ask = srv.asks.take(code); ask == nil {
		http.Error(w, "No such page: it was used, or it expired", http.StatusNotFound)
		return
	}
	// Checked once more just before it is typed: the same processes or
	// connection the page showed.
	var gate device.Gate
	if ask.gated {
		gate = func(session.Destination) error { return srv.askStill(ask) }
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	err := device.SendSecret(ctx, ask.sess, secret, gate)
	cancel()
	srv.asks.finish(ask, err)
	data["Done"] = "Sent into the session. You can close this page."
	if err != nil {
		msg := err.Error()
		if errors.Is(err, session.ErrEchoOn) {
			msg = "the program is not at a password prompt (it would show what you type)"
		}
		data["Done"] = "Not sent: " + msg + ". Ask the agent for a new page."
	}
	show()
}
