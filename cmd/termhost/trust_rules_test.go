package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		if !waitFor(10*time.Second, func() bool { return strings.Count(logs.String(), "rules not reloaded") > warns }) {
			t.Errorf("%s: no warning that the rules file is gone; log:\n%s", c.name, logs.String())
		}
		if !isBlocked("mkdir /tmp/x") {
			t.Errorf("%s: mkdir went from blocked to allowed", c.name)
		}
		reloads := strings.Count(logs.String(), "rules reloaded")
		write()
		waitFor(10*time.Second, func() bool { return strings.Count(logs.String(), "rules reloaded") > reloads })
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
