package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
)

// A plain telnet_connect, no options, to a device the agent logs into
// itself: the dialect is detected when run_command first needs it, from
// what the session already shows (the banner, the prompt), so the command
// ends at the device's prompt, not at its timeout (SPEC DEV-1). Until then
// the session has no dialect plugin in its chain: plain sends and reads
// pay nothing for it.
func TestPlainTelnetDetectsOnUse(t *testing.T) {
	const pass = "On-Use-Pass-5"
	_, port := startDevsim(t, devsim.Config{Personality: "cisco_ios", Username: "admin", Password: pass, NoColor: true})
	h := startHost(t)
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": id, "until": `(?i)username:\s*$`, "timeoutMs": 10000})
	h.must("telnet_send", map[string]any{"sessionId": id, "command": "admin"})
	h.must("telnet_read", map[string]any{"sessionId": id, "until": `(?i)password:\s*$`, "timeoutMs": 10000})
	h.must("telnet_send", map[string]any{"sessionId": id, "command": pass})
	h.must("telnet_read", map[string]any{"sessionId": id, "until": `[>#]\s*$`, "timeoutMs": 10000})
	if p := chainOf(t, h, id); p != "" {
		t.Fatalf("a plain session uses the dialect plugin (%s) before any device call", p)
	}
	start := time.Now()
	r := h.must("run_command", map[string]any{"sessionId": id, "command": "show version", "timeoutMs": 10000})
	if r["reason"] != "done" || r["dialect"] != "cisco_ios" || !strings.Contains(r["output"].(string), "Version") {
		t.Fatalf("show version on a plain session: %v", r)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("show version took %v: it ended late, not at the prompt", took)
	}
	if p := chainOf(t, h, id); p == "" {
		t.Errorf("after run_command no session uses the dialect plugin")
	}
	// set_mode follows the detected dialect's commands: enable asks for
	// its password, which this session has no credential for.
	r = h.must("set_mode", map[string]any{"sessionId": id, "mode": "config", "timeoutMs": 10000})
	if r["reason"] != "login" || r["field"] != "enable" {
		t.Fatalf("set_mode config: %v", r)
	}
	h.must("telnet_send", map[string]any{"sessionId": id, "command": pass})
	h.must("telnet_read", map[string]any{"sessionId": id, "until": `#\s*$`, "timeoutMs": 10000})
	r = h.must("set_mode", map[string]any{"sessionId": id, "mode": "config", "timeoutMs": 10000})
	if r["mode"] != "config" {
		t.Fatalf("set_mode config after enable: %v", r)
	}
	r = h.must("run_command", map[string]any{"sessionId": id, "command": "frobnicate", "timeoutMs": 10000})
	if r["error"] == nil || r["error"] == "" {
		t.Errorf("an unknown command is not flagged: %v", r)
	}
}

// chainOf says how many sessions use the dialect plugin (plugins_list).
func chainOf(t *testing.T, h *hostProc, _ string) string {
	t.Helper()
	l := h.must("plugins_list", map[string]any{})
	ps, _ := l["plugins"].([]any)
	for _, p := range ps {
		m, _ := p.(map[string]any)
		if m["name"] == "dialect" {
			if n, _ := m["sessions"].(float64); n > 0 {
				return "dialect@" + fmt.Sprint(m["version"])
			}
			return ""
		}
	}
	t.Fatalf("no dialect plugin in plugins_list: %v", l)
	return ""
}
