package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Readers belong to the session (issue 18, item 3). restart_app starts
// the program again under the same id, as a new session: a wait_for on it
// starts at the new output's beginning, not at a place the client had in
// the old program's output — that place, kept beside the session, lay
// past everything the new program printed, and the wait saw nothing.
func TestRestartedAppWaitsFromItsStart(t *testing.T) {
	h := startHost(t)
	flag := filepath.Join(t.TempDir(), "ran")
	script := `if [ -e "$1" ]; then echo second-run; else : > "$1"; head -c 8000 /dev/zero | tr '\0' x; echo; echo first-run; fi; exec sleep 60`
	id := h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", script, "sh", flag}, "name": "restarted"})["session_id"].(string)
	if r := h.must("wait_for", map[string]any{"session_id": id, "until": "first-run", "timeoutMs": 15000}); r["reason"] != "matched" {
		t.Fatalf("first run: %v", r)
	}
	if _, err := os.Stat(flag); err != nil {
		t.Fatal(err)
	}
	if r := h.must("restart_app", map[string]any{"session_id": id}); r["session_id"] != id {
		t.Fatalf("restart changed the id: %v", r)
	}
	start := time.Now()
	r := h.call(20*time.Second, "wait_for", map[string]any{"session_id": id, "until": "second-run", "timeoutMs": 5000})
	if r.isErr || r.res["reason"] != "matched" {
		t.Fatalf("wait_for on the restarted program after %v: %v", time.Since(start), r)
	}
	h.must("stop_app", map[string]any{"session_id": id})
}
