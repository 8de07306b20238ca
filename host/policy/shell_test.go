package policy

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// exampleWith is rules.example.json with more deny patterns, written in
// the example's style (a command name after the start of the line or a
// separator), as a user extends it.
func exampleWith(t testing.TB, extra ...string) *Rules {
	t.Helper()
	data, err := os.ReadFile("../../rules.example.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	f.Deny = append(f.Deny, extra...)
	data, _ = json.Marshal(f)
	r, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// touchRule is the addition to the example: touch denied the way
// the example denies reboot.
const touchRule = `(^|[;&|]\s*)(sudo\s+)?touch\b`

// Every way of spelling a denied command that a shell runs is refused:
// the rules see each simple command as the shell parses it.
func TestShellSpellingsRefused(t *testing.T) {
	r := exampleWith(t, touchRule)
	spellings := []string{
		"touch /tmp/f",
		"  touch /tmp/f",
		"\ttouch /tmp/f",
		"true\ntouch /tmp/f",
		"echo $(touch /tmp/f)",
		"echo `touch /tmp/f`",
		"/usr/bin/touch /tmp/f",
		"X=1 touch /tmp/f",
		"env touch /tmp/f",
		"env -i PATH=/bin touch /tmp/f",
		"env -S 'touch /tmp/f'",
		`t\ouch /tmp/f`,
		`'touch' /tmp/f`,
		`"touch" /tmp/f`,
		`"to"uch /tmp/f`,
		`$'touch' /tmp/f`,
		"(touch /tmp/f)",
		"{ touch /tmp/f; }",
		"if true; then touch /tmp/f; fi",
		"while false; do :; done; for i in 1; do touch /tmp/f; done",
		"case x in x) touch /tmp/f;; esac",
		"exec touch /tmp/f",
		"command touch /tmp/f",
		"builtin command -p touch /tmp/f",
		"echo /tmp/f | xargs touch",
		"echo /tmp/f | xargs -n1 -I{} touch {}",
		"bash -c 'touch /tmp/f'",
		"sh -c \"touch /tmp/f\"",
		"bash -lc 'echo; touch /tmp/f'",
		"zsh -c 'sudo touch /tmp/f'",
		"dash -c 'cd /tmp && touch f'",
		"nohup nice -n 5 timeout 5 stdbuf -oL touch /tmp/f",
		"sudo -u root -E touch /tmp/f",
		"time touch /tmp/f",
		"! touch /tmp/f",
		"true && touch /tmp/f",
		"false || touch /tmp/f",
		"cat <(touch /tmp/f)",
		"f() { touch /tmp/f; }; f",
		"eval 'touch /tmp/f'",
		"find /tmp -maxdepth 0 -exec touch /tmp/f \\;",
		"bash <<< 'touch /tmp/f'",
		"trap 'touch /tmp/f' EXIT",
		"x=$(touch /tmp/f)",
		"export X=`touch /tmp/f`",
		"echo /tmp/f | bash",
		"$CMD /tmp/f",
		"$(echo touch) /tmp/f",
		"tou?h /tmp/f",
		"/usr/bin/to[u]ch /tmp/f",
		"{tou,}ch /tmp/f",
		"alias t='touch /tmp/f'",
		"!!",
		"echo !:1-2",
		"echo \"!-2\"",
		"^ouch^touch",
		"fc -s",
		"r ouch=touch",
		`bind '"x": accept-line'`,
		"bindkey -s x '^M'",
		"stty eol x",
		"sudo reboot",
		"   reboot",
		"echo ok; /sbin/reboot",
		"rm -rf '/'",
		`rm -rf "$HOME"`,
		"r\\m -rf /",
		"rm -rf {/,/tmp}",
	}
	for _, s := range spellings {
		if err := r.Check(s); err == nil {
			t.Errorf("not refused: %q", s)
		} else if !errors.As(err, new(*BlockedError)) {
			t.Errorf("%q: %v is not a BlockedError", s, err)
		}
	}
}

// Ordinary commands still pass, including ones that mention a denied word
// as an argument.
func TestShellOrdinaryAllowed(t *testing.T) {
	r := exampleWith(t, touchRule)
	for _, s := range []string{
		"ls -la",
		"echo touch me",
		"grep -r touch /etc",
		"cd /var/www && git status --short",
		"for f in *.go; do wc -l \"$f\"; done",
		"ps aux | grep '[s]shd' | wc -l",
		"echo reboot later",
		"X=1 env | sort",
		"sudo -l",
		"rm -rf ./build",
		"cat /var/log/syslog | tail -n 20",
		"echo $(date +%s) > /tmp/now",
		"[ -f /etc/passwd ] && echo yes",
		"printf '%s\\n' \"$HOME\"",
		"echo hi! && [ ! -f x ] && echo $!",
		"fc -l",
		"bind -p",
		"stty -a",
	} {
		if err := r.Check(s); err != nil {
			t.Errorf("refused %q: %v", s, err)
		}
	}
}

// With an allow list, every simple command must be allowed.
func TestShellAllowEvery(t *testing.T) {
	r := mustParse(t, `{"allow": ["^(ls|cat|echo|grep)\\b"]}`)
	for _, c := range []struct {
		cmd string
		ok  bool
	}{
		{"ls -la | grep x", true},
		{"echo $(cat /etc/hostname)", true},
		{"ls; uname -a", false},
		{"echo $(id)", false},
		{"ls | xargs rm", false},
		{"bash -c 'ls'", false},
		{"echo 'unclosed", false},
	} {
		err := r.Check(c.cmd)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", c.cmd, err, c.ok)
		}
	}
}

// A computed command name or a line that does not parse says why.
func TestShellMessages(t *testing.T) {
	r := exampleWith(t, touchRule)
	for _, c := range []struct{ cmd, want string }{
		{"$CMD x", "cannot check a command whose name is computed"},
		{"/usr/bin/touch x", `"touch x"`},
		{"echo /tmp/f | bash", "reads its commands from a pipe"},
	} {
		err := r.Check(c.cmd)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q) = %v, want it to say %q", c.cmd, err, c.want)
		}
	}
	// A line that does not parse, deny list only: the words are still
	// checked, and harmless text passes.
	if err := r.Check("echo 'unclosed; touch x"); err == nil {
		t.Error("an unparsable line with a denied command passed")
	}
	if err := r.Check("print('hello')"); err != nil {
		t.Errorf("an unparsable harmless line was refused: %v", err)
	}
}

