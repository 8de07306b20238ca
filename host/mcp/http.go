package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Streamable HTTP transport (SPEC MCP-2), both protocol eras on one
// endpoint, /mcp. go-sdk serves each era, but not both from one handler: a
// stateful StreamableHTTPHandler (MCP-Session-Id, GET/DELETE, SSE with
// event ids and Last-Event-ID replay from an EventStore) answers a
// 2026-07-28 request with "unsupported protocol version", and a stateless
// one has no sessions, GET or DELETE. So two handlers share the one
// sdk.Server, and each request goes to one of them (route): see "Two
// protocol eras on one endpoint" in docs/RATIONALE.md.

// HTTPPath is the MCP endpoint.
const HTTPPath = "/mcp"

// modernEra is the first protocol version of the stateless era (SEP-2575).
const modernEra = "2026-07-28"

// HTTP defaults.
const (
	DefaultHTTPSessionTimeout = 30 * time.Minute
	DefaultHTTPMaxBody        = 4 << 20
	DefaultHTTPBodyTimeout    = 10 * time.Second
	DefaultHTTPMaxBodyReads   = 64
)

// HTTPOptions configure the Streamable HTTP transport.
type HTTPOptions struct {
	// Token is the bearer token every request must carry
	// (Authorization: Bearer <token>; 401 otherwise). Empty refuses every
	// request, unless NoAuth.
	Token string
	// NoAuth serves without a token (Token is then ignored): the caller
	// allows it only on a loopback address (SPEC TRUST-5).
	NoAuth bool
	// SessionTimeout closes an MCP session (2025-11-25 era) that has had
	// no request for this long (counted from the end of its last POST; an
	// open GET stream does not keep it); its terminal sessions then become
	// orphans (session.Registry.Orphan). Default DefaultHTTPSessionTimeout.
	// termhost times sessions out itself, not go-sdk (idle.go).
	SessionTimeout time.Duration
	// MaxBodyBytes caps a request body (413 beyond). Default
	// DefaultHTTPMaxBody.
	MaxBodyBytes int64
	// BodyTimeout bounds the time to read a request body, from the end
	// of its headers (408 and the connection closed beyond). Default
	// DefaultHTTPBodyTimeout. It is a per-request read deadline, lifted
	// once the body is read: a response streamed for minutes (SSE) is not
	// cut, as http.Server.ReadTimeout would cut it.
	BodyTimeout time.Duration
	// MaxBodyReads bounds the request bodies being read at once (503 with
	// Retry-After beyond). Default DefaultHTTPMaxBodyReads.
	MaxBodyReads int
	// AllowRemote stops checking the Host header, for a server bound to a
	// non-loopback address on purpose. Origin, when sent, must still be
	// localhost: a browser page elsewhere never drives terminals here.
	AllowRemote bool
}

func (o *HTTPOptions) defaults() {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultHTTPSessionTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultHTTPMaxBody
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultHTTPBodyTimeout
	}
	if o.MaxBodyReads <= 0 {
		o.MaxBodyReads = DefaultHTTPMaxBodyReads
	}
}

// HTTPHandler serves MCP at HTTPPath in both protocol eras.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	h := s.newHTTPHandler(o)
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	view := newViewHandler(h) // view.go
	mux.Handle(ViewPath, view)
	mux.Handle(ViewPath+"/", view)
	s.addAskSecret() // its pages are the view's
	return mux
}

// newHTTPHandler is the handler of HTTPPath.
func (s *Server) newHTTPHandler(o HTTPOptions) *httpHandler {
	o.defaults()
	get := func(*http.Request) *sdk.Server { return s.mcp }
	h := &httpHandler{
		srv:     s,
		opts:    o,
		log:     s.log,
		reading: make(chan struct{}, o.MaxBodyReads),
		stateful: sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
			EventStore:                 sdk.NewMemoryEventStore(nil),
			MaxRequestBodyBytes:        o.MaxBodyBytes,
			DisableLocalhostProtection: o.AllowRemote,
			Logger:                     sdkLogger(s.log),
		}),
		stateless: sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
			Stateless:                    true,
			MaxRequestBodyBytes:          o.MaxBodyBytes,
			DisableLocalhostProtection:   o.AllowRemote,
			PropagateRequestCancellation: true,
			Logger:                       sdkLogger(s.log),
		}),
	}
	h.live = mcpSessions{timeout: o.SessionTimeout, expire: h.timedOut}
	if o.Token != "" && !o.NoAuth {
		h.tokenSum = sha256.Sum256([]byte(o.Token))
		h.user = tokenUser(h.tokenSum)
		// go-sdk takes the token's identity from the request's context,
		// where only its own middleware can put it: it binds each MCP
		// session to the user that created it, and hands the identity to
		// every request (RequestExtra.TokenInfo; see owner.go). By the time
		// it runs, authorize has checked the token.
		verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			if !h.tokenOK(token) {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{UserID: h.user}, nil
		}
		h.withToken = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
		h.stateful, h.stateless = h.withToken(h.stateful), h.withToken(h.stateless)
	}
	h.owner = tokenOwner(h.user)
	return h
}

