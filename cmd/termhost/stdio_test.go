package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawServe is `termhost serve` driven line by line over its real stdin
// and stdout, with stderr watched for log lines.
type rawServe struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan map[string]any
	exited chan error

	mu     sync.Mutex
	stderr strings.Builder
	notes  map[string]chan struct{}
}

const stdioWait = 20 * time.Second // bound on any one wait on the process

func startRawServe(t testing.TB, watch ...string) *rawServe {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--cache-dir", cacheDir(), "--log-level", "info")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawServe{t: t, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 256), exited: make(chan error, 1), notes: map[string]chan struct{}{}}
	for _, w := range watch {
		s.notes[w] = make(chan struct{})
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Errorf("stdout carried a line that is not JSON-RPC (MCP-1): %q", sc.Text())
				continue
			}
			s.lines <- m
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			for w, ch := range s.notes {
				if strings.Contains(sc.Text(), w) {
					close(ch)
					delete(s.notes, w)
				}
			}
			s.mu.Unlock()
		}
	}()
	go func() {
		readers.Wait() // Wait closes the pipes: read them to the end first
		s.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			s.mu.Lock()
			t.Logf("termhost stderr:\n%s", s.stderr.String())
			s.mu.Unlock()
		}
	})
	return s
}

func (s *rawServe) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("writing %q: %v", line, err)
	}
}

func (s *rawServe) next() map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.lines:
		if !ok {
			s.t.Fatal("termhost's stdout ended")
		}
		return m
	case <-time.After(stdioWait):
		s.t.Fatal("no answer from termhost")
	}
	return nil
}

// answer returns the next line that is not a notification.
func (s *rawServe) answer() map[string]any {
	s.t.Helper()
	for {
		if m := s.next(); m["method"] == nil {
			return m
		}
	}
}

func (s *rawServe) logged(note string) {
	s.t.Helper()
	s.mu.Lock()
	ch, ok := s.notes[note]
	s.mu.Unlock()
	if !ok {
		return
	}
	select {
	case <-ch:
	case <-time.After(stdioWait):
		s.t.Fatalf("termhost never logged %q", note)
	}
}

func (s *rawServe) waitExit() {
	s.t.Helper()
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Fatalf("termhost exited with %v", err)
		}
	case <-time.After(stdioWait):
		s.t.Fatal("termhost did not exit")
	}
}

const initLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func (s *rawServe) initialize() {
	s.t.Helper()
	s.send(initLine)
	if m := s.answer(); m["id"] != 0.0 || m["result"] == nil {
		s.t.Fatalf("initialize: %v", m)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func toolResult(t testing.TB, m map[string]any) (string, bool) {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("not a tool result: %v", m)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	isErr, _ := res["isError"].(bool)
	return text, isErr
}

// Malformed lines get JSON-RPC errors and the process keeps serving; the
// arguments:null call that used to crash it is an argument error.
func TestServeSurvivesMalformedLines(t *testing.T) {
	s := startRawServe(t)
	s.initialize()
	for i, c := range []struct {
		line string
		code float64
	}{
		{"not json", -32700},
		{"{}", -32600},
		{"[]", -32600},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600},
	} {
		s.send(c.line)
		m := s.answer()
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != c.code {
			t.Errorf("%q: %v, want error %v", c.line, m, c.code)
		}
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 10+i))
		if m := s.answer(); m["id"] != float64(10+i) || m["result"] == nil {
			t.Fatalf("tools/list after %q: %v", c.line, m)
		}
	}
	s.send(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"telnet_connect","arguments":null}}`)
	if text, isErr := toolResult(t, s.answer()); !isErr || !strings.HasPrefix(text, "invalid arguments: host: required") {
		t.Fatalf("telnet_connect with null arguments: %q", text)
	}
	s.send(`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"telnet_read","arguments":{"sessionId":"x","timeoutMs":18446744073710}}}`)
	if text, _ := toolResult(t, s.answer()); text != "invalid arguments: timeoutMs: must be an integer between 0 and 300000, got 18446744073710" {
		t.Fatalf("huge timeoutMs: %q", text)
	}
	s.stdin.Close()
	s.waitExit()
}

// `termhost serve < requests.jsonl`: every request is answered, then the
// process exits 0.
func TestServePipedFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), stdioWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--cache-dir", cacheDir(), "--log-level", "warn")
	cmd.Stdin = strings.NewReader(initLine + `
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"tools/list"}
not json
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"telnet_list","arguments":{}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"telnet_connect","arguments":{"host":"127.0.0.1","port":0}}}
{"jsonrpc":"2.0","id":4,"method":"ping"}
`)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("termhost serve < file: %v\nstderr:\n%s", err, stderr.String())
	}
	got := map[any]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		got[m["id"]] = true
	}
	for _, id := range []any{0.0, 1.0, 2.0, 3.0, 4.0, nil} {
		if !got[id] {
			t.Errorf("no answer with id %v in:\n%s", id, out)
		}
	}
}

// A request still running when stdin closes is answered before the
// process exits.
func TestServeAnswersInFlightAtEOF(t *testing.T) {
	const note = "input closed; answering requests in flight"
	s := startRawServe(t, note)
	s.initialize()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"telnet_connect","arguments":{"host":"127.0.0.1","port":%d,"name":"eof"}}}`, ln.Addr().(*net.TCPAddr).Port))
	if text, isErr := toolResult(t, s.answer()); isErr {
		t.Fatalf("connect: %s", text)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	go io.Copy(io.Discard, peer) // negotiation from the client side

	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"telnet_read","arguments":{"sessionId":"eof","until":"bye","timeoutMs":60000}}}`)
	s.stdin.Close()
	s.logged(note)
	peer.Write([]byte("bye\r\n"))
	m := s.answer()
	if text, isErr := toolResult(t, m); m["id"] != 2.0 || isErr || !strings.Contains(text, `"reason":"matched"`) {
		t.Fatalf("the read in flight at EOF: %v", m)
	}
	s.waitExit()
}

// SIGTERM ends the process even with a call waiting.
func TestServeSIGTERM(t *testing.T) {
	s := startRawServe(t)
	s.initialize()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"telnet_connect","arguments":{"host":"127.0.0.1","port":%d,"name":"term"}}}`, ln.Addr().(*net.TCPAddr).Port))
	if text, isErr := toolResult(t, s.answer()); isErr {
		t.Fatalf("connect: %s", text)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"telnet_read","arguments":{"sessionId":"term","until":"never","timeoutMs":300000}}}`)
	s.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if m := s.answer(); m["id"] != 3.0 {
		t.Fatalf("ping: %v", m)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.waitExit()
}