func BenchmarkCheck(b *testing.B) {
	r := exampleWith(b, touchRule)
	for _, c := range []struct{ name, line string }{
		{"typical", "cd /var/www && git status --short"},
		{"pipeline", "ps aux | grep -v grep | grep '[s]shd' | awk '{print $2}' | sort -n | uniq -c | sort -rn | head -n 5 | sed 's/^ *//' | tee /tmp/out.txt | wc -l"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Check(c.line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Hostile lines (ssh_execute takes up to 1 MiB) are answered quickly and
// never crash the server: the parser recurses per nesting level and per
// pipeline operator, so deep lines are refused before parsing, and brace
// expansion is bounded.
func TestShellHostileLinesBounded(t *testing.T) {
	r := exampleWith(t, touchRule)
	// The bound is relative to an ordinary line of the same size (the
	// race detector and a busy machine slow both alike).
	plain := "echo " + strings.Repeat("word ", 200000)
	start := time.Now()
	r.Check(plain)
	bound := max(3*time.Second, 5*time.Since(start))
	for _, c := range []struct {
		line    string
		refused bool
	}{
		{strings.Repeat("(", 300000), true},
		{strings.Repeat("$((", 100000), true},
		{strings.Repeat("$(", 200000) + "touch x", true},
		{strings.Repeat("if ", 100000), true},
		{strings.Repeat("x|", 300000) + "x", true},
		{strings.Repeat("true && ", 100000) + "touch x", true},
		{strings.Repeat("find -exec ", 100000), true},
		{"sh -c '" + strings.Repeat("a{b,c}", 5000) + "'", true},
		{"echo " + strings.Repeat("a{1..1000000}", 4), false},
		{plain, false},
		{strings.Repeat("sudo env nice ", 70000) + "ls", true},
		{strings.Repeat("(", 150) + "ls" + strings.Repeat(")", 150), false},
	} {
		start := time.Now()
		err := r.Check(c.line)
		if took := time.Since(start); took > bound {
			t.Errorf("%.40q…: %v", c.line, took)
		}
		if (err != nil) != c.refused {
			t.Errorf("%.40q…: %v, want refused=%v", c.line, err, c.refused)
		}
	}
}

func FuzzCheck(f *testing.F) {
	r := exampleWith(f, touchRule)
	for _, s := range []string{"touch x", "echo $(t\\ouch x)", "bash -c 'env -S \"touch x\"'", "a{b,c}{1..3}", "f() { (x|y) && z; }", "cat <<EOF | sh\nx\nEOF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		start := time.Now()
		r.Check(line)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%q took %v", line, took)
		}
	})
}

func TestAnsiC(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`t\x6fuch`, "touch", true},
		{`\164ouch`, "touch", true},
		{`\u0074ouch`, "touch", true},
		{`\U00000074`, "t", true},
		{`\x6g`, "\x06g", true},
		{`\1777`, "\x7f7", true},
		{`\xFFz`, "\xffz", true},
		{`a\n\'b`, "a\n'b", true},
		{`\x`, "", false},
		{`\q`, "", false},
	} {
		var b strings.Builder
		ok := ansiC(&b, c.in)
		if ok != c.ok || ok && b.String() != c.want {
			t.Errorf("ansiC(%q) = %q, %v; want %q, %v", c.in, b.String(), ok, c.want, c.ok)
		}
	}
}
