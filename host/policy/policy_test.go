package policy

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

func mustParse(t *testing.T, s string) *Rules {
	t.Helper()
	r, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheck(t *testing.T) {
	r := mustParse(t, `{"allow": ["^(ls|cat|echo|cd)\\b"], "deny": ["rm\\s+-rf\\s+/", "\\bcat\\s+/etc/shadow"]}`)
	for _, c := range []struct {
		cmd  string
		ok   bool
		rule string
	}{
		{"ls -la", true, ""},
		{"echo hi && cd /tmp", true, ""},
		{"cat /etc/shadow", false, `\bcat\s+/etc/shadow`},
		{"ls; rm -rf /", false, `rm\s+-rf\s+/`},
		{"uname -a", false, ""},
	} {
		err := r.Check(c.cmd)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", c.cmd, err, c.ok)
			continue
		}
		var be *BlockedError
		if err != nil && (!errors.As(err, &be) || be.Rule != c.rule) {
			t.Errorf("Check(%q) = %#v, want rule %q", c.cmd, err, c.rule)
		}
	}
	deny := mustParse(t, `{"deny": ["shutdown"]}`)
	if deny.Check("uptime") != nil || deny.Check("sudo shutdown -h now") == nil {
		t.Error("deny-only rules: everything else must pass, the pattern must block")
	}
	if (&Rules{}).Check("anything") != nil || (*Rules)(nil).Check("x") != nil {
		t.Error("no rules must allow everything")
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{`, "not valid JSON"},
		{`{"allow": "ls"}`, "allow"},
		{`{"deny": ["("]}`, `deny[0] "(" is not a valid RE2 pattern`},
		{`{"allow": ["ok", ""]}`, "allow[1]: an empty pattern"},
		{`{"alow": []}`, `unknown field "alow"`},
		{`{"deny": ["(?=x)"]}`, "deny[0]"},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestStoreReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.json")
	var logs lockedBuffer
	s, err := NewStore(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || !s.Rules().Empty() {
		t.Fatalf("missing file: %v", err)
	}
	if !strings.Contains(logs.String(), "level=INFO") || !strings.Contains(logs.String(), "no rules file") {
		t.Errorf("a missing rules file at start is not said at INFO: %q", logs.String())
	}
	if err := s.Watch(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.WriteFile(path, []byte(`{"deny": ["reboot"]}`), 0o644)
	testutil.Eventually(t, 10*time.Second, "reboot to be refused", func() bool { return s.Check("reboot") != nil })
	os.WriteFile(path, []byte(`{"deny": ["(reboot"]}`), 0o644)
	testutil.Eventually(t, 10*time.Second, "the load error", func() bool { return s.Err() != nil })
	if s.Check("reboot") == nil {
		t.Error("a bad file dropped the last good rules")
	}
	if !strings.Contains(s.Err().Error(), path) {
		t.Errorf("Err does not name the file: %v", s.Err())
	}
	os.WriteFile(path, []byte(`{"deny": ["mkdir"]}`), 0o644)
	testutil.Eventually(t, 10*time.Second, "the new rules", func() bool { return s.Err() == nil && s.Check("mkdir x") != nil })

	// Removed, or renamed away: the last good rules stay, with a warning
	// on every attempt.
	for i, gone := range []func() error{
		func() error { return os.Remove(path) },
		func() error { return os.Rename(path, path+".bak") },
	} {
		before := strings.Count(logs.String(), "level=WARN")
		if err := gone(); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "a warning", func() bool { return strings.Count(logs.String(), "level=WARN") > before })
		if s.Check("mkdir x") == nil {
			t.Errorf("case %d: the rules vanished with the file", i)
		}
		if s.Err() == nil || !strings.Contains(s.Err().Error(), "gone") {
			t.Errorf("case %d: Err = %v, want it to say the file is gone", i, s.Err())
		}
		os.WriteFile(path, []byte(`{"deny": ["mkdir"]}`), 0o644)
		testutil.Eventually(t, 10*time.Second, "the error to clear", func() bool { return s.Err() == nil })
	}
	// {} is how rules are dropped.
	os.WriteFile(path, []byte(`{}`), 0o644)
	testutil.Eventually(t, 10*time.Second, "mkdir x to be allowed", func() bool { return s.Check("mkdir x") == nil })
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestTyped(t *testing.T) {
	r := mustParse(t, `{"deny": ["^rm -rf /$"]}`)
	var ty Typed
	steps := []struct {
		in      string
		blocked bool
		pending string
	}{
		{"rm -rf /tmp/x\n", false, ""},
		{"rm -r", false, "rm -r"},
		{"f /", false, "rm -rf /"},
		{"\r", true, "rm -rf /"},         // blocked, state kept
		{"\x7f\x7f\x7f", false, "rm -r"}, // backspace
		{"f /\x1b[D\r", true, "rm -r"},   // an arrow key is skipped; nothing of a blocked input counts
		{"\x15ls\r", false, ""},          // C-u clears the line
		{"rm -rf /\x03", false, ""},      // C-c abandons it
		{"echo é\x7f\r", false, ""},
	}
	for _, s := range steps {
		err := ty.Check(r, []byte(s.in))
		if (err != nil) != s.blocked {
			t.Errorf("Check(%q) = %v, want blocked=%v", s.in, err, s.blocked)
		}
		if ty.Pending() != s.pending {
			t.Errorf("after %q: pending %q, want %q", s.in, ty.Pending(), s.pending)
		}
	}
}

// Line editing cannot hide a command from the model, and a line over the
// bound is refused rather than checked by a part of it.
func TestTypedEditingAndLength(t *testing.T) {
	r := exampleWith(t, touchRule)
	for _, in := range []string{
		"ouch /tmp/f\x01t\r",
		"ouch /tmp/f\x1b[Ht\r",
		"ouch /tmp/f\x1bOHt\r",
		"ouch /tmp/f\x1b[1~t\r",
		"touch /tmp/f; : \x1b[D\x1b[D\x1b[D\r",
		"xtouch /tmp/f\x01\x04\r",
		"touch /tmp/f\x0f",
		": \x18\x05",
		"touch /tmp/f " + strings.Repeat("#", maxLine) + "\r",
	} {
		var ty Typed
		if err := ty.Check(r, []byte(in)); err == nil {
			t.Errorf("not refused: %q", in[:min(len(in), 40)])
		}
	}
	var ty Typed
	if err := ty.Check(r, []byte("echo touch /tmp/f\x01\x0b echo ok\r")); err != nil {
		t.Errorf("C-a C-k then a new line: %v", err)
	}
}
