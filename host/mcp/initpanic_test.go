package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/host/session"
)

// panicWriter panics at the first byte of the answer, as a handler that
// panics while it answers.
type panicWriter struct{ http.ResponseWriter }

func (w panicWriter) Write([]byte) (int, error) { panic("injected: go-sdk panics while it answers") }

// TestHTTPInitializePanicSettles: an initialize whose go-sdk handler
// panics (net/http recovers it) leaves no MCP session counted as an
// initialize being served forever: one go-sdk still has is watched and
// times out like any other; one it closed is forgotten. It failed before:
// the session stayed in the idle tracker with its initialize in flight,
// its idle timer never started, and it was never removed.
func TestHTTPInitializePanicSettles(t *testing.T) {
	for _, c := range []struct {
		name  string
		panic func(next http.Handler) http.Handler
	}{
		{"while answering", func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(panicWriter{w}, r)
			})
		}},
		{"after answering", func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r)
				panic("injected: go-sdk panics after it answered")
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := session.NewRegistry(session.Limits{}, session.Config{})
			t.Cleanup(reg.Close)
			s, err := New(Deps{Sessions: reg}, Config{Logger: discard()})
			if err != nil {
				t.Fatal(err)
			}
			h := s.newHTTPHandler(HTTPOptions{NoAuth: true, SessionTimeout: 200 * time.Millisecond})
			h.stateful = c.panic(h.stateful)
			req := httptest.NewRequest(http.MethodPost, HTTPPath, strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
			req.Host = "127.0.0.1"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the injected panic did not reach the caller (net/http recovers it there)")
					}
				}()
				h.ServeHTTP(rec, req)
			}()
			sid := rec.Header().Get("Mcp-Session-Id")
			if sid == "" {
				t.Fatal("go-sdk minted no session")
			}
			h.live.mu.Lock()
			e := h.live.m[sid]
			stuck := e != nil && (e.posts > 0 || e.ss == nil || e.timer == nil)
			h.live.mu.Unlock()
			if stuck {
				t.Fatal("the MCP session stays in the idle tracker as an initialize being served")
			}
			// Whatever go-sdk kept times out and is closed, and the
			// tracker forgets it.
			deadline := time.Now().Add(10 * time.Second)
			for {
				h.live.mu.Lock()
				_, held := h.live.m[sid]
				h.live.mu.Unlock()
				open := false
				for ss := range s.mcp.Sessions() {
					open = open || ss.ID() == sid
				}
				if !held && !open {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the MCP session outlived its idle timeout (in the idle tracker: %v, open in go-sdk: %v)", held, open)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
