package main

// SPEC §12's dedicated cases (see done_test.go for the table and what
// fails today): DONE-1 a slow rc file, DONE-3 a command that timed out
// and interrupt, DONE-4 a command that ends the shell, DONE-5 terminal
// query replies that arrive after their program exited.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// rowNamed is the row of doneRows named name.
func rowNamed(t *testing.T, name string) doneRow {
	t.Helper()
	for _, r := range doneRows() {
		if r.name == name {
			return r
		}
	}
	t.Fatalf("no row %q", name)
	return doneRow{}
}

// ready runs a first marker command so later checks start from a known
// state; it asserts nothing beyond the row being usable (the table
// checks the first command itself).
func ready(t *testing.T, s *doneSess, row doneRow, tag string, i int) {
	t.Helper()
	cmd, _ := markerCmd(row.lang, tag, i)
	s.run(t, cmd, nil)
	s.stopIfBroken(t)
}

// DONE-1: a shell whose rc file sleeps 3 s; a run_command with a 1 s
// timeout right after the open gives reason not_ready and is not sent;
// a later call, once the prompt came, works.
func TestDoneSlowRC(t *testing.T) {
	slowHome := func(t *testing.T) string {
		home := doneHome(t)
		if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("sleep 3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return home
	}
	cases := []struct {
		name       string
		integrated bool
		open       func(t *testing.T) *doneSess
	}{
		{"bash", true, func(t *testing.T) *doneSess {
			return launch(t, startHost(t), "bash", map[string]string{"HOME": slowHome(t)}, testutil.NeedProgram(t, "bash"))
		}},
		{"dash-ENV", true, func(t *testing.T) *doneSess {
			rc := filepath.Join(t.TempDir(), "shrc")
			if err := os.WriteFile(rc, []byte("sleep 3\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return launch(t, startHost(t), "dash-ENV", map[string]string{"ENV": rc}, testutil.NeedProgram(t, "dash"))
		}},
		{"telnet-busybox-bash", false, func(t *testing.T) *doneSess {
			port := busyboxShellPort(t, testutil.NeedProgram(t, "bash"), slowHome(t))
			return telnetShell(t, startHost(t), "telnet-busybox-bash", port)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doneSlot(t)
			s := c.open(t)
			r := s.run(t, "echo first-$((1+1))", map[string]any{"timeoutMs": 1000})
			if r.isErr || r.reason() != "not_ready" || r.output() != "" {
				t.Errorf("%s: a command before the first prompt, 1 s timeout, rc sleeping 3 s: want reason not_ready, output \"\": %v", c.name, r)
			}
			r = s.run(t, "echo second-$((2+2))", nil)
			if r.isErr || !okEnd(r.reason()) || r.output() != "second-4\n" {
				t.Errorf("%s: the next call, once the prompt came: want output \"second-4\\n\": %v", c.name, r)
			}
			checkExit(t, c.name+" second", r, 0, c.integrated)
			// not_ready means not sent: the first command never ran.
			if v := s.h.call(20*time.Second, "view_screen", map[string]any{"session_id": s.id}); v.isErr {
				t.Errorf("view_screen: %v", v)
			} else if screen, _ := v.res["content"].(string); strings.Contains(screen, "first-2") {
				t.Errorf("%s: the command refused as not_ready ran anyway (typed ahead):\n%s", c.name, screen)
			}
		})
	}
}

// DONE-3: `sleep 2; echo late` times out at 500 ms; the next command
// either waits for it (its output its own, previous holding late) or is
// refused with BUSY naming it. Never late in the next command's output.
func TestDoneTimedOut(t *testing.T) {
	for _, name := range []string{"bash", "dash", "telnet-busybox-bash", "ssh-sh"} {
		t.Run(name, func(t *testing.T) {
			doneSlot(t)
			row := rowNamed(t, name)
			s := row.open(t, name)
			tag := newTag(name)
			ready(t, s, row, tag, 1)
			const slow = "sleep 2; echo late"
			r := s.run(t, slow, map[string]any{"timeoutMs": 500})
			if r.isErr || r.reason() != "timeout" || strings.Contains(r.output(), "late") {
				t.Fatalf("%s: %q with 500 ms: want reason timeout without late: %v", name, slow, r)
			}
			s.timeouts-- // meant
			r = s.run(t, "echo after", nil)
			switch {
			case r.isErr && strings.HasPrefix(r.msg, "BUSY: "):
				if !strings.Contains(r.msg, slow) {
					t.Errorf("%s: BUSY does not name the earlier command %q: %s", name, slow, r.msg)
				}
				// Once the earlier command ended, the session is usable
				// and the late output is nobody's output.
				var again doneRes
				if !testutil.Poll(10*time.Second, func() bool {
					again = s.run(t, "echo again-$((1+1))", nil)
					return !(again.isErr && strings.HasPrefix(again.msg, "BUSY: "))
				}) {
					t.Fatalf("%s: still BUSY 10 s after a 2 s command: %v", name, again)
				}
				if again.isErr || !okEnd(again.reason()) || again.output() != "again-2\n" {
					t.Errorf("%s: the call after BUSY: want output \"again-2\\n\": %v", name, again)
				}
				checkExit(t, name+" again", again, 0, row.integrated)
			case r.isErr:
				t.Errorf("%s: echo after: a tool error that is not BUSY: %v", name, r)
			default:
				if strings.Contains(r.output(), "late") || r.output() != "after\n" || !okEnd(r.reason()) {
					t.Errorf("%s: echo after: want output \"after\\n\" alone (late is the earlier command's): %v", name, r)
				}
				checkExit(t, name+" echo after", r, 0, row.integrated)
				prev, ok := r.res["previous"].(map[string]any)
				if !ok {
					t.Errorf("%s: echo after waited for the timed-out command, yet has no previous: %v", name, r)
					break
				}
				if prev["command"] != slow {
					t.Errorf("%s: previous.command %q, want %q", name, prev["command"], slow)
				}
				if out, _ := prev["output"].(string); !strings.Contains(out, "late") {
					t.Errorf("%s: previous.output %q lacks late", name, out)
				}
				if _, ok := prev["reason"].(string); !ok {
					t.Errorf("%s: previous has no reason: %v", name, prev)
				}
				if v, ok := prev["exitCode"]; (ok && v != 0.0) || (row.integrated && !ok) {
					t.Errorf("%s: previous.exitCode %v (present %v), want 0 with integration, never wrong", name, v, ok)
				}
			}
			s.stopIfBroken(t)
			cmd, _ := markerCmd(row.lang, tag, 2)
			if m := s.run(t, cmd, nil); checkMarker(t, name+" after the timed-out command", m, tag, 2) {
				checkExit(t, name+" marker 2", m, 0, row.integrated)
			}
		})
	}
}

// DONE-3, interrupt: true sends the kind's interrupt (SIGINT on a PTY,
// IAC IP on Telnet, the SSH signal) and resynchronises first: harmless
// on an idle session; after a timed-out `sleep 30; echo late` the next
// command's output is its own at once.
func TestDoneInterrupt(t *testing.T) {
	for _, name := range []string{"bash", "dash", "telnet-busybox-bash", "telnet-inetutils-sh", "ssh-sh"} {
		t.Run(name, func(t *testing.T) {
			doneSlot(t)
			row := rowNamed(t, name)
			s := row.open(t, name)
			tag := newTag(name)
			ready(t, s, row, tag, 1)
			// Idle: the interrupt finds no command, the output is the
			// command's own.
			cmd, _ := markerCmd(row.lang, tag, 2)
			if r := s.run(t, cmd, map[string]any{"interrupt": true}); checkMarker(t, name+" interrupt when idle", r, tag, 2) {
				checkExit(t, name+" interrupt when idle", r, 0, row.integrated)
			}
			s.stopIfBroken(t)
			r := s.run(t, "sleep 30; echo late", map[string]any{"timeoutMs": 500})
			if r.isErr || r.reason() != "timeout" {
				t.Fatalf("%s: sleep 30 with 500 ms: want reason timeout: %v", name, r)
			}
			s.timeouts-- // meant
			cmd, _ = markerCmd(row.lang, tag, 3)
			r = s.run(t, cmd, map[string]any{"interrupt": true})
			if strings.Contains(r.output(), "late") || strings.Contains(r.msg, "BUSY") {
				t.Errorf("%s: interrupt: the earlier command's output or a BUSY: %v", name, r)
			}
			if checkMarker(t, name+" interrupt after a timed-out sleep", r, tag, 3) {
				checkExit(t, name+" interrupt after a timed-out sleep", r, 0, row.integrated)
			}
			s.stopIfBroken(t)
			// No ^C or stale prompt left for the next command.
			cmd, _ = markerCmd(row.lang, tag, 4)
			if r := s.run(t, cmd, nil); checkMarker(t, name+" after the interrupt", r, tag, 4) {
				checkExit(t, name+" after the interrupt", r, 0, row.integrated)
			}
		})
	}
}

// DONE-4: a command that ends the shell (or REPL): reason exit and the
// process's exit status, with or without integration.
func TestDoneExit(t *testing.T) {
	for _, name := range []string{"bash", "zsh", "sh", "dash", "busybox-sh", "bash-norc", "python3"} {
		t.Run(name, func(t *testing.T) {
			doneSlot(t)
			row := rowNamed(t, name)
			s := row.open(t, name)
			ready(t, s, row, newTag(name), 1)
			cmd := "echo bye; exit 3"
			if row.lang == langPython {
				cmd = `print("bye"); raise SystemExit(3)`
			}
			r := s.run(t, cmd, nil)
			if r.isErr || r.reason() != "exit" || !strings.Contains(r.output(), "bye") {
				t.Errorf("%s: %q: want reason exit, bye in the output: %v", name, cmd, r)
			}
			if v, ok := r.res["exitCode"]; !ok || v != 3.0 {
				t.Errorf("%s: %q: exitCode %v (present %v), want 3 (the process's exit status): %v", name, cmd, v, ok, r)
			}
		})
	}
}

// DONE-5: a program prints terminal queries (DA1, DA2, DSR, the window
// size) and exits before the replies come; the next commands' outputs
// are exactly their own (no 62;22c, 1;10;0c, R, t).
func TestDoneQueryReplies(t *testing.T) {
	const queries = `/usr/bin/printf '\033[c\033[>c\033[6n\033[18t'`
	for _, name := range []string{"bash", "telnet-busybox-bash"} {
		t.Run(name, func(t *testing.T) {
			doneSlot(t)
			if _, err := os.Stat("/usr/bin/printf"); err != nil {
				testutil.SkipUnlessCI(t, "no /usr/bin/printf")
			}
			row := rowNamed(t, name)
			s := row.open(t, name)
			tag := newTag(name)
			ready(t, s, row, tag, 1)
			replies := []string{"62;", "1;10;0c", ";80t"}
			r := s.run(t, queries, nil)
			if r.isErr || !okEnd(r.reason()) {
				t.Errorf("%s: the queries: %v", name, r)
			}
			for _, junk := range replies {
				if strings.Contains(r.output(), junk) {
					t.Errorf("%s: the queries' own output holds a reply (%q; it prints only escape sequences): %v", name, junk, r)
					break
				}
			}
			s.stopIfBroken(t)
			for i := 2; i <= 3; i++ {
				cmd, _ := markerCmd(row.lang, tag, i)
				m := s.run(t, cmd, nil)
				for _, junk := range replies {
					if strings.Contains(m.output(), junk) {
						t.Errorf("%s: a query reply (%q) typed into the shell: %v", name, junk, m)
					}
				}
				if checkMarker(t, fmt.Sprintf("%s marker %d after the queries", name, i), m, tag, i) {
					checkExit(t, name+" after the queries", m, 0, row.integrated)
				}
				s.stopIfBroken(t)
			}
		})
	}
}

// DONE-1 and DONE-4 at the start, many times: the first command sent at
// once after launch_app, on fresh sessions of each shell with
// integration, is its own marker with exitCode 0 (issue 32 saw bash
// return its first prompt, then every output shifted by one, in 1 launch
// of 12).
func TestDoneFirstCommand(t *testing.T) {
	const launches = 6
	for _, name := range []string{"bash", "zsh", "sh", "dash"} {
		t.Run(name, func(t *testing.T) {
			doneSlot(t)
			path := testutil.NeedProgram(t, name)
			h := startHost(t)
			broken := 0
			for n := 1; n <= launches; n++ {
				label := fmt.Sprintf("%s launch %d", name, n)
				s := launch(t, h, label, nil, path)
				tag := newTag(name)
				for i := 1; i <= 2; i++ {
					cmd, _ := markerCmd(langShell, tag, i)
					r := s.run(t, cmd, nil)
					if checkMarker(t, fmt.Sprintf("%s %q", label, cmd), r, tag, i) {
						checkExit(t, fmt.Sprintf("%s %q", label, cmd), r, 0, true)
					}
				}
				broken += s.timeouts
				if broken >= 2 {
					t.Fatalf("%s: %d calls ended in reason timeout; stopping", name, broken)
				}
				if c := h.call(20*time.Second, "stop_app", map[string]any{"session_id": s.id}); c.isErr {
					t.Errorf("stop_app: %v", c)
				}
			}
		})
	}
}

// TestDoneBusy (DONE-3): a call whose own timeout ends while an earlier
// command that timed out still runs sends nothing and says BUSY, naming
// that command; a call made while another call runs a command on the same
// session waits for it, or says BUSY at its timeout. Nothing the refused
// calls carried ever runs, and the late output reaches only previous.
func TestDoneBusy(t *testing.T) {
	row, s, tag := openReady(t, "bash", "busy")
	const slow = "sleep 3; echo late"
	if r := s.run(t, slow, map[string]any{"timeoutMs": 300}); r.isErr || r.reason() != "timeout" {
		t.Fatalf("%q with 300 ms: want reason timeout: %v", slow, r)
	}
	s.timeouts--
	r := s.run(t, "echo refused-$((6*7))", map[string]any{"timeoutMs": 500})
	if !r.isErr || !strings.HasPrefix(r.msg, "BUSY: ") || !strings.Contains(r.msg, slow) {
		t.Fatalf("a call with 500 ms while %q runs: want a BUSY error naming it: %v", slow, r)
	}
	// Two calls at once: one waits for the other (either order).
	second := make(chan doneRes, 1)
	first := make(chan doneRes, 1)
	go func() { first <- s.run(t, "echo first-$((1+1))", map[string]any{"timeoutMs": 10000}) }()
	go func() { second <- s.run(t, "echo second-$((2+1))", map[string]any{"timeoutMs": 10000}) }()
	a, b := <-first, <-second
	for _, x := range []doneRes{a, b} {
		if x.isErr || !okEnd(x.reason()) {
			t.Fatalf("concurrent calls: %v", x)
		}
	}
	outs := a.output() + "|" + b.output()
	if outs != "first-2\n|second-3\n" {
		t.Errorf("concurrent calls' outputs %q: want each its own", outs)
	}
	// The late output went to previous, exactly once, and the refused
	// command never ran.
	var prev map[string]any
	for _, x := range []doneRes{a, b} {
		if p, ok := x.res["previous"].(map[string]any); ok {
			if prev != nil {
				t.Errorf("two calls report the earlier command's end")
			}
			prev = p
		}
	}
	checkPrevious(t, prev, slow, "late\n")
	cmd, _ := markerCmd(row.lang, tag, 2)
	if m := s.run(t, cmd, nil); checkMarker(t, "after", m, tag, 2) {
		checkExit(t, "after", m, 0, row.integrated)
	}
	if scr := s.h.view(s.id); strings.Contains(scr, "refused") {
		t.Errorf("the refused command was typed: %s", scr)
	}
}

// TestDoneCancelled (DONE-3): a run_command the client cancels while it
// waits (notifications/cancelled) has still sent its command: the next
// call waits for that command's end and returns it as previous, never as
// its own output.
func TestDoneCancelled(t *testing.T) {
	_, s, _ := openReady(t, "bash", "cancelled")
	const slow = "sleep 1; echo late"
	if r := s.h.call(300*time.Millisecond, "run_command", map[string]any{"sessionId": s.id, "command": slow, "timeoutMs": 10000}); !r.isErr {
		t.Fatalf("%q cancelled after 300 ms answered: %v", slow, r)
	}
	r := s.run(t, "echo after-$((2*3))", nil)
	if r.isErr || !okEnd(r.reason()) || r.output() != "after-6\n" {
		t.Fatalf("the call after a cancelled one: want output \"after-6\\n\" alone: %v", r)
	}
	prev, _ := r.res["previous"].(map[string]any)
	checkPrevious(t, prev, slow, "late\n")
}

// openReady opens the named row's session (after a slot is free) and runs
// its first marker command: the session is at its prompt.
func openReady(t *testing.T, name, label string) (doneRow, *doneSess, string) {
	t.Helper()
	doneSlot(t)
	row := rowNamed(t, name)
	s := row.open(t, label)
	tag := newTag(label)
	ready(t, s, row, tag, 1)
	return row, s, tag
}

// checkPrevious checks the previous a call returned: the command that had
// timed out (or was cancelled) and its output.
func checkPrevious(t *testing.T, prev map[string]any, command, output string) {
	t.Helper()
	if prev == nil || prev["command"] != command || prev["output"] != output {
		t.Errorf("previous: %v, want %q with output %q", prev, command, output)
	}
}
