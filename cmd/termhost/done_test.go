package main

// SPEC §12 "Done, exactly" (DONE-1..5, issue 32): run_command over real
// programs, end to end through the built binary. TestDoneRows is the
// table: every way to open a session (launch_app of each shell and REPL,
// python inside bash, Telnet to BusyBox and inetutils telnetd, ssh_shell
// to OpenSSH, the device simulator), each followed at once — no wait_for —
// by commands that print unique markers; every command's output must be
// exactly its own marker (no other marker, no echo, no prompt), its end a
// prompt (reason prompt or done, never timeout), and its exitCode right:
// present on every command of a shell with integration (the first one
// included), and where the program cannot tell, absent — never wrong.
// done_cases_test.go holds DONE-1 (slow rc: not_ready), DONE-3 (a timed
// out command: wait with previous, or BUSY; interrupt), DONE-4 (exit 3)
// and DONE-5 (late terminal-query replies); done_frr_test.go a real
// FRRouting's pager at 40, 80 and 250 columns.
//
// Every call has timeoutMs 10000 (a broken end shows as reason timeout
// after 10 s, not a hung suite); a row stops after two timeouts. Each
// call's wall time is logged (go test -v) for end-detection latency;
// timings are never asserted. Rows run in parallel, at most doneParallel
// at a time (the shared machine has two cores).

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/sshdtest"
	"github.com/termhost/termhost/internal/testutil"
)

// doneTimeoutMs is every call's timeoutMs unless a test says otherwise.
const doneTimeoutMs = 10000

// doneParallel bounds the rows running at once over the whole package.
const doneParallel = 3

var doneSlots = make(chan struct{}, doneParallel)

// doneSlot makes a leaf test parallel and holds one of the slots until it
// ends. Only leaves take slots (a parent holding one while its subtests
// wait for one could deadlock).
func doneSlot(t *testing.T) {
	t.Parallel()
	doneSlots <- struct{}{}
	t.Cleanup(func() { <-doneSlots })
}

// doneRes is one run_command call: its result, or the tool error.
type doneRes struct {
	res   map[string]any
	msg   string
	isErr bool
	took  time.Duration
}

func (r doneRes) output() string { s, _ := r.res["output"].(string); return s }
func (r doneRes) reason() string { s, _ := r.res["reason"].(string); return s }

func (r doneRes) String() string {
	if r.isErr {
		return fmt.Sprintf("tool error after %v: %s", r.took.Round(time.Millisecond), clip(r.msg))
	}
	ec := "none"
	if v, ok := r.res["exitCode"]; ok {
		ec = fmt.Sprint(v)
	}
	s := fmt.Sprintf("reason %s, exitCode %s, output %q after %v", r.reason(), ec, clip(r.output()), r.took.Round(time.Millisecond))
	if p, ok := r.res["previous"]; ok {
		s += fmt.Sprintf(", previous %s", fmtJSON(p))
	}
	if p, ok := r.res["prompt"]; ok {
		s += fmt.Sprintf(", prompt %q", p)
	}
	return s
}

// doneSess is one open session of a done test.
type doneSess struct {
	h        *hostProc
	id       string
	label    string
	timeouts int  // calls that ended in reason timeout
	snake    bool // name the session session_id (also accepted)
}

// run calls run_command with the command and extra arguments (timeoutMs
// defaults to doneTimeoutMs), logging what came back and how long it took.
// It asserts nothing (FRR's width subtests share a host).
func (s *doneSess) run(t *testing.T, cmd string, extra map[string]any) doneRes {
	t.Helper()
	args := map[string]any{"sessionId": s.id, "command": cmd, "timeoutMs": doneTimeoutMs}
	for k, v := range extra {
		args[k] = v
	}
	if s.snake {
		args["session_id"] = s.id
		delete(args, "sessionId")
	}
	ms, _ := args["timeoutMs"].(int)
	c := s.h.call(time.Duration(ms)*time.Millisecond+20*time.Second, "run_command", args)
	r := doneRes{res: c.res, msg: c.msg, isErr: c.isErr, took: c.took}
	if c.expired {
		r.msg = "no answer from the server: " + r.msg
	}
	t.Logf("%s: run_command %q %v → %v", s.label, cmd, extraText(extra), r)
	if !r.isErr && r.reason() == "timeout" {
		s.timeouts++
	}
	return r
}

