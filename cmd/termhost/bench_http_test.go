package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkHTTPToolCallLatency: a read-only tool call, view_screen of an
// 80x24 session (cat under a PTY), over `serve --http` in each protocol
// era: by a minimal HTTP client (one POST, the SSE answer read up to the
// response: what termhost and HTTP cost) and by go-sdk's client (what an
// agent using it sees). Each way in its own phase, as many calls as b.N;
// then the same call over stdio by the minimal stdio client, for scale.
func BenchmarkHTTPToolCallLatency(b *testing.B) {
	srv := startHTTP(b)
	setup := connectEra(b, srv, eraModern, nil)
	id := mustCall(b, setup, "launch_app", map[string]any{"command": "cat", "cols": 80, "rows": 24})["session_id"].(string)
	args := map[string]any{"session_id": id}
	samples := map[string][]time.Duration{}
	lean := newHTTPLean(b, srv, eraModern)
	for b.Loop() { // ns/op: the first phase's
		start := time.Now()
		lean.call(b, "view_screen", args)
		samples["lean-"+eraModern] = append(samples["lean-"+eraModern], time.Since(start))
	}
	n := len(samples["lean-"+eraModern])
	// A 2025-era client has its own MCP session, and sessions are their
	// owner's (SPEC TRUST-5): each views a session of its own.
	launch := map[string]any{"command": "cat", "cols": 80, "rows": 24}
	for _, era := range []string{eraModern, eraLegacy} {
		if era == eraLegacy {
			lean := newHTTPLean(b, srv, era)
			var launched struct {
				SessionID string `json:"session_id"`
			}
			json.Unmarshal([]byte(lean.result(b, "launch_app", launch)), &launched)
			own := map[string]any{"session_id": launched.SessionID}
			for range n {
				start := time.Now()
				lean.call(b, "view_screen", own)
				samples["lean-"+era] = append(samples["lean-"+era], time.Since(start))
			}
		}
		cs := connectEra(b, srv, era, nil)
		args := args
		if era == eraLegacy {
			args = map[string]any{"session_id": mustCall(b, cs, "launch_app", launch)["session_id"]}
		}
		for range n {
			start := time.Now()
			mustCall(b, cs, "view_screen", args)
			samples["sdk-"+era] = append(samples["sdk-"+era], time.Since(start))
		}
	}
	// The same call over stdio, for comparison (its own server process).
	stdio := startLean(b, "--log-level", "warn")
	sid := stdio.call(b, "launch_app", map[string]any{"command": "cat", "cols": 80, "rows": 24})["session_id"].(string)
	for range n {
		start := time.Now()
		stdio.call(b, "view_screen", map[string]any{"session_id": sid})
		samples["stdio"] = append(samples["stdio"], time.Since(start))
	}
	percentiles(b, samples["stdio"], "ms-stdio-lean")
	percentiles(b, samples["lean-"+eraModern], "ms-2026-lean")
	percentiles(b, samples["lean-"+eraLegacy], "ms-2025-lean")
	percentiles(b, samples["sdk-"+eraModern], "ms-2026-sdk")
	percentiles(b, samples["sdk-"+eraLegacy], "ms-2025-sdk")
}

// httpLean is a minimal Streamable HTTP client: in the 2026-07-28 era a
// POST with the per-request _meta and headers, in 2025-11-25 initialize
// once and then POSTs with the MCP session id.
type httpLean struct {
	url, era, sid string
	id            int
	client        *http.Client
}

func newHTTPLean(b *testing.B, srv *httpServer, era string) *httpLean {
	c := &httpLean{url: srv.url, era: era, client: bearerClient(srv.token)}
	c.client.Timeout = 30 * time.Second
	if era == eraLegacy {
		resp := c.post(b, "initialize", map[string]any{"protocolVersion": era, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "lean", "version": "1"}}, "")
		c.sid = resp.Header.Get("Mcp-Session-Id")
		readResult(b, resp)
		c.post(b, "notifications/initialized", map[string]any{}, "").Body.Close()
		b.Cleanup(func() {
			req, _ := http.NewRequest(http.MethodDelete, c.url, nil)
			req.Header.Set("Mcp-Session-Id", c.sid)
			if resp, err := c.client.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	return c
}

func (c *httpLean) call(b *testing.B, tool string, args map[string]any) {
	readResult(b, c.post(b, "tools/call", map[string]any{"name": tool, "arguments": args}, tool))
}

// result calls a tool and returns the text of its result.
func (c *httpLean) result(b *testing.B, tool string, args map[string]any) string {
	var msg struct {
		Result struct {
			Content []struct{ Text string }
		}
	}
	json.Unmarshal([]byte(readResult(b, c.post(b, "tools/call", map[string]any{"name": tool, "arguments": args}, tool))), &msg)
	if len(msg.Result.Content) == 0 {
		b.Fatalf("%s: no result", tool)
	}
	return msg.Result.Content[0].Text
}

func (c *httpLean) post(b *testing.B, method string, params map[string]any, name string) *http.Response {
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if !strings.HasPrefix(method, "notifications/") {
		c.id++
		msg["id"] = c.id
	}
	if c.era == eraModern {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    c.era,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "lean", "version": "1"},
		}
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", c.era)
	if c.era == eraModern {
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		b.Fatalf("%s: HTTP %d", method, resp.StatusCode)
	}
	return resp
}

// readResult reads an SSE answer up to the response, checks it is a
// result and returns it.
func readResult(b *testing.B, resp *http.Response) string {
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadString('\n')
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id"`) {
			if !strings.Contains(data, `"result"`) || strings.Contains(data, `"isError":true`) {
				b.Fatalf("not a result: %s", data)
			}
			return data
		}
		if err != nil {
			b.Fatalf("no response: %v", err)
		}
	}
}
