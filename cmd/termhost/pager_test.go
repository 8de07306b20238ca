package main

// A device that pages forever stops at the page bound promptly (SPEC
// DONE-5): run_command answers 1,000 pagers, leaves the pager with the
// dialect's quit key and says reason pager_limit with the pages; the
// device is back at its prompt. These tests assert the result and the
// page count and log the time (performance is measured by benchmarks,
// never asserted).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/testutil"
)

// The FRR simulator paging without end at 80 columns: its pager counts
// wrapped rows, so many pages end inside a line (" --More-- " right after
// the cut). Every pager is answered at once, the lines come back whole.
func TestRunCommandEndlessPager(t *testing.T) {
	_, port := startDevsim(t, devsim.Config{Personality: "frr", NoLogin: true, NoColor: true, EndlessCommand: "show endless"})
	h := startHost(t)
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "cols": 80})["sessionId"].(string)
	h.must("wait_for", map[string]any{"session_id": id, "until": `edge-r1>\s*$`, "timeoutMs": 15000})
	start := time.Now()
	r := h.call(90*time.Second, "run_command", map[string]any{"sessionId": id, "command": "show endless", "timeoutMs": 60000, "maxBytes": 1 << 20})
	took := time.Since(start)
	if r.isErr {
		t.Fatal(r)
	}
	out, _ := r.res["output"].(string)
	t.Logf("show endless: %v after %v (%v pages, %d bytes returned)", r.res["reason"], took, r.res["pages"], len(out))
	if r.res["reason"] != "pager_limit" || r.res["pages"] != 1000.0 || r.res["dialect"] != "frr" || r.res["mode"] != "user" {
		t.Fatalf("reason %v, pages %v, dialect %v, mode %v: …%.300q", r.res["reason"], r.res["pages"], r.res["dialect"], r.res["mode"], out[max(0, len(out)-300):])
	}
	if strings.Contains(out, "More") || strings.ContainsAny(out, "\b\x00") {
		t.Errorf("a pager left in the output: …%.300q", out[max(0, len(out)-300):])
	}
	// 1,000 pages of 20 rows were shown (the output is longer than
	// maxBytes); the lines come back whole and in order (the last one
	// may be cut by maxBytes or by the quit key).
	if n, _ := r.res["bytes"].(float64); r.res["truncated"] != true || n < 1000*20*50 {
		t.Errorf("truncated %v, %v bytes: want more than 1000 pages of 20 rows", r.res["truncated"], r.res["bytes"])
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 5000 {
		t.Errorf("%d lines returned", len(lines))
	}
	for i, l := range lines[:len(lines)-1] {
		if want := fmt.Sprintf("endless %09d", i); !strings.HasPrefix(l, want) || len(l) > 150 {
			t.Fatalf("line %d: %q", i, l)
		}
	}
	r2 := h.must("run_command", map[string]any{"sessionId": id, "command": "show version", "timeoutMs": 10000})
	if o, _ := r2["output"].(string); r2["reason"] != "done" || !strings.Contains(o, "FRRouting") || strings.Contains(o, "endless") {
		t.Fatalf("the next command: %v", r2)
	}
}

// util-linux more reading a pipe under a PTY with the linux dialect: its
// "--More--" has no percentage, so it equals the pager's lead, which may
// still grow ("--More--(45%)"): it is answered at once all the same (not
// when the stream goes quiet, every page), and the command stops at the
// bound.
func TestRunCommandEndlessMore(t *testing.T) {
	testutil.NeedProgram(t, "more")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": "bash", "args": []string{"--norc", "--noprofile"}, "dialect": "linux",
		"cols": 80, "rows": 24, "env": map[string]string{"HOME": t.TempDir(), "PS1": `\u@pager:\w\$ `}})["session_id"].(string)
	h.must("run_command", map[string]any{"sessionId": id, "command": "true", "timeoutMs": 15000})
	start := time.Now()
	r := h.call(90*time.Second, "run_command", map[string]any{"sessionId": id, "command": "yes endless | more", "timeoutMs": 60000})
	took := time.Since(start)
	if r.isErr {
		t.Fatal(r)
	}
	out, _ := r.res["output"].(string)
	t.Logf("yes | more: %v after %v (%v pages, %d bytes returned)", r.res["reason"], took, r.res["pages"], len(out))
	if n, _ := r.res["bytes"].(float64); r.res["reason"] != "pager_limit" || r.res["pages"] != 1000.0 || strings.Contains(out, "More") ||
		!strings.HasPrefix(out, "endless\nendless\n") || strings.ReplaceAll(out, "endless\n", "") != "" || n < 1000*20*8 {
		t.Fatalf("reason %v, pages %v: …%.300q", r.res["reason"], r.res["pages"], out[max(0, len(out)-300):])
	}
	r2 := h.must("run_command", map[string]any{"sessionId": id, "command": "echo next-$((6*7))", "timeoutMs": 10000})
	if o, _ := r2["output"].(string); !strings.Contains(o, "next-42") || strings.Contains(o, "endless") {
		t.Fatalf("the next command: %v", r2)
	}
}