func extraText(extra map[string]any) string {
	if len(extra) == 0 {
		return ""
	}
	return fmtJSON(extra)
}

// stopIfBroken ends the test once two calls timed out: the end detection
// does not work on this row, and every further call would cost its whole
// timeout.
func (s *doneSess) stopIfBroken(t *testing.T) {
	t.Helper()
	if s.timeouts >= 2 {
		t.Fatalf("%s: %d calls ended in reason timeout; the row stops here", s.label, s.timeouts)
	}
}

// doneLang is how a row's program prints a marker.
type doneLang int

const (
	langShell  doneLang = iota // echo M-tag-$((i-1+1)): the command text is not the output
	langPython                 // print("M-tag-" + str(i-1+1))
	langSQLite                 // select 'M-tag-' || (i-1+1);
	langDevice                 // echo M-tag-i (a device's echo prints its text)
)

// markerCmd is the command printing the i-th marker of tag, and the marker.
func markerCmd(lang doneLang, tag string, i int) (cmd, marker string) {
	return markerCmdAs(lang, tag, i, plain)
}

// markerStyle is how a marker command runs.
type markerStyle int

const (
	plain markerStyle = iota
	// slow: it prints after a second, while the prompt it was typed at
	// is still on the screen (which must not end it; shells and python).
	slow
	// noNewline: the output ends without a newline, the next prompt on
	// its line (shells only).
	noNewline
)

// markerCmdAs is markerCmd in a style.
func markerCmdAs(lang doneLang, tag string, i int, style markerStyle) (cmd, marker string) {
	marker = fmt.Sprintf("M-%s-%d", tag, i)
	switch lang {
	case langPython:
		cmd = fmt.Sprintf(`print("M-%s-" + str(%d+1))`, tag, i-1)
		if style == slow {
			cmd = "import time; time.sleep(1); " + cmd
		}
	case langSQLite:
		cmd = fmt.Sprintf(`select 'M-%s-' || (%d+1);`, tag, i-1)
	case langDevice:
		cmd = "echo " + marker
	default:
		cmd = fmt.Sprintf("echo M-%s-$((%d+1))", tag, i-1)
		switch style {
		case slow:
			cmd = "sleep 1; " + cmd
		case noNewline:
			cmd = fmt.Sprintf("printf 'M-%s-%%d' $((%d+1))", tag, i-1)
		}
	}
	return cmd, marker
}

// newTag is a marker tag unique to a row and a run.
func newTag(name string) string {
	return fmt.Sprintf("%s%04x", strings.NewReplacer("-", "", "_", "").Replace(name)[:min(4, len(name))], rand.IntN(1<<16))
}

// okEnd says whether reason is a command's end at a prompt.
func okEnd(reason string) bool { return reason == "prompt" || reason == "done" }

// checkMarker checks that r is the i-th marker command's own result: no
// tool error, ended at a prompt, output exactly the marker and a newline
// (so no other marker, no echo, no prompt).
func checkMarker(t *testing.T, label string, r doneRes, tag string, i int) bool {
	t.Helper()
	return checkMarkerAs(t, label, r, tag, i, plain)
}

// checkMarkerAs is checkMarker for a marker command of a style: without a
// newline, the output is the marker with or without one.
func checkMarkerAs(t *testing.T, label string, r doneRes, tag string, i int, style markerStyle) bool {
	t.Helper()
	want := fmt.Sprintf("M-%s-%d", tag, i)
	switch {
	case style == noNewline && r.output() == want && okEnd(r.reason()):
		return true
	case r.isErr:
		t.Errorf("%s: marker %d: %v", label, i, r)
		return false
	case !okEnd(r.reason()):
		t.Errorf("%s: marker %d: did not end at a prompt: %v", label, i, r)
		return false
	case r.output() != want+"\n":
		var others []string
		for j := 0; j < 40; j++ {
			if m := fmt.Sprintf("M-%s-%d", tag, j); j != i && (strings.Contains(r.output(), m+"\n") || strings.HasSuffix(r.output(), m)) {
				others = append(others, m)
			}
		}
		what := "not exactly its own marker"
		if len(others) > 0 {
			what = fmt.Sprintf("holds other commands' markers %v", others)
		} else if !strings.Contains(r.output(), want) {
			what = "lacks its marker"
		}
		wantText := fmt.Sprintf("%q", want+"\n")
		if style == noNewline {
			wantText = fmt.Sprintf("%q (a newline after it or not)", want)
		}
		t.Errorf("%s: marker %d: output %s; want %s: %v", label, i, what, wantText, r)
		return false
	}
	return true
}

