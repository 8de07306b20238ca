package main

import (
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// TestEveryKindSharedPaths runs the same steps on a session of every kind
// (a Telnet shell, an SSH shell, a program under a local PTY), through the
// tools that take any kind: typing and waiting, the screen, a resize that
// reaches the program, an interrupt, run_command, the session list, and
// the end of the session. A new kind joins the table; a path written for
// one kind shows up as one row failing.
func TestEveryKindSharedPaths(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	requireTool(t, "/bin/busybox", "--list")
	f := newSSHFixture(t)
	h := &hostProc{t: t, cs: f.cs}

	port := busyboxTelnetd(t, "/bin/sh", "PS1=$ ")

	for _, k := range []struct {
		kind  string
		open  func(t *testing.T) string
		close func(t *testing.T, id string)
	}{
		{"telnet", func(t *testing.T) string {
			return mustCall(t, f.cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
		}, func(t *testing.T, id string) {
			mustCall(t, f.cs, "telnet_disconnect", map[string]any{"sessionId": id})
		}},
		{"ssh", func(t *testing.T) string {
			return f.mustCall(t, "ssh_shell", map[string]any{"credentialId": "key", "cols": 80, "rows": 24})["session_id"].(string)
		}, func(t *testing.T, id string) {
			mustCall(t, f.cs, "stop_app", map[string]any{"session_id": id})
		}},
		{"pty", func(t *testing.T) string {
			return mustCall(t, f.cs, "launch_app", map[string]any{"command": "bash", "args": []string{"--norc", "--noprofile", "-i"},
				"env": map[string]any{"PS1": "$ "}, "cols": 80, "rows": 24})["session_id"].(string)
		}, func(t *testing.T, id string) {
			mustCall(t, f.cs, "stop_app", map[string]any{"session_id": id})
		}},
	} {
		t.Run(k.kind, func(t *testing.T) {
			h.t = t
			id := k.open(t)
			h.screenHas(id, "$")

			// Typed text reaches the program; its answer the screen.
			mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo kind-$((6*7))\r"})
			h.screenHas(id, "kind-42")
			if v := h.view(id); !strings.Contains(v, "kind-42") {
				t.Errorf("view_screen lacks the answer:\n%s", v)
			}

			// A resize reaches the screen and the program's terminal.
			mustCall(t, f.cs, "resize_terminal", map[string]any{"session_id": id, "cols": 100, "rows": 30})
			if size := mustCall(t, f.cs, "get_screen_size", map[string]any{"session_id": id}); size["cols"] != 100.0 || size["rows"] != 30.0 {
				t.Errorf("get_screen_size after resize_terminal 100x30: %v", size)
			}
			mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "stty size\r"})
			h.screenHas(id, "30 100")

			// An interrupt stops a running command; the shell carries on.
			mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo sleeping-$((6*7)); sleep 30\r"})
			h.screenHas(id, "sleeping-42")
			start := time.Now()
			if !testutil.Poll(20*time.Second, func() bool {
				mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "keys": "C-c"})
				mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo after-$((40+2))\r"})
				r := h.call(10*time.Second, "wait_for", map[string]any{"session_id": id, "until": `after-42`, "onScreen": true, "timeoutMs": 1000})
				return !r.isErr && r.res["reason"] == "matched"
			}) {
				t.Fatalf("C-c did not stop sleep:\n%s", h.view(id))
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the interrupt took %v", took)
			}

			// The loop above may have sent more lines than it needed: let
			// the shell answer them all (their prompts come after the mark
			// run_command takes, and its expect would match one at once).
			mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo sync-$((3*3))\r"})
			if r := h.call(15*time.Second, "wait_for", map[string]any{"session_id": id, "until": `(?s)sync-9\r?\n.*\$ $`, "timeoutMs": 10000}); r.isErr || r.res["reason"] != "matched" {
				t.Fatalf("the shell did not settle: %+v\n%s", r, h.view(id))
			}

			// run_command returns a command's output alone, ended by the
			// prompt it is told.
			res := mustCall(t, f.cs, "run_command", map[string]any{"sessionId": id, "command": "echo rc-$((1+1))", "expect": `\$ $`, "timeoutMs": 15000})
			if out, _ := res["output"].(string); res["reason"] == "timeout" || !strings.Contains(out, "rc-2") || strings.Contains(out, "echo rc-") {
				t.Errorf("run_command: %v", res)
			}

			// The session is listed with its kind, and gone once closed.
			listed := func() map[string]any {
				for _, raw := range mustCall(t, f.cs, "list_sessions", map[string]any{})["sessions"].([]any) {
					if s := raw.(map[string]any); s["session_id"] == id {
						return s
					}
				}
				return nil
			}
			if s := listed(); s == nil || s["kind"] != k.kind {
				t.Errorf("list_sessions: %v, want kind %s", s, k.kind)
			}
			k.close(t, id)
			testutil.Eventually(t, 10*time.Second, "the closed session to leave the list", func() bool { return listed() == nil })
			if r := h.call(10*time.Second, "view_screen", map[string]any{"session_id": id}); !r.isErr || !strings.Contains(r.msg, "SESSION_NOT_FOUND") {
				t.Errorf("view_screen of a closed session: %+v", r)
			}
		})
	}
}
