package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawPeer drives a server over the Stdio transport with hand-written lines.
type rawPeer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startRaw(t *testing.T, s *Server) *rawPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &rawPeer{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	p.out.Buffer(nil, 1<<20)
	go func() { p.done <- s.mcp.Run(context.Background(), &Stdio{In: inR, Out: outW}); outW.Close() }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return p
}

func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("write %q: %v", line, err)
	}
}

// recv reads the next message the server writes.
func (p *rawPeer) recv() map[string]any {
	p.t.Helper()
	got := make(chan map[string]any, 1)
	go func() {
		if !p.out.Scan() {
			got <- nil
			return
		}
		var m map[string]any
		json.Unmarshal(p.out.Bytes(), &m)
		got <- m
	}()
	select {
	case m := <-got:
		if m == nil {
			p.t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(10 * time.Second):
		p.t.Fatal("no message from the server within 10 s")
	}
	return nil
}

func (p *rawPeer) initialize() {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := p.recv(); m["result"] == nil {
		p.t.Fatalf("initialize: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func errorOf(m map[string]any) (code float64, msg string, id any) {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0, "", m["id"]
	}
	code, _ = e["code"].(float64)
	msg, _ = e["message"].(string)
	return code, msg, m["id"]
}

func testServer(t *testing.T) *Server {
	s := &Server{log: discard(), mcp: sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)}
	addTool(s, textVoice, &sdk.Tool{Name: "echo"}, func(p schemaProps) {
		p["text"].MaxLength = ptr(100)
		p["delayMs"].Maximum = ptr(1000.0)
	}, func(_ context.Context, _ *sdk.CallToolRequest, in struct {
		Text    string `json:"text"`
		DelayMs int    `json:"delayMs,omitempty"`
	}) (any, error) {
		time.Sleep(time.Duration(in.DelayMs) * time.Millisecond)
		return map[string]string{"text": in.Text}, nil
	})
	return s
}

// TestStdioSurvivesMalformedLines: every kind of bad line gets a JSON-RPC
// error, and the server goes on serving.
func TestStdioSurvivesMalformedLines(t *testing.T) {
	p := startRaw(t, testServer(t))
	p.initialize()
	for _, c := range []struct {
		line string
		code float64
		id   any
		msg  string
	}{
		{`not json`, -32700, nil, "not JSON"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, -32700, nil, "not JSON"},
		{`{}`, -32600, nil, `"jsonrpc" must be "2.0", got none`},
		{`[]`, -32600, nil, "batches are not supported"},
		{`[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, -32600, nil, "batches"},
		{`"hello"`, -32600, nil, "got a JSON string"},
		{`42`, -32600, nil, "got a JSON number"},
		{`null`, -32600, nil, "got a JSON null"},
		{`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`, -32600, 7.0, `got "1.0"`},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, -32600, nil, `"id" must be a string or an integer`},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, -32600, nil, `"id" must be a string or an integer`},
		{`{"jsonrpc":"2.0","id":9,"method":""}`, -32600, 9.0, `"method" is empty`},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":[1,2]}`, -32602, 10.0, "must be an object"},
	} {
		p.send(c.line)
		code, msg, id := errorOf(p.recv())
		if code != c.code || !strings.Contains(msg, c.msg) || id != c.id {
			t.Errorf("%s: code %v, id %v, %q; want %v, %v, %q", c.line, code, id, msg, c.code, c.id, c.msg)
		}
	}
	// Broken responses are dropped, not answered.
	p.send(`{"jsonrpc":"2.0","id":8}`)
	p.send(`{"jsonrpc":"2.0"}`)
	// A duplicate id while the first is in flight is refused without an id.
	p.send(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo","arguments":{"text":"first","delayMs":300}}}`)
	p.send(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo","arguments":{"text":"second"}}}`)
	if code, msg, id := errorOf(p.recv()); code != -32600 || id != nil || !strings.Contains(msg, "already in use") {
		t.Fatalf("duplicate id: %v %v %q", code, id, msg)
	}
	if m := p.recv(); m["id"] != "dup" || !strings.Contains(string(mustJSON(m["result"])), "first") {
		t.Fatalf("the first of the duplicate ids: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	m := p.recv()
	if m["id"] != "after" || !strings.Contains(string(mustJSON(m["result"])), "still here") {
		t.Fatalf("after the bad lines: %v", m)
	}
}

// TestStdioAnswersEverythingBeforeEOF: requests piped in and followed by
// the end of input are all answered before the server exits.
func TestStdioAnswersEverythingBeforeEOF(t *testing.T) {
	p := startRaw(t, testServer(t))
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"slow","delayMs":300}}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	p.in.Close()
	seen := map[float64]bool{}
	for range 2 {
		m := p.recv()
		id, _ := m["id"].(float64)
		seen[id] = m["result"] != nil
	}
	if !seen[1] || !seen[2] {
		t.Fatalf("answers: %v", seen)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit after answering")
	}
}

// TestStdioRefusesHugeLines: a line past the limit is refused without
// being held, and the next one is served.
func TestStdioRefusesHugeLines(t *testing.T) {
	s := testServer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go s.mcp.Run(context.Background(), &Stdio{In: inR, Out: outW, MaxLine: 1 << 10})
	t.Cleanup(func() { inW.Close(); outR.Close() })
	p := &rawPeer{t: t, in: inW, out: bufio.NewScanner(outR)}
	p.initialize()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":3,"method":"x","params":{"pad":"`+strings.Repeat("a", 1<<20)+`"}}`+"\n")
	if code, msg, _ := errorOf(p.recv()); code != -32600 || !strings.Contains(msg, "longer than 1024 bytes") {
		t.Fatalf("huge line: %v %q", code, msg)
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if m := p.recv(); m["id"] != 4.0 || m["error"] != nil {
		t.Fatalf("after the huge line: %v", m)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// breakingOut is a client's end of stdout that it closes after the answer
// to initialize: every later write fails.
type breakingOut struct{ writes atomic.Int32 }

func (b *breakingOut) Write(p []byte) (int, error) {
	if b.writes.Add(1) > 1 {
		return 0, syscall.EPIPE
	}
	return len(p), nil
}

// A client that closes the server's stdout but not its stdin ends the
// connection at the first answer that cannot be written; the server does
// not go on serving calls no one hears (with stdout a duplicate of the
// descriptor, no SIGPIPE ends it any more).
func TestStdioEndsWhenOutputBreaks(t *testing.T) {
	s := testServer(t)
	inR, inW := io.Pipe()
	defer inW.Close()
	out := &breakingOut{}
	done := make(chan error, 1)
	go func() { done <- s.mcp.Run(context.Background(), &Stdio{In: inR, Out: out, Tools: s.tool}) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	for start := time.Now(); out.writes.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("no answer to initialize")
		}
	}
	// The call's answer is the first write that fails (the direct path,
	// not go-sdk's, which ends the connection on its own).
	go io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`+"\n")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server kept serving with its output broken")
	}
}
