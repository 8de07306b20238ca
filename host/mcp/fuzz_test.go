package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/mcp"
)

// wire drives one server over the Stdio transport with raw lines and
// routes its answers by id.
type wire struct {
	in      io.Writer
	writeMu sync.Mutex // a pipe write blocks until the server reads it
	mu      sync.Mutex // guards wait
	wait    map[string]chan map[string]any
	nextID  atomic.Int64
	dead    chan struct{}
}

func newWire(t testing.TB, srv *mcp.Server) *wire {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{in: inW, wait: map[string]chan map[string]any{}, dead: make(chan struct{})}
	go func() {
		srv.ServeStdio(context.Background(), inR, outW)
		close(w.dead)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			key := fmt.Sprint(m["id"])
			w.mu.Lock()
			ch := w.wait[key]
			delete(w.wait, key)
			w.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return w
}

// call sends a request and waits for its answer, at most d.
func (w *wire) call(method string, params any, d time.Duration) (map[string]any, error) {
	id := fmt.Sprintf("chk-%d", w.nextID.Add(1))
	ch := make(chan map[string]any, 1)
	w.mu.Lock()
	w.wait[id] = ch
	w.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err := w.line(line); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-w.dead:
		return nil, fmt.Errorf("the server stopped serving")
	case <-time.After(d):
		return nil, fmt.Errorf("%s: no answer within %v", method, d)
	}
}

func (w *wire) line(p []byte) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	_, err := w.in.Write(append(p, '\n'))
	return err
}

// toolResult is the JSON object a tool call returned.
func toolResult(m map[string]any) (map[string]any, string) {
	r, _ := m["result"].(map[string]any)
	content, _ := r["content"].([]any)
	var text string
	for _, c := range content {
		if cm, ok := c.(map[string]any); ok {
			text += fmt.Sprint(cm["text"])
		}
	}
	if r["isError"] == true || m["error"] != nil {
		return nil, text + fmt.Sprint(m["error"])
	}
	var out map[string]any
	json.Unmarshal([]byte(text), &out)
	return out, text
}

var fuzzTools = []string{"telnet_connect", "telnet_send", "telnet_read", "telnet_disconnect", "telnet_list", "plugins_list", "no_such_tool"}

// FuzzServer feeds random JSON-RPC frames and random tool arguments to one
// server while another session stays in use: after every input the server
// still answers a ping within a deadline and the other session still
// round-trips. The server must never exit, hang or panic.
func FuzzServer(f *testing.F) {
	for _, c := range []struct {
		raw  string
		tool uint8
		args string
	}{
		{`not json`, 0, `null`},
		{`{}`, 0, `{"host":null,"port":"x"}`},
		{`[]`, 2, `{"sessionId":"x","timeoutMs":18446744073710}`},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, 0, `{"host":"127.0.0.1","port":1e18,"timeout":1e18}`},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, 1, `{"sessionId":"","command":""}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"telnet_read","arguments":"x"}}`, 2, `{"sessionId":"x","until":"(","maxBytes":-1}`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`, 2, `{"sessionId":"x","until":"` + strings.Repeat("[a-z]", 300) + `"}`},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, 0, `{"host":"127.0.0.1","port":23,"name":"a\u0000b"}`},
		{"\x00\xff\xfe", 5, `[]`},
		{`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}`, 3, `{"sessionId":123}`},
		{`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"x"}}`, 6, `{}`},
	} {
		f.Add([]byte(c.raw), c.tool, []byte(c.args))
	}

	h, err := host.New(context.Background(), host.Config{
		Plugins: testPlugins(), CacheDir: testCacheDir(), MaxSessions: 20,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	echo := echoServer(f)
	w := newWire(f, h.MCP)
	if _, err := w.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "fuzz", "version": "1"}}, 10*time.Second); err != nil {
		f.Fatal(err)
	}
	w.line([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	res, err := w.call("tools/call", map[string]any{"name": "telnet_connect", "arguments": map[string]any{"host": "127.0.0.1", "port": echo}}, 10*time.Second)
	if err != nil {
		f.Fatal(err)
	}
	out, text := toolResult(res)
	other, _ := out["sessionId"].(string)
	if other == "" {
		f.Fatalf("the other session: %s", text)
	}
	n := 0

	f.Fuzz(func(t *testing.T, raw []byte, tool uint8, args []byte) {
		w.line([]byte(strings.ReplaceAll(string(raw), "\n", " ")))
		var a any = string(args)
		if json.Valid(args) {
			a = json.RawMessage(args)
		}
		name := fuzzTools[int(tool)%len(fuzzTools)]
		frame, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("fz-%d", n), "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": a}})
		w.line(frame)

		if _, err := w.call("ping", nil, 10*time.Second); err != nil {
			t.Fatalf("after %q and %s %s: %v", raw, name, args, err)
		}
		n++
		word := fmt.Sprintf("alive-%d", n)
		if res, err := w.call("tools/call", map[string]any{"name": "telnet_send", "arguments": map[string]any{"sessionId": other, "command": word}}, 15*time.Second); err != nil {
			t.Fatalf("the other session's send: %v", err)
		} else if _, text := toolResult(res); strings.Contains(text, "error") || strings.Contains(text, "Session") {
			t.Fatalf("the other session's send failed after %q and %s %s: %s", raw, name, args, text)
		}
		res, err := w.call("tools/call", map[string]any{"name": "telnet_read", "arguments": map[string]any{"sessionId": other, "until": word, "timeoutMs": 10000}}, 15*time.Second)
		if err != nil {
			t.Fatalf("the other session's read: %v", err)
		}
		if out, text := toolResult(res); out["reason"] != "matched" {
			t.Fatalf("the other session stopped working after %q and %s %s: %s", raw, name, args, text)
		}
	})
}

// echoServer is a loopback TCP server that echoes what it gets.
func echoServer(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func testPlugins() fs.FS { return os.DirFS("../../plugins/telnet") }