// checkExit checks exitCode: a shell with integration gives it always
// (want); elsewhere it is absent, and never wrong.
func checkExit(t *testing.T, label string, r doneRes, want int, integrated bool) {
	t.Helper()
	if r.isErr || r.res == nil {
		return
	}
	v, ok := r.res["exitCode"]
	switch {
	case integrated && !ok:
		t.Errorf("%s: no exitCode (want %d): %v", label, want, r)
	case ok && v != float64(want):
		t.Errorf("%s: exitCode %v, want %d (absent where unknown, never wrong): %v", label, v, want, r)
	case !integrated && ok:
		t.Logf("%s: note: exitCode %v where the contract expects none (right, so accepted)", label, v)
	}
}

// doneHome is a HOME of the test's own, so the user's start-up files
// (root's ~/.bashrc runs pyenv init here) stay out; zsh gets an empty
// .zshrc so no first-run wizard can start.
func doneHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".zshrc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// launch opens a PTY session of command with args under a HOME of the
// test's own (env adds to it) and returns the session.
func launch(t *testing.T, h *hostProc, label string, env map[string]string, command string, args ...string) *doneSess {
	t.Helper()
	e := map[string]string{"HOME": doneHome(t)}
	for k, v := range env {
		e[k] = v
	}
	a := map[string]any{"command": command, "env": e}
	if len(args) > 0 {
		a["args"] = args
	}
	c := h.call(30*time.Second, "launch_app", a)
	if c.isErr {
		t.Fatalf("launch_app %s %v: %v", command, args, c)
	}
	return &doneSess{h: h, id: c.res["session_id"].(string), label: label}
}

// pythonPath is a python3 that is not a pyenv shim (the shim runs pyenv
// first, whose locks and start-up are not what is tested).
func pythonPath(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return testutil.NeedProgram(t, "python3")
}

// needBusyboxSh skips without BusyBox's sh applet.
func needBusyboxSh(t *testing.T) string {
	t.Helper()
	bb := testutil.NeedProgram(t, "busybox")
	if out, err := exec.Command(bb, "--list").Output(); err != nil || !strings.Contains("\n"+string(out), "\nsh\n") {
		testutil.SkipUnlessCI(t, "busybox has no sh applet")
	}
	return bb
}

// telnetShell opens a Telnet session (no options: no wait, no dialect
// named) to a shell port.
func telnetShell(t *testing.T, h *hostProc, label string, port int) *doneSess {
	t.Helper()
	c := h.call(30*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})
	if c.isErr {
		t.Fatalf("telnet_connect: %v", c)
	}
	return &doneSess{h: h, id: c.res["sessionId"].(string), label: label}
}

// busyboxShellPort starts BusyBox telnetd with login as its login
// program (no login dialogue) under home, and returns its port.
func busyboxShellPort(t *testing.T, login, home string) int {
	t.Helper()
	requireTool(t, "/bin/busybox", "--list")
	return busyboxTelnetd(t, login, "HOME="+home)
}

