package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A rule may name the kinds of session it is for; without "kinds" it is
// for every kind, and an unknown kind of session gets every rule.
func TestRulesForKind(t *testing.T) {
	r := mustParse(t, `{"deny": ["^mkfs", {"pattern": "^touch\\b", "kinds": ["pty"]}, {"pattern": "^reload\\b", "kinds": ["telnet", "ssh"]}],
		"allow": [{"pattern": "^(show|touch|mkfs|reload)\\b", "kinds": ["telnet"]}]}`)
	for _, c := range []struct {
		kind, cmd string
		ok        bool
	}{
		{KindPTY, "touch x", false},
		{KindPTY, "mkfs.ext4 -V", false},
		{KindPTY, "reload", true},
		{KindPTY, "uname", true}, // the allow list is Telnet's
		{KindSSH, "touch x", true},
		{KindSSH, "reload", false},
		{KindSSH, "mkfs.ext4 -V", false},
		{KindTelnet, "show version", true},
		{KindTelnet, "uname", false},
		{KindTelnet, "reload", false},
		{"", "touch x", false},
		{"serial", "reload", false},
	} {
		err := r.For(c.kind).Check(c.cmd)
		if (err == nil) != c.ok {
			t.Errorf("For(%q).Check(%q) = %v, want ok=%v", c.kind, c.cmd, err, c.ok)
		}
	}
	// Unscoped rules are their own view.
	plain := mustParse(t, `{"deny": ["x"]}`)
	if plain.For(KindPTY) != plain {
		t.Error("rules without kinds are copied for a kind")
	}
}

func TestParseKindsErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"deny": [{"pattern": "x", "kinds": ["serial"]}]}`, `deny[0]: "kinds": "serial" is not a kind of session (expected ssh, telnet, pty)`},
		{`{"deny": [{"pattern": "x", "kinds": []}]}`, `deny[0]: "kinds" is empty`},
		{`{"allow": ["a", {"kinds": ["pty"]}]}`, `allow[1]: "pattern" is missing`},
		{`{"deny": [{"pattern": "x", "kind": ["pty"]}]}`, `deny[0]: expected a pattern`},
		{`{"deny": [{"pattern": ""}]}`, "deny[0]: an empty pattern"},
		{`{"deny": [{"pattern": "("}]}`, `deny[0] "(" is not a valid RE2 pattern`},
		{`{"deny": [3]}`, "deny[0]: expected a pattern"},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.in, err, c.want)
		}
	}
}

// A store's view for a kind follows the store's reloads.
func TestStoreViewReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	os.WriteFile(path, []byte(`{"deny": [{"pattern": "^touch", "kinds": ["ssh"]}]}`), 0o644)
	s, err := NewStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ssh, pty := s.For(KindSSH), s.For(KindPTY)
	if ssh.Check("touch x") == nil || pty.Check("touch x") != nil || s.Check("touch x") == nil {
		t.Fatal("views do not scope the rules")
	}
	os.WriteFile(path, []byte(`{"deny": [{"pattern": "^touch", "kinds": ["pty"]}]}`), 0o644)
	if err := ssh.Reload(); err != nil {
		t.Fatal(err)
	}
	if ssh.Check("touch x") != nil || pty.Check("touch x") == nil {
		t.Fatal("a view does not follow a reload")
	}
	os.WriteFile(path, []byte(`{"deny": [{"pattern": "^touch", "kinds": ["tty"]}]}`), 0o644)
	if err := s.Reload(); err == nil || pty.Err() == nil || pty.Check("touch x") == nil {
		t.Fatalf("a bad file: %v; the view's last good rules must stay", err)
	}
	if pty.Watch() != nil || pty.Close() != nil || pty.Path() != path {
		t.Error("a view's Watch, Close or Path")
	}
}

// Variables a shell runs, or expands with command substitutions, at each
// prompt are code, as is complete -C's command.
func TestPromptVariablesAreCode(t *testing.T) {
	r := mustParse(t, `{"deny": ["^touch\\b"]}`)
	for _, line := range []string{
		"PROMPT_COMMAND='touch x'",
		"PROMPT_COMMAND=('true' 'touch x')",
		"export PROMPT_COMMAND='touch x'",
		"declare -x PS1='$(touch x) $ '",
		"PS0='`touch x`'",
		"PS1=\"\\$(touch x)\"",
		"env PS1='$(touch x)' bash",
		"complete -C 'touch x' ls",
		"PS1=$X",
	} {
		if err := r.Check(line); err == nil {
			t.Errorf("%q passed", line)
		}
	}
	for _, line := range []string{"PS1='\\u@\\h:\\w\\$ '", "PROMPT_COMMAND='history -a'", "X='touch x'", "complete -F _ls ls"} {
		if err := r.Check(line); err != nil {
			t.Errorf("%q: %v", line, err)
		}
	}
}

// The program a session starts, with its arguments quoted, and the prompt
// code its environment gives a shell.
func TestCheckProgram(t *testing.T) {
	r := mustParse(t, `{"deny": ["^touch\\b", "^mkfs"]}`)
	for _, c := range []struct {
		cmd  string
		args []string
		env  map[string]string
	}{
		{"touch", []string{"/tmp/x"}, nil},
		{"/usr/bin/touch", []string{"x"}, nil},
		{"/usr/bin/env", []string{"touch", "x"}, nil},
		{"sh", []string{"-c", "touch /tmp/x"}, nil},
		{"bash", nil, map[string]string{"PROMPT_COMMAND": "touch x"}},
		{"bash", nil, map[string]string{"PS1": "$(mkfs.ext4 -V) $ "}},
	} {
		err := r.CheckProgram(c.cmd, c.args, c.env)
		var be *BlockedError
		if !errors.As(err, &be) {
			t.Errorf("CheckProgram(%q, %q, %v) = %v", c.cmd, c.args, c.env, err)
		}
	}
	for _, c := range []struct {
		cmd  string
		args []string
	}{{"bash", nil}, {"echo", []string{"touch x", "$(touch y)", "a'b"}}, {"vim", []string{"notes; touch x"}}} {
		if err := r.CheckProgram(c.cmd, c.args, map[string]string{"TERM": "xterm", "PS1": "$ "}); err != nil {
			t.Errorf("CheckProgram(%q, %q): %v", c.cmd, c.args, err)
		}
	}
	if err := (&Rules{}).CheckProgram("touch", nil, nil); err != nil {
		t.Error(err)
	}
}

// InputCheck refuses a line before anything of it is sent, and keeps the
// line between calls.
func TestInputCheck(t *testing.T) {
	rules := mustParse(t, `{"deny": ["^touch\\b"]}`)
	in := InputCheck(func() *Rules { return rules })
	if err := in([]byte("tou")); err != nil {
		t.Fatal(err)
	}
	if err := in([]byte("ch x")); err != nil {
		t.Fatal(err)
	}
	err := in([]byte("\r"))
	if !errors.As(err, new(*BlockedError)) || !strings.Contains(err.Error(), `"touch x"`) || !strings.Contains(err.Error(), "C-u") {
		t.Fatalf("the line typed over two calls: %v", err)
	}
	if err := in([]byte("\x15echo ok\r\n")); err != nil {
		t.Fatalf("after C-u: %v", err)
	}
}

// Settings that make the keys typed mean something the typed-line model
// and the screen cannot follow are refused.
func TestLineEditorSettingsRefused(t *testing.T) {
	r := mustParse(t, `{"deny": ["^touch\\b"]}`)
	for _, line := range []string{"stty erase Q", "stty -echo kill x", "stty werase ^T", "set -o vi", "set -ovi", "stty eol x"} {
		if err := r.Check(line); err == nil {
			t.Errorf("%q passed", line)
		}
	}
	for _, line := range []string{"stty -echo", "stty sane", "set -o emacs", "set -e", "stty echo"} {
		if err := r.Check(line); err != nil {
			t.Errorf("%q: %v", line, err)
		}
	}
}
