package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// Issue 16 items 11-13: command rules that hold against a hijacked agent.

// TestRulesSurviveTheirFile: deleting or renaming rules.json while the
// server runs keeps the last good rules, with a WARN each time.
func TestRulesSurviveTheirFile(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.json")
	write := func() {
		if err := os.WriteFile(rules, []byte(`{"deny": ["\\bmkdir\\b"]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write()
	cs, logs := startServeLogs(t, "--rules", rules, "--credentials", filepath.Join(dir, "none.json"),
		"--known-hosts", filepath.Join(dir, "kh"), "--no-user-known-hosts")
	isBlocked := func(command string) bool {
		_, msg, isErr := call(t, cs, "ssh_execute", map[string]any{"credentialId": "any", "command": command})
		return isErr && strings.Contains(msg, "blocked by rules.json")
	}
	if !isBlocked("mkdir /tmp/x") {
		t.Fatal("mkdir is not blocked to begin with")
	}
	for _, c := range []struct {
		name string
		gone func() error
	}{
		{"removed", func() error { return os.Remove(rules) }},
		{"renamed away", func() error { return os.Rename(rules, rules+".old") }},
	} {
		warns := strings.Count(logs.String(), "rules not reloaded")
		if err := c.gone(); err != nil {
			t.Fatal(err)
		}
		if !testutil.Poll(10*time.Second, func() bool { return strings.Count(logs.String(), "rules not reloaded") > warns }) {
			t.Errorf("%s: no warning that the rules file is gone; log:\n%s", c.name, logs.String())
		}
		if !isBlocked("mkdir /tmp/x") {
			t.Errorf("%s: mkdir went from blocked to allowed", c.name)
		}
		reloads := strings.Count(logs.String(), "rules reloaded")
		write()
		testutil.Poll(10*time.Second, func() bool { return strings.Count(logs.String(), "rules reloaded") > reloads })
	}
}

// TestRulesMissingAtStart: a rules file named explicitly must exist; the
// default one may be absent.
func TestRulesMissingAtStart(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	for _, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"--rules", []string{"--rules", missing}, nil},
		{"RULES_FILE", nil, []string{"RULES_FILE=" + missing}},
	} {
		cmd := exec.Command(binary, append([]string{"serve", "--cache-dir", cacheDir(), "--credentials", filepath.Join(dir, "none.json")}, c.args...)...)
		cmd.Env = append(os.Environ(), c.env...)
		cmd.Stdin = strings.NewReader("")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "does not exist") || !strings.Contains(string(out), missing) {
			t.Errorf("%s naming a missing file: err %v, output %q", c.name, err, out)
		}
	}
	// A broken file is refused at start too.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"deny": ["("]}`), 0o644)
	out, err := exec.Command(binary, "serve", "--cache-dir", cacheDir(), "--rules", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "deny[0]") {
		t.Errorf("a broken rules file at start: err %v, output %q", err, out)
	}
	// The default ./rules.json may be absent: said once at INFO.
	cmd := exec.Command(binary, "serve", "--cache-dir", cacheDir(), "--credentials", filepath.Join(dir, "none.json"), "--log-level", "info")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("")
	out, err = cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "no rules file") != 1 {
		t.Errorf("no ./rules.json: err %v, output %q", err, out)
	}
}

// useExampleRules replaces the fixture's rules with rules.example.json
// plus touch denied in the example's style (the setup).
func useExampleRules(t *testing.T, f *sshFixture) {
	t.Helper()
	data, err := os.ReadFile("../../rules.example.json")
	if err != nil {
		t.Fatal(err)
	}
	var r map[string][]string
	json.Unmarshal(data, &r)
	r["deny"] = append(r["deny"], `(^|[;&|]\s*)(sudo\s+)?touch\b`)
	data, _ = json.Marshal(r)
	reloads := strings.Count(f.logs.String(), "rules reloaded")
	os.WriteFile(f.rules, data, 0o644)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Count(f.logs.String(), "rules reloaded") > reloads }) {
		t.Fatal("the new rules were not loaded")
	}
}

// TestRulesShellSpellingsOverSSH: the spellings of touch that a shell
// runs are refused by ssh_execute against a real sshd, and nothing is
// created; ordinary commands still run.
func TestRulesShellSpellingsOverSSH(t *testing.T) {
	f := newSSHFixture(t)
	useExampleRules(t, f)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	spellings := []string{
		"  touch %s", "\ttouch %s", "true\ntouch %s", "echo $(touch %s)", "echo `touch %s`",
		"/usr/bin/touch %s", "X=1 touch %s", "env touch %s", "t\\ouch %s", "'touch' %s", "\"to\"uch %s",
		"(touch %s)", "{ touch %s; }", "if true; then touch %s; fi", "exec touch %s", "command touch %s",
		"echo %s | xargs touch", "bash -c 'touch %s'", "sh -c \"touch %s\"", "nohup touch %s", "timeout 5 touch %s",
	}
	for i, sp := range spellings {
		cmd := fmt.Sprintf(sp, filepath.Join(dir, fmt.Sprint("f", i)))
		_, err := f.call(t, "ssh_execute", map[string]any{"credentialId": "key", "command": cmd})
		if err == nil || err.Code != -32003 {
			t.Errorf("%q was not refused (%v)", cmd, err)
		}
	}
	// An ordinary command runs, after them on the same server: anything
	// they had run would have made its file by the time it answers.
	res := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo touch me | grep -c touch && ls " + dir})
	if res["exitCode"] != 0.0 || !strings.Contains(res["stdout"].(string), "1") {
		t.Errorf("an ordinary command: %v", res)
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("files were created: %v", left)
	}
}