// inetutilsShellPort starts inetutils telnetd (inetd style) running
// /bin/sh without a login dialogue, and returns its port.
func inetutilsShellPort(t *testing.T, home string) int {
	t.Helper()
	requireTool(t, "/usr/sbin/telnetd")
	d, err := devsim.ListenInetd("127.0.0.1:0", []string{"/usr/sbin/telnetd", "-h", "-E", "/bin/sh"}, []string{"PATH=/usr/bin:/bin", "HOME=" + home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return portOf(t, d.Addr())
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(addr[strings.LastIndexByte(addr, ':')+1:], "%d", &port); err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return port
}

// sshHost starts OpenSSH (sshdtest: as root, the throwaway user whose
// shell is /bin/sh, dash) and a termhost with a key credential "sh" for
// it.
func sshHost(t *testing.T) *hostProc {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	key := srv.KeyPair("id_done", "ed25519", "")
	srv.AuthorizeKey(key)
	dir := t.TempDir()
	creds, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": []map[string]any{
		{"id": "sh", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "key", "privateKeyPath": key},
	}})
	credFile := filepath.Join(dir, "credentials.json")
	if err := os.WriteFile(credFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(rules, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startHost(t, "--credentials", credFile, "--rules", rules, "--known-hosts", filepath.Join(dir, "known_hosts"), "--no-user-known-hosts")
}

// sshShell opens ssh_shell with the "sh" credential (no dialect named).
func sshShell(t *testing.T, h *hostProc, label string) *doneSess {
	t.Helper()
	c := h.call(30*time.Second, "ssh_shell", map[string]any{"credentialId": "sh"})
	if c.isErr {
		t.Fatalf("ssh_shell: %v", c)
	}
	return &doneSess{h: h, id: c.res["session_id"].(string), label: label, snake: true}
}

// doneRow is one way to open a session.
type doneRow struct {
	name string
	// open starts the peer and the session (skipping when a program is
	// missing).
	open       func(t *testing.T, label string) *doneSess
	lang       doneLang
	integrated bool // a shell with integration: exitCode always
	fails      bool // run `sh -c 'exit 7'`: exitCode 7 (or absent without integration)
	// custom, when set, replaces the marker sequence (python in bash).
	custom func(t *testing.T, s *doneSess, tag string)
}

// launchRow is a row opening command with args by launch_app.
func launchRow(name string, lang doneLang, integrated bool, command string, args ...string) doneRow {
	return doneRow{
		name: name, lang: lang, integrated: integrated, fails: lang == langShell,
		open: func(t *testing.T, label string) *doneSess {
			var path string
			switch command {
			case "busybox":
				path = needBusyboxSh(t)
			case "python3":
				path = pythonPath(t)
			case "sqlite3":
				// Only if present, even under CI (.ci/run does not
				// install it).
				p, err := exec.LookPath(command)
				if err != nil {
					t.Skip("sqlite3 is not installed")
				}
				path = p
			default:
				path = testutil.NeedProgram(t, command)
			}
			return launch(t, startHost(t), label, nil, path, args...)
		},
	}
}

func doneRows() []doneRow {
	return []doneRow{
		launchRow("bash", langShell, true, "bash"),
		launchRow("zsh", langShell, true, "zsh"),
		launchRow("sh", langShell, true, "sh"),
		launchRow("dash", langShell, true, "dash"),
		launchRow("busybox-sh", langShell, true, "busybox", "sh"),
		launchRow("bash-norc", langShell, false, "bash", "--norc"),
		launchRow("python3", langPython, false, "python3", "-q"),
		launchRow("sqlite3", langSQLite, false, "sqlite3"),
		{name: "python-in-bash", lang: langShell, integrated: true,
			open: func(t *testing.T, label string) *doneSess {
				return launch(t, startHost(t), label, nil, testutil.NeedProgram(t, "bash"))
			},
			custom: pythonInBash},
		{name: "telnet-busybox-bash", lang: langShell, fails: true,
			open: func(t *testing.T, label string) *doneSess {
				return telnetShell(t, startHost(t), label, busyboxShellPort(t, testutil.NeedProgram(t, "bash"), doneHome(t)))
			}},
		{name: "telnet-busybox-sh", lang: langShell, fails: true,
			open: func(t *testing.T, label string) *doneSess {
				return telnetShell(t, startHost(t), label, busyboxShellPort(t, "/bin/sh", doneHome(t)))
			}},
		{name: "telnet-inetutils-sh", lang: langShell, fails: true,
			open: func(t *testing.T, label string) *doneSess {
				return telnetShell(t, startHost(t), label, inetutilsShellPort(t, doneHome(t)))
			}},
		{name: "ssh-sh", lang: langShell, fails: true,
			open: func(t *testing.T, label string) *doneSess { return sshShell(t, sshHost(t), label) }},
		{name: "devsim-ios", lang: langDevice,
			open: func(t *testing.T, label string) *doneSess {
				_, port := startDevsim(t, devsim.Config{NoLogin: true, NoColor: true})
				return telnetShell(t, startHost(t), label, port)
			}},
	}
}

// TestDoneRows: every way to open a session, commands sent at once, each
// output exactly its own marker, exit codes where the program has them
// (DONE-1, DONE-2, DONE-4).
func TestDoneRows(t *testing.T) {
	for _, row := range doneRows() {
		t.Run(row.name, func(t *testing.T) {
			doneSlot(t)
			s := row.open(t, row.name)
			tag := newTag(row.name)
			if row.custom != nil {
				row.custom(t, s, tag)
				return
			}
			i := 1
			marker := func(style markerStyle) {
				t.Helper()
				cmd, _ := markerCmdAs(row.lang, tag, i, style)
				r := s.run(t, cmd, nil)
				if checkMarkerAs(t, fmt.Sprintf("%s %q", row.name, cmd), r, tag, i, style) {
					checkExit(t, fmt.Sprintf("%s %q", row.name, cmd), r, 0, row.integrated)
				}
				i++
				s.stopIfBroken(t)
			}
			// The first command right after the open (DONE-1), then more;
			// one that prints after a second, while the prompt it was
			// typed at is on the screen; one whose output has no newline.
			marker(plain)
			marker(plain)
			if row.lang == langShell || row.lang == langPython {
				marker(slow)
			}
			if row.lang == langShell {
				marker(noNewline)
			}
			marker(plain)
			if row.fails {
				r := s.run(t, "sh -c 'exit 7'", nil)
				if r.isErr || !okEnd(r.reason()) || r.output() != "" {
					t.Errorf("%s: sh -c 'exit 7': want no output, ended at a prompt: %v", row.name, r)
				}
				checkExit(t, row.name+" sh -c 'exit 7'", r, 7, row.integrated)
				s.stopIfBroken(t)
				marker(plain)
			}
			if row.lang == langDevice {
				// A paged output: no pager prompt left, and the next
				// command clean.
				r := s.run(t, "show interfaces", nil)
				if r.isErr || !okEnd(r.reason()) || strings.Contains(r.output(), "More") || !strings.Contains(r.output(), "line protocol") {
					t.Errorf("%s: show interfaces: %v", row.name, r)
				}
				s.stopIfBroken(t)
				marker(plain)
			}
		})
	}
}

// pythonInBash: bash, python3 started in it (ends at python's prompt),
// python's prints, exit() back to bash (ends at bash's prompt), bash's
// commands again without python's echo and with their exit codes.
func pythonInBash(t *testing.T, s *doneSess, tag string) {
	py := pythonPath(t)
	i := 1
	marker := func(lang doneLang, integrated bool) {
		t.Helper()
		cmd, _ := markerCmd(lang, tag, i)
		r := s.run(t, cmd, nil)
		if checkMarker(t, fmt.Sprintf("%s %q", s.label, cmd), r, tag, i) {
			checkExit(t, fmt.Sprintf("%s %q", s.label, cmd), r, 0, integrated)
		}
		i++
		s.stopIfBroken(t)
	}
	marker(langShell, true)
	r := s.run(t, py+" -q", nil)
	if r.isErr || r.reason() != "prompt" || strings.Contains(r.output(), ">>>") || strings.Contains(r.output(), " -q") {
		t.Errorf("%s: %s -q: want reason prompt (python's), no prompt or echo in the output: %v", s.label, py, r)
	}
	if _, ok := r.res["exitCode"]; ok {
		t.Errorf("%s: %s -q ended at python's prompt, yet has an exitCode: %v", s.label, py, r)
	}
	s.stopIfBroken(t)
	marker(langPython, false)
	marker(langPython, false)
	r = s.run(t, "exit()", nil)
	if r.isErr || r.reason() != "prompt" || strings.Contains(r.output(), ">>>") || strings.Contains(r.output(), "exit()") {
		t.Errorf("%s: exit(): want reason prompt (bash's), no prompt or echo in the output: %v", s.label, r)
	}
	checkExit(t, s.label+" exit()", r, 0, false)
	s.stopIfBroken(t)
	// Back in bash: no python echo, exit codes again.
	marker(langShell, true)
	r = s.run(t, "sh -c 'exit 7'", nil)
	if r.isErr || !okEnd(r.reason()) || r.output() != "" {
		t.Errorf("%s: sh -c 'exit 7' after python: %v", s.label, r)
	}
	checkExit(t, s.label+" sh -c 'exit 7' after python", r, 7, true)
	s.stopIfBroken(t)
	marker(langShell, true)
}
