package shell_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link/pty"
	"github.com/termhost/termhost/host/link/pty/shell"
	"github.com/termhost/termhost/internal/testutil"
)

type term struct {
	p   *pty.PTY
	mu  sync.Mutex
	out strings.Builder
}

func run(t *testing.T, sh string, home string, env map[string]string) *term {
	t.Helper()
	return runArgs(t, sh, nil, home, env)
}

func runArgs(t *testing.T, sh string, args []string, home string, env map[string]string) *term {
	t.Helper()
	base := append(os.Environ(), "HOME="+home, "PAGER=less", "HISTFILE="+filepath.Join(home, "user_history"))
	over := map[string]bool{}
	for k, v := range env {
		base = append(base, k+"="+v)
		over[k] = true
	}
	prep, err := shell.Prepare(sh, args, base, over)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prep.Cleanup)
	if !prep.Integrated {
		t.Fatalf("%s not integrated", sh)
	}
	p, err := pty.Start(pty.Config{Command: prep.Command, Args: prep.Args, Env: prep.Env, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	tm := &term{p: p}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := p.Read(b)
			tm.mu.Lock()
			tm.out.Write(b[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return tm
}

func (tm *term) text() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

func (tm *term) until(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	end := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		if rx.MatchString(tm.text()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("output never matched %q:\n%q", re, tm.text())
}

var osc = regexp.MustCompile(`\x1b\]133;[^\x07\x1b]*(\x07|\x1b\\)`)

func TestMarks(t *testing.T) {
	for _, sh := range []string{"bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			testutil.NeedProgram(t, sh)
			home := t.TempDir()
			// The user's own start-up file still runs.
			os.WriteFile(filepath.Join(home, ".bashrc"), []byte("PROMPT_COMMAND='echo user-pc'\nPS1='u$ '\n"), 0o600)
			os.WriteFile(filepath.Join(home, ".zshrc"), []byte("precmd() { echo user-pc }\nPS1='u$ '\n"), 0o600)
			tm := run(t, sh, home, nil)
			tm.until(t, `\x1b\]133;A\x1b\\u\$ \x1b\]133;B\x1b\\`)
			tm.p.Write([]byte("true\r"))
			tm.until(t, `133;C(\x07|\x1b\\)(.|\s)*133;D;0\x1b\\`)
			tm.p.Write([]byte("false\r"))
			tm.until(t, `133;D;1\x1b\\`)
			tm.p.Write([]byte("echo pager=$PAGER git=$GIT_PAGER term=$TERM editor=$GIT_EDITOR\r"))
			tm.until(t, `pager=cat git=cat term=xterm-256color editor=true`)
			tm.p.Write([]byte("echo hist=$HISTFILE\r"))
			tm.until(t, `hist=\S*termhost-shell-\S*/history`)
			if !strings.Contains(tm.text(), "user-pc") {
				t.Errorf("the user's prompt hook did not run")
			}
			// Without the marks nothing of them is left: no marker text
			// was typed or echoed.
			if rest := osc.ReplaceAllString(tm.text(), ""); strings.Contains(rest, "133;") {
				t.Fatalf("marker text outside the marks: %q", rest)
			}
			tm.p.Write([]byte("exit\r"))
			tm.p.Exit()
			if _, err := os.Stat(filepath.Join(home, "user_history")); err == nil {
				t.Error("the user's history file was written")
			}
		})
	}
}

func TestOverridesWin(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	tm := run(t, "bash", t.TempDir(), map[string]string{"PAGER": "more"})
	tm.p.Write([]byte("echo pager=$PAGER\r"))
	tm.until(t, `pager=more`)
}

func TestNotAShell(t *testing.T) {
	p, err := shell.Prepare("vim", []string{"x"}, []string{"PAGER=less", "TERM=dumb"}, nil)
	if err != nil || p.Integrated {
		t.Fatalf("%+v %v", p, err)
	}
	if !strings.Contains(strings.Join(p.Env, " "), "PAGER=cat") || !strings.Contains(strings.Join(p.Env, " "), "TERM=xterm-256color") {
		t.Fatalf("env %v", p.Env)
	}
	p, _ = shell.Prepare("/bin/bash", []string{"-c", "echo"}, nil, nil)
	if p.Integrated {
		t.Fatal("bash -c got integration")
	}
}

// TestWhichIntegrate: the commands that get integration and those that
// do not, with the arguments they are started with.
func TestWhichIntegrate(t *testing.T) {
	cases := []struct {
		cmd  string
		args []string
		want string // the arguments started with; "-" without integration
	}{
		{"sh", nil, "-i"},
		{"/bin/sh", nil, "-i"},
		{"dash", []string{"-i"}, "-i"},
		{"/usr/bin/dash", nil, "-i"},
		{"ash", nil, "-i"},
		{"sh", []string{"-l"}, "-i"}, // the profile files come from the ENV file
		{"dash", []string{"--login", "-i"}, "-i"},
		{"busybox", []string{"sh"}, "sh -i"},
		{"/bin/busybox", []string{"ash", "-l"}, "ash -i"},
		{"bash", nil, "--rcfile * -i"},
		{"bash", []string{"-l"}, "--rcfile * -i"},
		{"zsh", nil, "-i"},
		{"sh", []string{"-c", "echo"}, "-"},
		{"sh", []string{"script.sh"}, "-"},
		{"sh", []string{"-s"}, "-"},
		{"dash", []string{"-e"}, "-"},
		{"busybox", nil, "-"},
		{"busybox", []string{"ls"}, "-"},
		{"busybox", []string{"sh", "-c", "echo"}, "-"},
		{"busybox", []string{"hush"}, "-"},
		{"bash", []string{"--norc"}, "-"},
		{"bash", []string{"--noprofile"}, "-"},
		{"bash", []string{"--posix"}, "-"},
		{"mksh", nil, "-"},
		{"shell", nil, "-"},
	}
	for _, c := range cases {
		p, err := shell.Prepare(c.cmd, c.args, []string{"HOME=/nonexistent"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := "-"
		if p.Integrated {
			got = strings.Join(p.Args, " ")
			if strings.HasPrefix(got, "--rcfile ") {
				got = "--rcfile * " + strings.SplitN(got, " ", 3)[2]
			}
		} else if p.Command != c.cmd || strings.Join(p.Args, " ") != strings.Join(c.args, " ") {
			t.Errorf("%s %q without integration changed to %s %q", c.cmd, c.args, p.Command, p.Args)
		}
		p.Cleanup()
		if got != c.want {
			t.Errorf("%s %q: started with %q, want %q", c.cmd, c.args, got, c.want)
		}
	}
}

// TestPOSIXEnv: what a POSIX shell's environment gets: ENV names the
// private file, the user's ENV passed aside (set, even empty, or not at
// all: none left from an enclosing session), the login asked for, and
// Cleanup removes the file.
func TestPOSIXEnv(t *testing.T) {
	base := []string{"HOME=/h", "__TERMHOST_ENV=stale", "__TERMHOST_LOGIN=1"}
	p, err := shell.Prepare("sh", nil, base, nil)
	if err != nil || !p.Integrated {
		t.Fatalf("%+v %v", p, err)
	}
	env := envMap(p.Env)
	rc := env["ENV"]
	if fi, err := os.Stat(rc); err != nil || fi.Mode().Perm() != 0o600 || filepath.Base(rc) != "shrc" {
		t.Fatalf("ENV file %q: %v %v", rc, fi, err)
	}
	if b, _ := os.ReadFile(rc); !strings.Contains(string(b), "133;") {
		t.Fatalf("ENV file without marks:\n%s", b)
	}
	if _, ok := env["__TERMHOST_ENV"]; ok {
		t.Error("a stale __TERMHOST_ENV was passed on")
	}
	if _, ok := env["__TERMHOST_LOGIN"]; ok {
		t.Error("a stale __TERMHOST_LOGIN was passed on")
	}
	if env["__TERMHOST_HISTFILE"] != filepath.Join(filepath.Dir(rc), "history") {
		t.Errorf("HISTFILE %q", env["__TERMHOST_HISTFILE"])
	}
	p.Cleanup()
	if _, err := os.Stat(filepath.Dir(rc)); !os.IsNotExist(err) {
		t.Errorf("Cleanup left %s: %v", filepath.Dir(rc), err)
	}

	for _, user := range []string{"/u/shrc", ""} {
		p, _ = shell.Prepare("busybox", []string{"sh", "-l"}, []string{"ENV=" + user}, map[string]bool{"HISTFILE": true})
		env = envMap(p.Env)
		if v, ok := env["__TERMHOST_ENV"]; !ok || v != user {
			t.Errorf("user's ENV %q passed as %q %v", user, v, ok)
		}
		if env["__TERMHOST_LOGIN"] != "1" {
			t.Error("login not passed")
		}
		if _, ok := env["__TERMHOST_HISTFILE"]; ok {
			t.Error("HISTFILE set by the caller was replaced")
		}
		if env["ENV"] == user {
			t.Error("ENV not replaced")
		}
		p.Cleanup()
	}
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// posixShells are the POSIX shells found here: sh, dash, BusyBox sh, and
// bash started as sh (where sh is bash).
func posixShells(t *testing.T) map[string][]string {
	shells := map[string][]string{}
	for _, sh := range []string{"sh", "dash"} {
		if _, err := exec.LookPath(sh); err == nil {
			shells[sh] = nil
		}
	}
	if _, err := exec.LookPath("busybox"); err == nil {
		shells["busybox"] = []string{"sh"}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		dir := t.TempDir()
		if err := os.Symlink(bash, filepath.Join(dir, "sh")); err == nil {
			shells[filepath.Join(dir, "sh")] = nil
		}
	}
	if len(shells) == 0 {
		testutil.NeedProgram(t, "dash")
	}
	return shells
}

func shellName(sh string, args []string) string {
	if strings.Contains(sh, string(filepath.Separator)) {
		return "bash_as_sh"
	}
	return strings.Join(append([]string{sh}, args...), "_")
}

// TestPOSIXMarks: a POSIX shell prints the status mark, A and B around
// the user's prompt (as the user's ENV file left it, % and backslash and
// all), the user's ENV file runs (its aliases do not touch the file's own
// commands), ENV is the user's again for what the shell starts, and
// history is private. Where sh is bash, it prints bash's marks.
func TestPOSIXMarks(t *testing.T) {
	for sh, args := range posixShells(t) {
		t.Run(shellName(sh, args), func(t *testing.T) {
			home := t.TempDir()
			user := filepath.Join(home, "shrc")
			os.WriteFile(user, []byte("X=from-user-env\nalias unset=echo printf=false\nPS1=\"100% \\\\w> \"\n"), 0o600)
			tm := runArgs(t, sh, args, home, map[string]string{"ENV": user})
			isBash := strings.Contains(sh, string(filepath.Separator)) // the bash-as-sh link
			// dash prints \w as it is; BusyBox and bash put the directory.
			prompt := `100% (\\w|\S+)> `
			if isBash {
				tm.until(t, `\x1b\]133;A\x1b\\`+prompt+`\x1b\]133;B\x1b\\`)
			} else {
				tm.until(t, `\x1b\]133;S;0\x07\x1b\]133;A\x07`+prompt+`\x1b\]133;B\x07`)
			}
			tm.p.Write([]byte("false\r"))
			if isBash {
				tm.until(t, `133;D;1\x1b\\`)
			} else {
				tm.until(t, `133;S;1\x07`)
			}
			tm.p.Write([]byte("echo x=$X env=$ENV hist=$HISTFILE\r"))
			tm.until(t, `x=from-user-env env=`+regexp.QuoteMeta(user)+` hist=\S*termhost-shell-\S*/history`)
			if strings.Contains(tm.text(), "__termhost") || strings.Contains(tm.text(), "__TERMHOST") {
				t.Errorf("the user's aliases changed the ENV file's commands:\n%q", tm.text())
			}
			if rest := osc.ReplaceAllString(tm.text(), ""); strings.Contains(rest, "133;") {
				t.Fatalf("marker text outside the marks: %q", rest)
			}
		})
	}
}

// TestPOSIXHostile: a user ENV file that fails (a syntax error, set -u)
// leaves the marks working; the shell's own default prompt (# for root)
// is wrapped when the user sets none; a login shell's profile that sets
// ENV gets that file run, not ours left unread.
func TestPOSIXHostile(t *testing.T) {
	for sh, args := range posixShells(t) {
		if strings.Contains(sh, string(filepath.Separator)) {
			continue // bash as sh: bash's own marks, tested above
		}
		t.Run(shellName(sh, args), func(t *testing.T) {
			for name, body := range map[string]string{
				"syntax":  "X=1\nif then fi\n",
				"nounset": "set -u\nX=nounset\n",
				"fails":   "X=$(no-such-command-here)\nreturn 3\n",
			} {
				home := t.TempDir()
				user := filepath.Join(home, "shrc")
				os.WriteFile(user, []byte(body), 0o600)
				tm := runArgs(t, sh, args, home, map[string]string{"ENV": user, "PS1": "p$ "})
				tm.until(t, `\x1b\]133;S;\d+\x07\x1b\]133;A\x07p\$ \x1b\]133;B\x07`)
				tm.p.Write([]byte("false\r"))
				tm.until(t, `133;S;1\x07\x1b\]133;A\x07p\$ `)
				if name == "nounset" {
					tm.p.Write([]byte("echo x=$X\r"))
					tm.until(t, `x=nounset`)
				}
			}
			// No PS1 anywhere: the shell's default, wrapped.
			tm := runArgs(t, sh, args, t.TempDir(), nil)
			def := `\$ `
			if os.Geteuid() == 0 {
				def = `# `
			}
			tm.until(t, `\x1b\]133;A\x07\S*\s?`+def+`\x1b\]133;B\x07`)
			// A login shell whose profile sets ENV.
			home := t.TempDir()
			os.WriteFile(filepath.Join(home, "shrc"), []byte("Y=from-profile-env\n"), 0o600)
			os.WriteFile(filepath.Join(home, ".profile"), []byte("ENV=$HOME/shrc; export ENV\n"), 0o600)
			tm = runArgs(t, sh, append(slices.Clone(args), "-l"), home, map[string]string{"PS1": "p$ "})
			tm.until(t, `\x1b\]133;B\x07`)
			tm.p.Write([]byte("echo y=$Y\r"))
			tm.until(t, `y=from-profile-env\r\n\x1b\]133;S;0`)
		})
	}
}