// TestRulesShellScreenLine: ssh_shell checks the line the screen shows
// when Enter is pressed, so line editing and history cannot hide a denied
// command, and a line longer than the bound is refused whole.
func TestRulesShellScreenLine(t *testing.T) {
	f := newSSHFixture(t)
	useExampleRules(t, f)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	res := f.mustCall(t, "ssh_shell", map[string]any{"credentialId": "key", "cols": 80, "rows": 24})
	id, _ := res["session_id"].(string)
	h := &hostProc{t: t, cs: f.cs}
	keys := func(args map[string]any) (string, bool) {
		args["session_id"] = id
		_, msg, isErr := call(t, f.cs, "send_keys", args)
		return msg, isErr
	}
	// bash with readline (the test user's /bin/sh has no line editing).
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "exec bash --norc --noprofile\n"})
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "PS1='rl$ '; echo ready-$((6*7))\n"})
	h.screenHas(id, "ready-42")
	refused := func(what string, steps ...map[string]any) {
		t.Helper()
		var msg string
		var isErr bool
		for _, s := range steps {
			if msg, isErr = keys(s); isErr {
				break
			}
		}
		if !isErr || !strings.Contains(msg, "rules.json") && !strings.Contains(msg, "cannot be checked") {
			t.Errorf("%s: not refused (%v %s)", what, isErr, msg)
		}
		keys(map[string]any{"keys": []any{"C-e", "C-u"}})
	}
	// Typed as "ouch FILE", Home (or C-a), "t", Enter.
	for i, home := range []string{"Home", "C-a"} {
		file := filepath.Join(dir, fmt.Sprint("edit", i))
		refused(home, map[string]any{"text": "ouch " + file}, map[string]any{"keys": []any{home}},
			map[string]any{"text": "t"}, map[string]any{"keys": []any{"Enter"}})
	}
	// From history: ": touch FILE" is harmless; Up, C-a, C-d, C-d makes
	// it "touch FILE", which only the screen shows.
	hist := filepath.Join(dir, "history")
	if msg, isErr := keys(map[string]any{"text": ": touch " + hist + "\r"}); isErr {
		t.Fatalf("a harmless line: %s", msg)
	}
	refused("history", map[string]any{"keys": []any{"Up", "C-a", "C-d", "C-d"}}, map[string]any{"keys": []any{"Enter"}})
	// The same keys typed ahead while a command runs: the screen cannot
	// show what the line editor will make of them, so Enter is refused.
	if msg, isErr := keys(map[string]any{"text": "sleep 2\r"}); isErr {
		t.Fatalf("sleep: %s", msg)
	}
	refused("typed ahead", map[string]any{"keys": []any{"Up", "C-a", "C-d", "C-d"}}, map[string]any{"keys": []any{"Enter"}})
	// Once sleep has ended and bash has taken the keys typed ahead, the
	// line is cleared and the cursor row shows the bare prompt again.
	waitGone(t, f.srv, "sleep 2")
	keys(map[string]any{"keys": []any{"C-e", "C-u"}})
	if r := h.call(20*time.Second, "wait_for", map[string]any{"session_id": id, "until": `rl\$ $`, "onScreen": true, "timeoutMs": 15000}); r.isErr || r.res["reason"] != "matched" {
		t.Fatalf("the prompt did not come back after sleep 2: %v\n%s", r, h.view(id))
	}
	// A shell moved onto the alternate screen is still checked.
	alt := filepath.Join(dir, "alt")
	for _, line := range []string{"printf '\\033[?1049h'\r", ": touch " + alt + "\r"} {
		if msg, isErr := keys(map[string]any{"text": line}); isErr {
			t.Fatalf("%q: %s", line, msg)
		}
	}
	refused("alternate screen", map[string]any{"keys": []any{"Up", "C-a", "C-d", "C-d"}}, map[string]any{"keys": []any{"Enter"}})
	keys(map[string]any{"text": "printf '\\033[?1049l'\r"})
	// C-o runs the line in bash as Enter does.
	refused("C-o", map[string]any{"text": "touch " + filepath.Join(dir, "ctl-o")}, map[string]any{"keys": []any{"C-o"}})
	// A secret's Enter would run the line typed before it.
	if f.srv.Password != "" {
		keys(map[string]any{"text": "touch " + filepath.Join(dir, "before-secret") + " "})
		_, msg, isErr := call(t, f.cs, "send_secret", map[string]any{"sessionId": id, "credentialId": "pw", "field": "password"})
		if !isErr || !strings.Contains(msg, "rules.json") {
			t.Errorf("send_secret after a denied line: %v %s", isErr, msg)
		}
		keys(map[string]any{"keys": []any{"C-e", "C-u"}})
	}
	// More than 16 KiB with the denied word at the start.
	long := filepath.Join(dir, "long")
	refused("long line", map[string]any{"text": "touch " + long + " #" + strings.Repeat("x", 17<<10) + "\r"})
	// The shell still works, and nothing was created.
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo done-$((7*6))\n"})
	h.screenHas(id, "done-42")
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("files were created: %v", left)
	}
}
