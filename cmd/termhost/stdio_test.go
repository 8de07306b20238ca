package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
)

// TestServePipedRequests: `termhost serve < requests.jsonl` — a new user's
// first try — answers every request, the malformed lines with JSON-RPC
// errors, and exits when it is done. (Requests are served concurrently, as
// JSON-RPC allows: these do not depend on each other.)
func TestServePipedRequests(t *testing.T) {
	_, port := startDevsim(t, devsim.Config{NoLogin: true, EOR: true})
	lines := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
		`{}`,
		`[]`,
		`{"jsonrpc":"1.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"telnet_connect","arguments":{"host":"127.0.0.1","port":` + strconv.Itoa(port) + `,"name":"p"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"plugins_list","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"telnet_connect","arguments":null}}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--cache-dir", cacheDir(), "--log-level", "error")
	cmd.Stdin = strings.NewReader(lines)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve < requests: %v after %v\nstderr: %s", err, time.Since(start), stderr.String())
	}
	byID := map[string]map[string]any{}
	var nullIDErrors []float64
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout carries something that is not JSON-RPC: %q", sc.Text())
		}
		if m["id"] == nil {
			e, _ := m["error"].(map[string]any)
			code, _ := e["code"].(float64)
			nullIDErrors = append(nullIDErrors, code)
			continue
		}
		byID[string(mustMarshal(m["id"]))] = m
	}
	if len(nullIDErrors) != 3 || nullIDErrors[0] != -32700 || nullIDErrors[1] != -32600 || nullIDErrors[2] != -32600 {
		t.Errorf("errors without an id: %v; want -32700, -32600, -32600", nullIDErrors)
	}
	if e, _ := byID["2"]["error"].(map[string]any); e == nil || e["code"] != -32600.0 {
		t.Errorf("wrong jsonrpc version: %v", byID["2"])
	}
	for _, id := range []string{"1", "3", "4", "5", "6"} {
		if byID[id]["result"] == nil {
			t.Errorf("request %s: no result: %v", id, byID[id])
		}
	}
	if !strings.Contains(string(mustMarshal(byID["4"])), `\"sessionId\"`) || !strings.Contains(string(mustMarshal(byID["5"])), "telnet") {
		t.Errorf("tool calls piped in: %v %v", byID["4"], byID["5"])
	}
	if !strings.Contains(string(mustMarshal(byID["6"])), `invalid arguments: host: required`) {
		t.Errorf("null arguments: %v", byID["6"])
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