type httpHandler struct {
	srv                 *Server
	opts                HTTPOptions
	log                 *slog.Logger
	stateful, stateless http.Handler
	// tokenSum is the token's SHA-256, user its user id (tokenUser);
	// withToken hands the token's identity to go-sdk. Unset without a
	// token.
	tokenSum  [32]byte
	user      string
	withToken func(http.Handler) http.Handler
	// owner is the owner of a request without an MCP session: "token:"
	// and the token's user id (anonymous without a token; see owner.go).
	owner   string
	reading chan struct{} // a slot per request body being read
	// live are the MCP sessions the stateful handler minted, each with its
	// idle timer and how it ends (idle.go).
	live mcpSessions
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.opts.AllowRemote && !isLocalHost(r.Host) {
		dropBody(w, r)
		http.Error(w, fmt.Sprintf("Forbidden: Host %q is not localhost (DNS-rebinding guard)", r.Host), http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !isLocalOrigin(origin) {
		dropBody(w, r)
		http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not localhost", origin), http.StatusForbidden)
		return
	}
	if !h.authorize(w, r) {
		return
	}
	if h.srv.httpBase.Load() == nil { // where ask_secret's pages are, when RunHTTP did not say
		h.srv.httpBase.CompareAndSwap(nil, "http://"+r.Host)
	}
	r = r.WithContext(context.WithValue(r.Context(), httpOwnerKey{}, h.owner))
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodPost {
		id, ok := checkJSONRPC(w, body)
		if !ok {
			return
		}
		w = &rpcErrorWriter{ResponseWriter: w, id: id}
	}
	next := h.route(r, body)
	if r.Method == http.MethodDelete {
		next = h.deleting(next)
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && r.Method == http.MethodPost && h.live.begin(sid) {
		defer h.live.done(sid) // the idle timeout runs from the end of the last POST
	}
	next.ServeHTTP(w, r)
	if ew, ok := w.(*rpcErrorWriter); ok {
		ew.finish()
	}
}

// authorize checks the bearer token (SPEC TRUST-5) and answers 401 when
// it is missing or wrong: a JSON-RPC error body, and WWW-Authenticate:
// Bearer as RFC 6750 has it. The comparison takes the same time whatever
// the token sent.
func (h *httpHandler) authorize(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.NoAuth {
		return true
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	given := strings.EqualFold(scheme, "Bearer") && h.withToken != nil
	if given && h.tokenOK(strings.TrimSpace(token)) {
		return true
	}
	challenge := `Bearer realm="termhost"`
	msg := "Unauthorized: this server needs the header Authorization: Bearer <token>, with the token termhost printed when it started (also in its token file, --token-file)"
	if r.Header.Get("Authorization") != "" {
		challenge += `, error="invalid_token"`
		msg = "Unauthorized: the bearer token is not this server's; use the one termhost printed when it started (also in its token file, --token-file)"
	}
	dropBody(w, r)
	w.Header().Set("WWW-Authenticate", challenge)
	writeJSONError(w, http.StatusUnauthorized, -32001, msg)
	return false
}

// dropBody makes sure a request refused before its body was read costs
// no more time: net/http would otherwise read what is left of the body
// (up to 256 KiB, without a deadline) to keep the connection, however
// slowly it comes. The connection closes after the answer instead.
func dropBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// tokenOK compares a token with the server's in constant time (their
// hashes, so that the length does not show either).
func (h *httpHandler) tokenOK(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return h.withToken != nil && subtle.ConstantTimeCompare(sum[:], h.tokenSum[:]) == 1
}

// writeJSONError answers with a JSON-RPC error object (id null), which an
// MCP client can show as it is.
func writeJSONError(w http.ResponseWriter, status int, code int, msg string) {
	writeJSONErrorID(w, status, nil, code, msg)
}

// readBody reads the request's body whole (at most MaxBodyBytes) within
// BodyTimeout and at most MaxBodyReads at once, and puts it back for the
// handlers, which read it whole anyway. A body that trickles in is cut at
// the deadline (408, connection closed), one beyond the cap refused (413),
// one beyond the concurrent reads turned away (503, Retry-After). The
// deadline is lifted once the body is read: it is the connection's, and a
// streamed response must outlive it.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	select {
	case h.reading <- struct{}{}:
	default:
		dropBody(w, r)
		w.Header().Set("Retry-After", "1")
		writeJSONError(w, http.StatusServiceUnavailable, -32000, fmt.Sprintf("Service Unavailable: %d request bodies are being read; retry in a second", cap(h.reading)))
		return nil, false
	}
	defer func() { <-h.reading }()
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(h.opts.BodyTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		dropBody(w, r)
	} else if deadline {
		rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		case errors.Is(err, os.ErrDeadlineExceeded):
			http.Error(w, fmt.Sprintf("request body not received within %s", h.opts.BodyTimeout), http.StatusRequestTimeout)
		default:
			http.Error(w, "failed to read body", http.StatusBadRequest)
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// deleting serves a DELETE of an MCP session: watch, told before the
// session closes, ends its terminal sessions rather than orphaning them
// (SPEC MCP-2). Its calls waiting on the person stop first: go-sdk closes
// the session only once every call has returned (asksecret.go). A session
// that timed out first is gone: its terminal sessions are orphans already,
// and the DELETE is answered as go-sdk answers one of a session it does
// not know.
func (h *httpHandler) deleting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		if sid == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !h.live.deleting(sid) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if u, ok := h.srv.minted.Load(sid); ok && u == h.user { // go-sdk refuses another user's DELETE
			h.srv.asks.endMCP(sid, errors.New("the MCP session was closed by its client"))
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status/100 != 2 {
			h.live.undelete(sid)
			h.srv.asks.forgetMCP(sid)
		}
	})
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// route picks the handler of a request:
//   - with MCP-Session-Id: the stateful handler (2025-11-25 and older);
//   - with MCP-Protocol-Version 2026-07-28 or later: the stateless one;
//   - a POST of initialize: the stateful one, which mints the session;
//   - any other POST without a session: the stateless one, which serves
//     it on a throwaway session (a client that never initializes);
//   - any other GET or DELETE without a session: the stateful one, which
//     says a session id is needed.
//
// The third and fourth look at the body, which readBody has read.
func (h *httpHandler) route(r *http.Request, body []byte) http.Handler {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return h.stateful
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= modernEra {
		return h.stateless
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return h.stateful
	}
	if isInitialize(body) {
		return http.HandlerFunc(h.initialize)
	}
	return h.stateless
}

// initialize serves an initialize on the stateful handler, which mints an
// MCP session, and watches that session: go-sdk has no hook for a session
// that ends, and InitializedHandler would miss a client that never sends
// notifications/initialized (go-sdk serves its tool calls regardless).
// The session is in h.live before its id leaves in the answer's header.
//
// What go-sdk minted is settled however its handler returns: a panic in
// it (net/http recovers it, after this) would otherwise leave the session
// in h.live as an initialize being served, never idle, never removed
// (TestHTTPInitializePanicSettles).
func (h *httpHandler) initialize(w http.ResponseWriter, r *http.Request) {
	mw := &mintWriter{ResponseWriter: w, minted: h.live.add}
	defer h.settle(w, mw)
	h.stateful.ServeHTTP(mw, r)
}

// settle settles the MCP session an initialize minted, once go-sdk's
// handler has returned or panicked: watched, with its idle timer running,
// while go-sdk still has it; forgotten when go-sdk closed it (its
// initialize failed).
func (h *httpHandler) settle(w http.ResponseWriter, mw *mintWriter) {
	mw.tell()
	sid := w.Header().Get("Mcp-Session-Id")
	if sid == "" {
		return
	}
	h.srv.minted.Store(sid, h.user) // whose sessions the view shows (view.go)
	for ss := range h.srv.mcp.Sessions() {
		if ss.ID() == sid {
			h.live.attach(sid, ss)
			go h.watch(ss)
			return
		}
	}
	h.live.remove(sid) // closed already: its initialize failed
	h.srv.minted.Delete(sid)
}

// isInitialize reports whether a body holds an initialize request (alone,
// or in a batch of the 2025-03-26 era).
func isInitialize(body []byte) bool {
	type msg struct {
		Method string `json:"method"`
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var batch []msg
		if json.Unmarshal(body, &batch) != nil {
			return false
		}
		for _, m := range batch {
			if m.Method == "initialize" {
				return true
			}
		}
		return false
	}
	var m msg
	return json.Unmarshal(body, &m) == nil && m.Method == "initialize"
}

// isLocalHost reports whether a Host header (with or without a port) names
// this machine's loopback: localhost, 127.0.0.0/8 or [::1].
func isLocalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// isLocalOrigin reports whether an Origin header is an http(s) page served
// from this machine's loopback.
func isLocalOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return isLocalHost(u.Host)
}

// RunHTTP serves MCP over Streamable HTTP on ln until ctx is cancelled
// (SIGTERM, SIGINT), then shuts down within about two seconds: no new
// connections, every session stopped at once (session.Registry.Close),
// every MCP session closed so hanging streams return, handlers given a
// moment, and connections still open closed.
func (s *Server) RunHTTP(ctx context.Context, ln net.Listener, o HTTPOptions) error {
	if o.Token == "" && !o.NoAuth {
		return errors.New("HTTP needs a bearer token (or NoAuth)")
	}
	// No ReadTimeout or WriteTimeout: they would cut SSE streams, which
	// last as long as a client listens. Headers have ReadHeaderTimeout,
	// bodies HTTPOptions.BodyTimeout (readBody), idle keep-alive
	// connections IdleTimeout.
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsUnspecified() {
		s.httpBase.Store("http://" + a.String())
	}
	srv := &http.Server{
		Handler:           s.HTTPHandler(o),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		s.deps.Sessions.Close()
		return err
	case <-ctx.Done():
	}
	start := time.Now()
	s.asks.shutdown(errors.New("the server is shutting down")) // before the sessions' close waits for their calls
	var wg sync.WaitGroup
	wg.Go(s.deps.Sessions.Close)
	for ss := range s.mcp.Sessions() {
		wg.Go(func() { ss.Close() })
	}
	sctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(start.Add(1800 * time.Millisecond))):
		s.log.Warn("exiting with MCP sessions still closing")
	}
	s.log.Info("HTTP server stopped", "took", time.Since(start).Round(time.Millisecond))
	return ctx.Err()
}

