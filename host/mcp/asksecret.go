package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sync"
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
// result gives the address for the agent to show its person. What the
// person types there goes straight into the session as send_secret types
// a secret (session.SendCredential: masked from then on, refused where
// the terminal would echo it, the line before it checked) and never
// passes through MCP. Served over HTTP only: there is no page to serve
// over stdio.

// Bounds of the pages waiting for a secret.
const (
	askTTL         = 10 * time.Minute
	maxAsksOwner   = 16
	maxAsks        = 256
	maxPromptLen   = 200
	maxSecretForm  = 8 << 10
	secretPagePath = ViewPath + "/secret/"
)

// secretAsk is one page waiting for a secret.
type secretAsk struct {
	sess    *session.Session
	owner   string
	prompt  string
	expires time.Time
	done    chan error // the outcome of typing it (buffered)
}

// asks are the pages waiting, by code.
type asks struct {
	mu sync.Mutex
	m  map[string]*secretAsk
}

// add makes a page for owner's session; it returns its code.
func (a *asks) add(owner string, sess *session.Session, prompt string) (string, *secretAsk, error) {
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
		case k.owner == owner:
			mine++
		}
	}
	if mine >= maxAsksOwner || len(a.m) >= maxAsks {
		return "", nil, fmt.Errorf("%w: %d pages of yours are waiting for a secret (at most %d, %d in all); each expires %s after it is made",
			session.ErrLimit, mine, maxAsksOwner, maxAsks, askTTL)
	}
	k := &secretAsk{sess: sess, owner: owner, prompt: prompt, expires: now.Add(askTTL), done: make(chan error, 1)}
	a.m[code] = k
	return code, k, nil
}

// peek finds a live page without using it; take uses it (once).
func (a *asks) peek(code string) *secretAsk {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.m[code]
	if k == nil || time.Now().After(k.expires) {
		return nil
	}
	return k
}

func (a *asks) take(code string) *secretAsk {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.m[code]
	delete(a.m, code)
	if k == nil || time.Now().After(k.expires) {
		return nil
	}
	return k
}

func (a *asks) drop(code string) { a.take(code) }

type askIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
	Prompt    string `json:"prompt" jsonschema:"what to ask"`
}

// addAskSecret registers ask_secret (once: the HTTP transport calls it).
func (s *Server) addAskSecret() {
	s.askOnce.Do(func() {
		addTool(s, textVoice, &sdk.Tool{
			Name: "ask_secret",
			// No annotations: the defaults (destructive, open world) are
			// this tool's.
			Description: "A secret from your person, typed into the session on a page you never see.",
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
	code, ask, err := s.asks.add(owner(req), sess, in.Prompt)
	if err != nil {
		return nil, err
	}
	url := base + secretPagePath + code
	msg := in.Prompt
	if msg == "" {
		msg = "A secret for session " + sess.ID
	}
	if ss := req.Session; ss != nil && urlElicitation(ss) {
		status, err := s.elicitAsk(ctx, ss, code, ask, url, msg)
		if err == nil {
			return map[string]any{"sessionId": sess.ID, "status": status}, nil
		}
		if !errors.Is(err, errNoElicit) {
			return nil, err
		}
		// The client would not take it (a stateless request cannot be
		// asked back): the address goes in the result instead.
	}
	return map[string]any{"sessionId": sess.ID, "status": "waiting", "url": url, "expires_in_s": int(askTTL.Seconds()),
		"note": "show this url to your person: what they type there goes into the session, not through you"}, nil
}

// errNoElicit: the client did not take the elicitation (the page is still
// waiting).
var errNoElicit = errors.New("the client did not take the URL elicitation")

// elicitAsk sends the page's address as a URL-mode elicitation and waits
// for the person: "typed", or the client's action ("decline", "cancel")
// when they would not; errNoElicit when the client did not take it.
func (s *Server) elicitAsk(ctx context.Context, ss *sdk.ServerSession, code string, ask *secretAsk, url, msg string) (string, error) {
	res, err := ss.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: msg, URL: url, ElicitationID: code})
	if err != nil {
		return "", fmt.Errorf("%w: %v", errNoElicit, err)
	}
	if res.Action != "accept" {
		s.asks.drop(code)
		return res.Action, nil
	}
	t := time.NewTimer(time.Until(ask.expires))
	defer t.Stop()
	select {
	case err = <-ask.done:
	case <-ctx.Done():
		s.asks.drop(code)
		return "", ctx.Err()
	case <-t.C:
		s.asks.drop(code)
		return "", fmt.Errorf("no secret was typed on the page within %s", askTTL)
	}
	ss.NotifyElicitationComplete(ctx, &sdk.ElicitationCompleteParams{ElicitationID: code})
	if err != nil {
		return "", err
	}
	return "typed", nil
}

// loginAsk is the device.Ask of a login (telnet_connect with a
// credential, set_mode) that meets a field no credential supplies: over
// HTTP, to a client that takes URL elicitations, the person is sent a
// one-time page as ask_secret sends one, and what they type there goes
// into the session. nil otherwise (stdio, or a client that cannot be
// asked): the login then fails naming the field.
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
		code, ask, err := s.asks.add(own, sess, what)
		if err != nil {
			return err
		}
		msg := fmt.Sprintf("Session %s asks for the %s: %s. Type it on this page; the agent never sees it.", sess.ID, field, lacks)
		status, err := s.elicitAsk(ctx, ss, code, ask, base+secretPagePath+code, msg)
		if err != nil {
			s.asks.drop(code)
			return err
		}
		if status != "typed" {
			return fmt.Errorf("the person answered %q on the page (nothing was typed)", status)
		}
		return nil
	}
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
<p>The agent asks: <strong>{{.Prompt}}</strong></p>
<p class="meta">Session {{.Session}} ({{.Kind}}, {{.Target}}). What you type goes into the session, followed by Enter; the agent never sees it.</p>
<form method="post"><input type="password" name="secret" id="secret" autocomplete="off" autofocus maxlength="1024" required>
<button type="submit" id="send">Send</button></form>{{end}}
</section></main></body></html>
`))

// secret serves a page waiting for a secret: GET shows the form, POST
// types what the person sent (once).
func (v *viewHandler) secret(w http.ResponseWriter, r *http.Request, code string) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	// same-origin, not no-referrer: under no-referrer a browser posts the
	// form with Origin "null", which the Origin check refuses. The address
	// (and its code) still goes to no other site.
	w.Header().Set("Referrer-Policy", "same-origin")
	ask := v.h.srv.asks.peek(code)
	if ask == nil {
		http.Error(w, "No such page: it was used, or it expired (ask the agent for a new one)", http.StatusNotFound)
		return
	}
	data := map[string]any{"Session": ask.sess.ID, "Kind": string(ask.sess.Kind), "Target": ask.sess.Peer.String(), "Prompt": ask.prompt}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxSecretForm)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "Bad form", http.StatusBadRequest)
			return
		}
		secret := []byte(r.PostForm.Get("secret"))
		if ask = v.h.srv.asks.take(code); ask == nil {
			http.Error(w, "No such page: it was used, or it expired", http.StatusNotFound)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		err := ask.sess.SendCredential(ctx, secret, true)
		cancel()
		clear(secret)
		ask.done <- err
		data["Done"] = "Sent into the session. You can close this page."
		if err != nil {
			var why = err.Error()
			if errors.Is(err, session.ErrEchoOn) {
				why = "the program is not at a password prompt (it would show what you type)"
			}
			data["Done"] = "Not sent: " + why + ". Ask the agent for a new page."
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	secretPage.Execute(w, data)
}
