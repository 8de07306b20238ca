package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

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
)

// HTTPOptions configure the Streamable HTTP transport.
type HTTPOptions struct {
	// SessionTimeout closes an MCP session (2025-11-25 era) that has had
	// no request for this long; its terminal sessions then become orphans
	// (session.Registry.Orphan). Default DefaultHTTPSessionTimeout.
	SessionTimeout time.Duration
	// MaxBodyBytes caps a request body (413 beyond). Default
	// DefaultHTTPMaxBody.
	MaxBodyBytes int64
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
}

// HTTPHandler serves MCP at HTTPPath in both protocol eras.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	o.defaults()
	get := func(*http.Request) *sdk.Server { return s.mcp }
	h := &httpHandler{
		srv:  s,
		opts: o,
		log:  s.log,
		stateful: sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
			EventStore:                 sdk.NewMemoryEventStore(nil),
			SessionTimeout:             o.SessionTimeout,
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
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	return mux
}

type httpHandler struct {
	srv                 *Server
	opts                HTTPOptions
	log                 *slog.Logger
	stateful, stateless http.Handler
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.opts.AllowRemote && !isLocalHost(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: Host %q is not localhost (DNS-rebinding guard)", r.Host), http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !isLocalOrigin(origin) {
		http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not localhost", origin), http.StatusForbidden)
		return
	}
	h.route(w, r).ServeHTTP(w, r)
}

// route picks the handler of a request:
//   - with MCP-Session-Id: the stateful handler (2025-11-25 and older);
//   - with MCP-Protocol-Version 2026-07-28 or later: the stateless one;
//   - a POST of initialize: the stateful one, which mints the session;
//   - any other POST without a session: the stateless one, which serves
//     it on a throwaway session (a client that never initializes);
//   - any other GET or DELETE without a session: the stateful one, which
//     says a session id is needed.
//
// Only the third and fourth read the body first; a body over the cap is
// refused here with 413 as the handlers would.
func (h *httpHandler) route(w http.ResponseWriter, r *http.Request) http.Handler {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return h.stateful
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= modernEra {
		return h.stateless
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return h.stateful
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	r.Body.Close()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
		}
		return refuse(http.StatusBadRequest, "failed to read body")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if isInitialize(body) {
		return http.HandlerFunc(h.initialize)
	}
	return h.stateless
}

// initialize serves an initialize on the stateful handler, which mints an
// MCP session, and watches that session: go-sdk has no hook for a session
// that ends, and InitializedHandler would miss a client that never sends
// notifications/initialized (go-sdk serves its tool calls regardless).
func (h *httpHandler) initialize(w http.ResponseWriter, r *http.Request) {
	h.stateful.ServeHTTP(w, r)
	sid := w.Header().Get("Mcp-Session-Id")
	if sid == "" {
		return
	}
	for ss := range h.srv.mcp.Sessions() {
		if ss.ID() == sid {
			go h.srv.watchSession(ss)
			return
		}
	}
}

func refuse(code int, msg string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, msg, code) })
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
	srv := &http.Server{
		Handler:           s.HTTPHandler(o),
		ReadHeaderTimeout: 10 * time.Second,
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

// watchSession waits for an MCP session of the 2025-11-25 era to end
// (DELETE, its idle timeout, shutdown); then the terminal sessions it
// started become orphans: kept for a client that comes back with their
// ids, reaped once unused for five minutes (SPEC SES-4). Over stdio every
// terminal session ends with the client instead (ServeStdio).
func (s *Server) watchSession(ss *sdk.ServerSession) {
	ss.Wait()
	s.forgetSubscriber(ss)
	if n := s.deps.Sessions.Orphan(ss.ID()); n > 0 {
		s.log.Info("MCP session ended; its terminal sessions are reaped after 5 min unused", "mcpSession", ss.ID(), "sessions", n)
	}
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