// watch waits for an MCP session of the 2025-11-25 era to end. Ended by
// the client (DELETE), its terminal sessions end with it (SPEC MCP-2,
// TRUST-3). Timed out (timedOut) or ended otherwise (the server shutting
// down), they become orphans: still the MCP session's, so no other client
// sees them, and reaped once unused for five minutes (SPEC SES-4). Over
// stdio every terminal session ends with the client (ServeStdio).
func (h *httpHandler) watch(ss *sdk.ServerSession) {
	ss.Wait()
	s := h.srv
	s.forgetSubscriber(ss)
	s.asks.forgetMCP(ss.ID())
	end, orphaned := h.live.remove(ss.ID())
	switch end {
	case endDeleted:
		if n := s.deps.Sessions.CloseOwned(ss.ID()); n > 0 {
			s.log.Info("MCP session deleted by its client; its terminal sessions were stopped", "mcpSession", ss.ID(), "sessions", n)
		}
		s.minted.Delete(ss.ID())
	case endTimedOut:
		if orphaned == 0 {
			s.minted.Delete(ss.ID())
		}
	default:
		if n := s.orphan(ss.ID()); n == 0 {
			s.minted.Delete(ss.ID())
		}
	}
}

// timedOut makes the terminal sessions of an MCP session that has had no
// request for SessionTimeout orphans, as its end is decided and before it
// closes: a DELETE from then on finds it gone (deleting), and a call that
// holds its close up (one whose client went away) holds nothing else.
func (h *httpHandler) timedOut(ss *sdk.ServerSession) int {
	return h.srv.orphan(ss.ID())
}

