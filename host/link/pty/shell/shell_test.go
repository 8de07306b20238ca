package shell_test

import (
	"os"
	"path/filepath"
	"regexp"
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
	base := append(os.Environ(), "HOME="+home, "PAGER=less", "HISTFILE="+filepath.Join(home, "user_history"))
	over := map[string]bool{}
	for k, v := range env {
		base = append(base, k+"="+v)
		over[k] = true
	}
	prep, err := shell.Prepare(sh, nil, base, over)
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
