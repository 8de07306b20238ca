package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/testutil"
)

// TestPOSIXShellIntegration: sh, dash and BusyBox sh started by launch_app
// get shell integration through ENV, as bash and zsh get it through their
// rc files: prompt events from the first prompt on, the exit code of a
// command that ran (never after an empty line), run_command's exitCode,
// the user's own ENV file run, no marker on the screen, and a command line
// longer than the terminal is wide drawn as typed (BusyBox's line editor
// counts the prompt's width).
func TestPOSIXShellIntegration(t *testing.T) {
	for _, c := range []struct {
		name, cmd string
		args      []string
	}{
		{"sh", "sh", nil},
		{"dash", "dash", nil},
		{"busybox_sh", "busybox", []string{"sh"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testutil.NeedProgram(t, c.cmd)
			h := startHost(t)
			home := t.TempDir()
			user := filepath.Join(home, "shrc")
			if err := os.WriteFile(user, []byte("X=from-user-env\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := c.args
			if args == nil {
				args = []string{}
			}
			id := h.must("launch_app", map[string]any{"command": c.cmd, "args": args,
				"env": map[string]string{"HOME": home, "ENV": user}, "cols": 80, "rows": 24})["session_id"].(string)
			r := h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000})
			if r["reason"] != "prompt" || r["exit_code"] != nil {
				t.Fatalf("first prompt: %v\n%s", r, h.view(id))
			}

			// The read's events: a done and a prompt with the status.
			h.must("telnet_read", map[string]any{"sessionId": id}) // what came so far
			h.must("send_keys", map[string]any{"session_id": id, "text": "false", "keys": "Enter"})
			r = h.must("telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 15000})
			done, prompt := shellEvents(t, r)
			if r["reason"] != "prompt" || len(prompt) != 1 || prompt[0]["exitCode"] != 1.0 || prompt[0]["durationMs"] == nil ||
				len(done) != 1 || done[0]["exitCode"] != 1.0 {
				t.Fatalf("false: %v", r)
			}

			r = h.must("send_keys", map[string]any{"session_id": id, "text": "true", "keys": "Enter", "prompt": true, "timeoutMs": 15000})
			if r["reason"] != "prompt" || r["exit_code"] != 0.0 {
				t.Fatalf("true: %v", r)
			}
			// An empty line runs nothing: its prompt has no exit code.
			h.must("telnet_read", map[string]any{"sessionId": id})
			h.must("send_keys", map[string]any{"session_id": id, "keys": "Enter"})
			r = h.must("telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 15000})
			done, prompt = shellEvents(t, r)
			if r["reason"] != "prompt" || len(prompt) != 1 || prompt[0]["exitCode"] != nil || len(done) != 0 {
				t.Fatalf("empty line: %v", r)
			}

			// run_command: its output and exit code, the user's ENV file's
			// variable among them.
			r = h.must("run_command", map[string]any{"sessionId": id, "command": "echo x=$X", "timeoutMs": 15000})
			if r["output"] != "x=from-user-env\n" || r["exitCode"] != 0.0 || r["reason"] != "prompt" {
				t.Fatalf("run_command echo: %v", r)
			}
			r = h.must("run_command", map[string]any{"sessionId": id, "command": "(exit 3)", "timeoutMs": 15000})
			if r["exitCode"] != 3.0 {
				t.Fatalf("run_command (exit 3): %v", r)
			}

			// A 120-character line at 80 columns: the first row full, the
			// rest on the next, before and after Enter.
			line := "echo " + strings.Repeat("a", 112) + "END"
			h.must("send_keys", map[string]any{"session_id": id, "text": line, "screenStable": 200, "timeoutMs": 10000})
			if got := wrapped(t, h.view(id), line); got != "" {
				t.Fatalf("typed: %s", got)
			}
			r = h.must("send_keys", map[string]any{"session_id": id, "keys": "Enter", "prompt": true, "timeoutMs": 15000})
			if r["exit_code"] != 0.0 {
				t.Fatalf("long line: %v\n%s", r, h.view(id))
			}
			v := h.view(id)
			if got := wrapped(t, v, line); got != "" {
				t.Fatalf("run: %s", got)
			}
			if !strings.Contains(strings.ReplaceAll(v, "\n", ""), strings.Repeat("a", 112)+"END") {
				t.Fatalf("the long line's output is not on the screen:\n%s", v)
			}

			for _, f := range []string{"plain", "ansi", "raw", "scrollback"} {
				c := h.must("view_screen", map[string]any{"session_id": id, "format": f})["content"].(string)
				if strings.Contains(c, "133;") || strings.Contains(c, "\x07") {
					t.Fatalf("%s view shows a shell-integration mark: %q", f, c)
				}
			}
		})
	}
}

// shellEvents are a read's done and prompt events from the shell
// integration.
func shellEvents(t *testing.T, r map[string]any) (done, prompt []map[string]any) {
	t.Helper()
	evs, _ := r["events"].([]any)
	for _, e := range evs {
		ev := e.(map[string]any)
		f, _ := ev["fields"].(map[string]any)
		if f["source"] != "shell" {
			continue
		}
		switch ev["type"] {
		case "done":
			done = append(done, f)
		case "prompt":
			prompt = append(prompt, f)
		}
	}
	return done, prompt
}

// wrapped checks that the screen shows line after a prompt on one full
// row and the rest on the next; it says what is wrong, or "".
func wrapped(t *testing.T, screen, line string) string {
	t.Helper()
	rows := strings.Split(screen, "\n")
	for i, row := range rows {
		at := strings.Index(row, "echo aaa")
		if at < 0 || i+1 >= len(rows) {
			continue
		}
		first, next := row[at:], strings.TrimRight(rows[i+1], " ")
		if len([]rune(row)) != 80 {
			return "the line's first row is not 80 columns wide:\n" + screen
		}
		if first+next != line {
			return "the rows do not hold the line as typed:\n" + screen
		}
		return ""
	}
	return "the line is not on the screen:\n" + screen
}