// orphan makes the terminal sessions of an MCP session that went away
// orphans and says how many.
func (s *Server) orphan(mcpSession string) int {
	n := s.deps.Sessions.Orphan(mcpSession)
	if n > 0 {
		s.log.Info("MCP session ended; its terminal sessions are reaped after 5 min unused", "mcpSession", mcpSession, "sessions", n)
	}
	return n
}

// sdkLogger is the logger go-sdk gets: its Info records (a session
// connected, disconnected, a notification sent — two or three per request
// in the stateless era) become Debug, so the default level shows
// termhost's own lines.
func sdkLogger(l *slog.Logger) *slog.Logger { return slog.New(demoted{l.Handler()}) }

type demoted struct{ h slog.Handler }

func (d demoted) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return d.h.Enabled(ctx, l)
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(as []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(as)} }
func (d demoted) WithGroup(g string) slog.Handler       { return demoted{d.h.WithGroup(g)} }

// JSON-RPC's own error codes (https://www.jsonrpc.org/specification).
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
)

// checkJSONRPC answers a POST body that is not JSON-RPC 2.0 with the
// JSON-RPC error a client can read (SPEC SSH-7: -32700 for what does not
// parse, -32600 for what is not a request), in a JSON body with status
// 400, instead of go-sdk's plain-text 400. It reports whether the body may
// go on, and the id of a single request, for an error about it later
// (none for a batch or a notification).
func checkJSONRPC(w http.ResponseWriter, body []byte) (json.RawMessage, bool) {
	// json.Unmarshal checks the whole body is valid JSON before it
	// decodes anything (a *json.SyntaxError otherwise): the body is
	// scanned once here, not once more by json.Valid.
	parseError := func() (json.RawMessage, bool) {
		writeJSONError(w, http.StatusBadRequest, rpcParseError, "Parse error: the request body is not valid JSON")
		return nil, false
	}
	var syntax *json.SyntaxError
	body = bytes.TrimSpace(body)
	var id json.RawMessage
	var msgs []json.RawMessage
	batch := len(body) > 0 && body[0] == '['
	if batch {
		err := json.Unmarshal(body, &msgs)
		if errors.As(err, &syntax) {
			return parseError()
		}
		if err != nil || len(msgs) == 0 {
			writeJSONError(w, http.StatusBadRequest, rpcInvalidRequest, "Invalid Request: a batch must be a non-empty array of JSON-RPC messages")
			return nil, false
		}
	} else {
		msgs = []json.RawMessage{body}
	}
	for _, m := range msgs {
		var head struct {
			JSONRPC *string          `json:"jsonrpc"`
			ID      json.RawMessage  `json:"id"`
			Method  *string          `json:"method"`
			Result  json.RawMessage  `json:"result"`
			Error   *json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(m, &head); errors.As(err, &syntax) {
			return parseError()
		} else if err != nil {
			writeJSONErrorID(w, http.StatusBadRequest, nil, rpcInvalidRequest, "Invalid Request: a JSON-RPC message is an object")
			return nil, false
		}
		switch {
		case head.JSONRPC == nil || *head.JSONRPC != "2.0":
			got := "none"
			if head.JSONRPC != nil {
				got = strconv.Quote(*head.JSONRPC)
			}
			writeJSONErrorID(w, http.StatusBadRequest, head.ID, rpcInvalidRequest, fmt.Sprintf(`Invalid Request: "jsonrpc" must be "2.0", got %s`, got))
			return nil, false
		case head.Method == nil && head.Result == nil && head.Error == nil:
			writeJSONErrorID(w, http.StatusBadRequest, head.ID, rpcInvalidRequest, `Invalid Request: a message needs "method" (a request or notification), or "result" or "error" (a response)`)
			return nil, false
		case head.Method != nil && *head.Method == "":
			writeJSONErrorID(w, http.StatusBadRequest, head.ID, rpcInvalidRequest, `Invalid Request: "method" is empty`)
			return nil, false
		}
		if !batch {
			id = head.ID
		}
	}
	return id, true
}

// writeJSONErrorID is writeJSONError with the request's id.
func writeJSONErrorID(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// rpcErrorWriter turns go-sdk's plain-text 400 answers to a POST (an
// unknown method: "JSON RPC not handled"; anything else it refuses) into
// JSON-RPC errors in a JSON body, status kept: a client reads one shape of
// error whatever refused its request.
type rpcErrorWriter struct {
	http.ResponseWriter
	id      json.RawMessage
	capture bool
	text    bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.capture = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrorWriter) Write(p []byte) (int, error) {
	if w.capture {
		if w.text.Len() < 4096 {
			w.text.Write(p[:min(len(p), 4096-w.text.Len())])
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// finish writes the captured error, if there was one.
func (w *rpcErrorWriter) finish() {
	if !w.capture {
		return
	}
	text := strings.TrimSpace(w.text.String())
	code, msg := rpcInvalidRequest, "Invalid Request: "+text
	switch {
	case strings.Contains(text, "not handled"), strings.Contains(text, "unsupported"):
		code, msg = rpcMethodNotFound, "Method not found: "+text
	case strings.Contains(text, "unmarshaling"):
		code, msg = rpcParseError, "Parse error: "+text
	}
	w.Header().Del("Content-Length")
	writeJSONErrorID(w.ResponseWriter, http.StatusBadRequest, w.id, code, msg)
}

func (w *rpcErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.capture {
		f.Flush()
	}
}

func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
