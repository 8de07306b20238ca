// Package tmuxtest runs a program in a detached tmux of a fixed size, as an
// oracle for terminal tests: pipe-pane records every byte the program
// writes (attached before it writes its first byte), capture-pane gives
// tmux's screen and cursor. Feeding the recorded bytes to our emulator must
// give the same screen.
//
// tmux answers the program's terminal queries itself, so the recording is
// the program's output alone. The program sees TERM=xterm-256color (set in
// its environment), not tmux's own TERM.
package tmuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// Available says whether tmux is installed.
func Available() bool {
	_, err := exec.LookPath("tmux")
	return err == nil
}

// Need skips the test without tmux, except in CI, where it must be there.
func Need(t testing.TB) {
	t.Helper()
	if !Available() {
		testutil.SkipUnlessCI(t, "tmux is not installed")
	}
}

// Session is one program in a private tmux server.
type Session struct {
	t          testing.TB
	sock, rec  string
	cols, rows int
}

// Screen is tmux's view of the pane.
type Screen struct {
	Rows                 []string
	CursorRow, CursorCol int
	CursorVisible        bool
	AltScreen, Dead      bool
}

func (s *Session) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *Session) must(args ...string) string {
	s.t.Helper()
	out, err := s.tmux(args...)
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Start runs command with args in a new tmux server, cols x rows, with the
// given extra environment.
func Start(t testing.TB, cols, rows int, env []string, command string, args ...string) *Session {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	s := &Session{t: t, sock: filepath.Join(dir, "sock"), rec: filepath.Join(dir, "rec"), cols: cols, rows: rows}
	// The pane waits for a go signal, so pipe-pane is attached before the
	// program's first byte.
	quoted := []string{}
	for _, a := range append([]string{command}, args...) {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	var envs []string
	for _, e := range append([]string{"TERM=xterm-256color"}, env...) {
		envs = append(envs, "'"+strings.ReplaceAll(e, "'", `'\''`)+"'")
	}
	script := fmt.Sprintf("tmux -S '%s' wait-for go; exec env %s %s", s.sock, strings.Join(envs, " "), strings.Join(quoted, " "))
	s.must("-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), "sh", "-c", script)
	t.Cleanup(func() { s.tmux("kill-server") })
	s.must("set", "-g", "status", "off")
	s.must("set", "-g", "remain-on-exit", "on")
	s.must("set", "-g", "window-size", "manual")
	s.must("resize-window", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows))
	s.must("pipe-pane", "-o", "cat > '"+s.rec+"'")
	// pipe-pane starts its command asynchronously: wait for the file.
	for end := time.Now().Add(5 * time.Second); ; {
		if _, err := os.Stat(s.rec); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("pipe-pane did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.must("wait-for", "-S", "go")
	return s
}

// SendKeys sends tmux key names.
func (s *Session) SendKeys(keys ...string) {
	s.must(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

// SendLiteral types text.
func (s *Session) SendLiteral(text string) { s.must("send-keys", "-t", "0", "-l", text) }

// Capture returns the pane's screen, exactly rows lines.
func (s *Session) Capture() Screen {
	out := s.must("capture-pane", "-p", "-t", "0")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for len(lines) < s.rows {
		lines = append(lines, "")
	}
	sc := Screen{Rows: lines[:s.rows]}
	f := strings.Fields(s.must("display", "-p", "-t", "0", "#{cursor_x} #{cursor_y} #{cursor_flag} #{alternate_on} #{pane_dead}"))
	if len(f) == 5 {
		sc.CursorCol, _ = strconv.Atoi(f[0])
		sc.CursorRow, _ = strconv.Atoi(f[1])
		sc.CursorVisible, sc.AltScreen, sc.Dead = f[2] == "1", f[3] == "1", f[4] == "1"
	}
	return sc
}

// Bytes is what the program has written so far.
func (s *Session) Bytes() []byte {
	b, _ := os.ReadFile(s.rec)
	return b
}

// WaitFor polls the screen until cond holds, failing after timeout with
// the last screen.
func (s *Session) WaitFor(t testing.TB, cond func(Screen) bool, timeout time.Duration) Screen {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		sc := s.Capture()
		if cond(sc) {
			return sc
		}
		if time.Now().After(end) {
			t.Fatalf("tmux screen never satisfied the condition:\n%s", strings.Join(sc.Rows, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Settle waits until the recording has stopped growing for quiet (the
// program is idle) and returns the screen.
func (s *Session) Settle(t testing.TB, quiet, timeout time.Duration) Screen {
	t.Helper()
	end := time.Now().Add(timeout)
	last, since := -1, time.Now()
	for time.Now().Before(end) {
		n := len(s.Bytes())
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= quiet {
			return s.Capture()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("program never went quiet")
	return Screen{}
}
