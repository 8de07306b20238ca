package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// floodScript prints lines lines of 1000 cells, each cell its own 24-bit
// foreground and background, then FLOOD-DONE (bounded: awk, one pass).
func floodScript(lines int) string {
	return fmt.Sprintf(`awk 'BEGIN { for (l = 0; l < %d; l++) { s = ""; for (c = 0; c < 1000; c++) { v = l * 1000 + c; `+
		`s = s sprintf("\033[38;2;%%d;%%d;%%d;48;2;%%d;%%d;7m%%c", v %% 256, int(v / 256) %% 256, int(v / 65536) %% 256, (v * 3) %% 256, int(v / 32) %% 256, 97 + c %% 26) } `+
		`print s "\033[0m" } print "FLOOD-DONE" }'`, lines)
}

// TestTrustScreensFloodSparesNeighbours (issue 16 item 14): four sessions
// at the widest screen flood truecolour lines next to three quiet ones
// sharing the vt screen plugin's instances. A 1000x1000 screen is refused
// (INVALID_INPUT naming cols×rows and the limit); afterwards every quiet
// session's screen and scrollback show what they showed before — never
// blank while active.
func TestTrustScreensFloodSparesNeighbours(t *testing.T) {
	h := startHost(t)
	h.pluginsLoaded()

	quiet := make([]string, 3)
	for i := range quiet {
		script := fmt.Sprintf(`i=1; while [ $i -le 40 ]; do printf '\033[3%%dmquiet %d line %%d\033[0m\n' $((i %% 6 + 1)) $i; i=$((i + 1)); done; echo QUIET-%d-DONE; exec cat`, i, i)
		quiet[i] = h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", script}, "cols": 80, "rows": 24})["session_id"].(string)
		h.must("wait_for", map[string]any{"session_id": quiet[i], "until": fmt.Sprintf("QUIET-%d-DONE", i), "timeoutMs": 20000})
	}
	checkQuiet := func(when string) {
		t.Helper()
		for i, id := range quiet {
			scr := h.must("view_screen", map[string]any{"session_id": id})
			content, _ := scr["content"].(string)
			if strings.TrimSpace(content) == "" {
				t.Fatalf("%s: quiet session %d shows a blank screen while %v", when, i, scr["state"])
			}
			for _, want := range []string{fmt.Sprintf("quiet %d line 40", i), fmt.Sprintf("QUIET-%d-DONE", i)} {
				if !strings.Contains(content, want) {
					t.Fatalf("%s: quiet session %d's screen lacks %q:\n%s", when, i, want, content)
				}
			}
			sb := h.must("view_screen", map[string]any{"session_id": id, "format": "scrollback", "offset": 0, "limit": 100})
			text, _ := sb["content"].(string)
			if !strings.HasPrefix(text, fmt.Sprintf("quiet %d line 1\n", i)) || !strings.Contains(text, fmt.Sprintf("quiet %d line 17\n", i)) {
				t.Fatalf("%s: quiet session %d's scrollback lost its history:\n%.600s", when, i, text)
			}
		}
	}
	checkQuiet("before the floods")

	var floods []string
	r := h.call(30*time.Second, "launch_app", map[string]any{"command": "sh", "args": []string{"-c", floodScript(60)}, "cols": 1000, "rows": 1000})
	if !r.isErr {
		t.Errorf("a 1000x1000 screen was opened: %v", r)
		floods = append(floods, r.res["session_id"].(string))
	} else if !strings.Contains(r.msg, "INVALID_INPUT") || !strings.Contains(r.msg, "cols×rows = 1000×1000") || !strings.Contains(r.msg, "32768") {
		t.Errorf("a 1000x1000 screen: %v", r)
	}
	for len(floods) < 4 {
		floods = append(floods, h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", floodScript(60)}, "cols": 1000, "rows": 32})["session_id"].(string))
	}
	for i, id := range floods {
		if r := h.call(90*time.Second, "wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 60000}); r.isErr {
			t.Fatalf("flood %d: %v", i, r)
		}
	}
	checkQuiet("after the floods")
	if logs := h.logs.String(); strings.Contains(logs, "out of memory") {
		t.Errorf("a screen instance ran out of memory:\n%s", logs[max(0, strings.Index(logs, "out of memory")-400):][:600])
	}
}
