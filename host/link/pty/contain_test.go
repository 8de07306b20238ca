package pty

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/testutil"
	"golang.org/x/sys/unix"
)

// The package's tests run their programs under the containment named by
// TERMHOST_TEST_CONTAINMENT: "auto" (the default, what termhost uses),
// "cgroup", "subreaper", or "none" (started directly). Run the package
// once with each to see that signals, resizes, echo checks and exit
// statuses are the same through the wrapper.
func testMode() string {
	if m := os.Getenv("TERMHOST_TEST_CONTAINMENT"); m != "" {
		return m
	}
	return "auto"
}

var (
	containMu sync.Mutex
	contained = map[string]*Containment{}
)

// containment is the Containment for mode (nil for "none"), built once.
func containment(mode string, hidden ...string) (*Containment, error) {
	if mode == "none" {
		return nil, nil
	}
	key := mode + "\x00" + strings.Join(hidden, "\x00")
	containMu.Lock()
	defer containMu.Unlock()
	if c := contained[key]; c != nil {
		return c, nil
	}
	c, err := NewContainment(ContainmentConfig{Mechanism: mode, Hidden: func() []string { return hidden }})
	if err != nil {
		return nil, err
	}
	contained[key] = c
	return c, nil
}

func testContainment(t testing.TB) *Containment {
	t.Helper()
	c, err := containment(testMode())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mechanisms are the containment paths this machine has, each tested.
func mechanisms(t *testing.T) []string {
	c, err := containment("auto")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mechanism() == MechanismCgroup {
		return []string{MechanismCgroup, MechanismSubreaper}
	}
	t.Logf("no cgroup here: only the subreaper path is tested")
	return []string{MechanismSubreaper}
}

// pidFrom waits (bounded) for a pid file and reads it.
func pidFrom(t *testing.T, file string) int {
	t.Helper()
	var pid int
	if !testutil.Poll(10*time.Second, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("no pid in %s", file)
	}
	return pid
}

// gone waits (bounded) for pid to end; it fails the test, and kills the
// process, if it does not.
func gone(t *testing.T, pid int, what string) {
	t.Helper()
	if !testutil.Poll(5*time.Second, func() bool { return !running(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("%s: process %d is still running", what, pid)
	}
}

// running: pid exists and is not a zombie.
func running(pid int) bool {
	st, ok := readProcStat(pid)
	return ok && st.state != 'Z'
}

// daemonScript starts a grandchild that leaves the session (setsid),
// ignores TERM and HUP and writes its pid to file; then runs rest.
func daemonScript(file, rest string) string {
	return fmt.Sprintf(`setsid sh -c 'trap "" TERM HUP; echo $$ > %s; exec sleep 1000' </dev/null >/dev/null 2>&1 & %s`, file, rest)
}

// TestDaemonEndsWithStop: a setsid'd grandchild that ignores TERM and HUP
// is gone after a graceful stop.
func TestDaemonEndsWithStop(t *testing.T) {
	for _, mech := range mechanisms(t) {
		t.Run(mech, func(t *testing.T) {
			c, err := containment(mech)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "pid")
			p, err := Start(Config{Command: "sh", Args: []string{"-c", daemonScript(file, "echo started; wait")}, Env: os.Environ(), Contain: c})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			r := collect(p)
			r.until(t, "started")
			pid := pidFrom(t, file)
			p.Stop(context.Background(), 100*time.Millisecond, 500*time.Millisecond)
			gone(t, pid, "after Stop")
		})
	}
}

// TestDaemonEndsWithProgram: what a program left behind ends when it
// exits, and the program's exit code is reported as it was.
func TestDaemonEndsWithProgram(t *testing.T) {
	for _, mech := range mechanisms(t) {
		t.Run(mech, func(t *testing.T) {
			c, err := containment(mech)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "pid")
			p, err := Start(Config{Command: "sh", Args: []string{"-c", daemonScript(file, fmt.Sprintf("while [ ! -s %s ]; do sleep 0.05; done; exit 3", file))}, Env: os.Environ(), Contain: c})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			collect(p)
			pid := pidFrom(t, file)
			if st := p.Exit(); st != (link.ExitStatus{Code: 3}) {
				t.Fatalf("exit status %+v, want code 3", st)
			}
			gone(t, pid, "after the program exited")
		})
	}
}

// TestExitStatusThroughWrapper: the code, and death by each signal
// (SIGSEGV and SIGPIPE too, which the Go runtime in the wrapper would
// otherwise handle), reach termhost as they were, also when termhost
// closes the PTY as soon as the program's terminal ends.
func TestExitStatusThroughWrapper(t *testing.T) {
	c := testContainment(t)
	for _, tc := range []struct {
		script string
		want   link.ExitStatus
	}{
		{"exit 0", link.ExitStatus{Code: 0}},
		{"exit 42", link.ExitStatus{Code: 42}},
		{"kill -TERM $$", link.ExitStatus{Code: -1, Signal: "SIGTERM"}},
		{"kill -SEGV $$", link.ExitStatus{Code: -1, Signal: "SIGSEGV"}},
		{"kill -PIPE $$", link.ExitStatus{Code: -1, Signal: "SIGPIPE"}},
		{"kill -KILL $$", link.ExitStatus{Code: -1, Signal: "SIGKILL"}},
	} {
		p, err := Start(Config{Command: "sh", Args: []string{"-c", tc.script}, Env: os.Environ(), Contain: c})
		if err != nil {
			t.Fatal(err)
		}
		// As a session does: the terminal ends, the link is closed at
		// once, then the status is asked for (a close must not turn an
		// ended program's status into the wrapper's SIGKILL).
		r := collect(p)
		<-r.done
		p.Close()
		if st := p.Exit(); st != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.script, st, tc.want)
		}
	}
}

// TestStartErrorThroughWrapper: a program that cannot be executed is an
// error from Start, as without the wrapper.
func TestStartErrorThroughWrapper(t *testing.T) {
	c := testContainment(t)
	f := filepath.Join(t.TempDir(), "noexec")
	os.WriteFile(f, []byte("#!/bin/sh\n"), 0o600)
	if _, err := Start(Config{Command: f, Contain: c}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("a file without the x bit: %v", err)
	}
}

// TestDaemonEndsWithHolder: when the process holding the PTY (termhost)
// is SIGKILLed, a setsid'd grandchild that ignores TERM and HUP ends too.
func TestDaemonEndsWithHolder(t *testing.T) {
	if mech := os.Getenv("TERMHOST_PTY_HOLDER_MECH"); mech != "" {
		c, err := containment(mech)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		file := os.Getenv("TERMHOST_PTY_HOLDER_FILE")
		p, err := Start(Config{Command: "sh", Args: []string{"-c", daemonScript(file, "echo started; wait")}, Env: os.Environ(), Contain: c})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		collect(p)
		if p.cmd.Process.Pid != p.Pid() {
			os.WriteFile(file+".wrapper", []byte(strconv.Itoa(p.cmd.Process.Pid)), 0o600)
		}
		fmt.Println("holding")
		select {} // wait to be killed
	}
	for _, mech := range mechanisms(t) {
		t.Run(mech, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pid")
			cmd := exec.Command(os.Args[0], "-test.run", "^TestDaemonEndsWithHolder$")
			cmd.Env = append(os.Environ(), "TERMHOST_PTY_HOLDER_MECH="+mech, "TERMHOST_PTY_HOLDER_FILE="+file)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := pidFrom(t, file)
			wrapper := pidFrom(t, file+".wrapper")
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			gone(t, pid, "after its holder was SIGKILLed")
			gone(t, wrapper, "the wrapper, after its holder was SIGKILLed")
		})
	}
}

// TestSandboxHidesFiles: a hidden file reads empty, a hidden directory is
// empty, and the program still runs; the files stay as they were for
// termhost.
func TestSandboxHidesFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "credentials.json")
	os.WriteFile(secret, []byte("SECRET-CONTENT"), 0o600)
	keys := filepath.Join(dir, "keys")
	os.Mkdir(keys, 0o700)
	os.WriteFile(filepath.Join(keys, "id_ed25519"), []byte("KEY-CONTENT"), 0o600)
	c, err := NewContainment(ContainmentConfig{Sandbox: "on", Hidden: func() []string { return []string{secret, keys, filepath.Join(dir, "missing")} }})
	if err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	p, err := Start(Config{Command: "sh", Args: []string{"-c", fmt.Sprintf("cat %s; ls -A %s; cat %s/id_ed25519; echo end-of-test", secret, keys, keys)}, Env: os.Environ(), Contain: c})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := collect(p)
	r.until(t, "end-of-test")
	p.Exit()
	if out := r.String(); strings.Contains(out, "SECRET-CONTENT") || strings.Contains(out, "KEY-CONTENT") || strings.Contains(out, "id_ed25519\r\n") {
		t.Fatalf("a hidden file was read: %q", out)
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET-CONTENT" {
		t.Fatalf("the hidden file changed for termhost: %q", b)
	}
}

// BenchmarkLaunchContainment: what starting a program costs (PTY open,
// start of `true`, its exit reaped), directly and under each containment.
//
//	go test -run '^$' -bench BenchmarkLaunchContainment -benchtime 50x ./host/link/pty/
func BenchmarkLaunchContainment(b *testing.B) {
	secret := filepath.Join(b.TempDir(), "credentials.json")
	os.WriteFile(secret, []byte("{}"), 0o600)
	for _, v := range []struct{ name, mech, sandbox string }{
		{"direct", "none", ""},
		{"subreaper", MechanismSubreaper, "off"},
		{"subreaper+sandbox", MechanismSubreaper, "on"},
		{"cgroup", MechanismCgroup, "off"},
		{"cgroup+sandbox", MechanismCgroup, "on"},
	} {
		b.Run(v.name, func(b *testing.B) {
			var c *Containment
			if v.mech != "none" {
				var err error
				c, err = NewContainment(ContainmentConfig{Mechanism: v.mech, Sandbox: v.sandbox, Hidden: func() []string { return []string{secret} }})
				if err != nil {
					b.Skip(err)
				}
				defer c.Close()
			}
			for b.Loop() {
				p, err := Start(Config{Command: "true", Env: os.Environ(), Contain: c})
				if err != nil {
					b.Fatal(err)
				}
				if st := p.Exit(); st.Code != 0 {
					b.Fatalf("true: %+v", st)
				}
				p.Close()
			}
		})
	}
}

// TestSandboxUnprivileged: not root, the files are hidden through a user
// namespace (mapped to the user itself, as bubblewrap does), and the
// program cannot undo the mount. Runs a copy of the test binary as nobody.
func TestSandboxUnprivileged(t *testing.T) {
	if secret := os.Getenv("TERMHOST_PTY_UNPRIV_FILE"); secret != "" {
		c, err := NewContainment(ContainmentConfig{Sandbox: "on", Mechanism: MechanismSubreaper, Hidden: func() []string { return []string{secret} }})
		if err != nil {
			fmt.Println("no-sandbox:", err)
			os.Exit(0)
		}
		p, err := Start(Config{Command: "sh", Args: []string{"-c", fmt.Sprintf("cat %s; umount %s 2>&1; cat %s; id -u; echo end-of-test", secret, secret, secret)}, Env: os.Environ(), Contain: c})
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(2)
		}
		r := collect(p)
		p.Exit()
		<-r.done
		fmt.Print(r.String())
		os.Exit(0)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to become nobody")
	}
	dir, err := os.MkdirTemp("", "termhost-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "pty.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "credentials.json")
	os.WriteFile(secret, []byte("UNPRIV-SECRET"), 0o600)
	os.Chown(secret, 65534, 65534)
	cmd := exec.Command(bin, "-test.run", "^TestSandboxUnprivileged$")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TERMHOST_PTY_UNPRIV_FILE=" + secret, "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.HasPrefix(string(out), "no-sandbox:") {
		t.Skipf("unprivileged user namespaces are not available: %s", out)
	}
	t.Logf("as nobody: %s", out)
	if !strings.Contains(string(out), "end-of-test") || !strings.Contains(string(out), "65534") || strings.Contains(string(out), "UNPRIV-SECRET") {
		t.Fatalf("as nobody: %s", out)
	}
}

// TestForegroundIsTheProgram: under containment the terminal's foreground
// process group is the program's (the wrapper is outside the terminal's
// session), and Pid is the program, not the wrapper.
func TestForegroundIsTheProgram(t *testing.T) {
	for _, mech := range mechanisms(t) {
		t.Run(mech, func(t *testing.T) {
			c, err := containment(mech)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Start(Config{Command: "sh", Args: []string{"-c", "echo ready; sleep 1000"}, Env: os.Environ(), Contain: c})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			collect(p).until(t, "ready")
			if p.cmd.Process.Pid == p.Pid() {
				t.Fatal("Pid is the wrapper's")
			}
			if fg := p.foreground(); fg != p.Pid() {
				t.Fatalf("foreground process group %d, want the program's %d (wrapper %d)", fg, p.Pid(), p.cmd.Process.Pid)
			}
			if st, ok := readProcStat(p.Pid()); !ok || st.sid != p.Pid() {
				t.Fatalf("the program leads session %d, want its own", st.sid)
			}
		})
	}
}

// TestSandboxCoversAReplacedFile: a hidden file replaced by rename while
// a program runs (an editor saving credentials.json) is a new dentry the
// kernel uncovers; the wrapper covers it again.
func TestSandboxCoversAReplacedFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "credentials.json")
	os.WriteFile(f, []byte("OLD-SECRET"), 0o600)
	c, err := NewContainment(ContainmentConfig{Sandbox: "on", Mechanism: MechanismSubreaper, Hidden: func() []string { return []string{f} }})
	if err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	p, err := Start(Config{Command: "sh", Args: []string{"-c", fmt.Sprintf("cat %s; echo mid; sleep 1; cat %s; echo end-of-test", f, f)}, Env: os.Environ(), Contain: c})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := collect(p)
	r.until(t, "mid")
	os.WriteFile(f+".new", []byte("NEW-SECRET"), 0o600)
	if err := os.Rename(f+".new", f); err != nil {
		t.Fatal(err)
	}
	r.until(t, "end-of-test")
	if out := r.String(); strings.Contains(out, "SECRET") {
		t.Fatalf("a hidden file was read: %q", out)
	}
}

// TestWrapperStoppedByItsProgram: a program that stops its own wrapper
// (SIGSTOP to its parent) does not keep its daemon alive past Close, nor
// hang Exit.
func TestWrapperStoppedByItsProgram(t *testing.T) {
	for _, mech := range mechanisms(t) {
		t.Run(mech, func(t *testing.T) {
			c, err := containment(mech)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "pid")
			p, err := Start(Config{Command: "sh", Args: []string{"-c", "kill -STOP $PPID; " + daemonScript(file, "echo started; wait")}, Env: os.Environ(), Contain: c})
			if err != nil {
				t.Fatal(err)
			}
			collect(p).until(t, "started")
			pid := pidFrom(t, file)
			p.Close()
			done := make(chan link.ExitStatus)
			go func() { done <- p.Exit() }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Exit did not return within 5 s of Close")
			}
			gone(t, pid, "after Close")
		})
	}
}

// TestTouchesHidden: of a watched directory's events, only those that
// name a hidden path (or end the watch) send the wrapper to cover again.
func TestTouchesHidden(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(fd)
	wd, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF)
	if err != nil {
		t.Fatal(err)
	}
	names := map[int32]map[string]bool{int32(wd): {"credentials.json": true}}
	events := func() []byte {
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		if n <= 0 {
			t.Fatalf("no inotify event: %v", err)
		}
		return buf[:n]
	}
	os.WriteFile(filepath.Join(dir, "other-file-with-a-long-name.txt"), nil, 0o600)
	if touchesHidden(events(), names) {
		t.Fatal("an unrelated file counted as a hidden one")
	}
	os.WriteFile(filepath.Join(dir, "credentials.json.new"), nil, 0o600)
	os.Rename(filepath.Join(dir, "credentials.json.new"), filepath.Join(dir, "credentials.json"))
	if !touchesHidden(events(), names) {
		t.Fatal("a hidden file renamed into place went unnoticed")
	}
}

// laterKey runs a program under c that prints key each time it reads a
// line, checks that it reads key, has hidden add key (as a reload of the
// credentials naming a new key does), and reports whether the running
// program stops seeing it (within 10 s) after Rehide.
func laterKey(c *Containment, add func(), key, want string) (string, error) {
	p, err := Start(Config{Command: "sh", Args: []string{"-c", fmt.Sprintf(`while read -r n; do echo "B$n:"; cat %s; echo ":E$n"; done`, key)}, Env: os.Environ(), Contain: c})
	if err != nil {
		return "", err
	}
	defer p.Close()
	r := collect(p)
	// ask sends n and returns what the program printed of the key.
	ask := func(n int) (string, bool) {
		p.Write(fmt.Appendf(nil, "%d\r", n))
		begin, end := fmt.Sprintf("B%d:", n), fmt.Sprintf(":E%d", n)
		var got string
		ok := testutil.Poll(5*time.Second, func() bool {
			out := r.String()
			i := strings.LastIndex(out, begin)
			if i < 0 {
				return false
			}
			j := strings.Index(out[i:], end)
			if j < 0 {
				return false
			}
			got = out[i+len(begin) : i+j]
			return true
		})
		return got, ok
	}
	if got, ok := ask(1); !ok || !strings.Contains(got, want) {
		return "", fmt.Errorf("before the key was named, the program read %q (answered: %v); want %q", got, ok, want)
	}
	add()
	c.Rehide()
	for n := 2; n < 200; n++ {
		got, ok := ask(n)
		if !ok {
			return "", fmt.Errorf("the program stopped answering: %q", r.String())
		}
		if !strings.Contains(got, want) {
			return "hidden", nil
		}
		if n > 2 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return "readable", nil
}

// TestSandboxHidesPathsNamedLater (issue 33 item 6): a path added to the
// hidden ones while a program runs (a reload of the credentials named a
// key after the session started) is covered in that program's namespace
// too, not only for programs started later.
func TestSandboxHidesPathsNamedLater(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "id_later")
	os.WriteFile(key, []byte("LATER-KEY"), 0o600)
	var mu sync.Mutex
	hidden := []string{filepath.Join(dir, "credentials.json")}
	c, err := NewContainment(ContainmentConfig{Sandbox: "on", Mechanism: MechanismSubreaper, Hidden: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), hidden...)
	}})
	if err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	got, err := laterKey(c, func() { mu.Lock(); hidden = append(hidden, key); mu.Unlock() }, key, "LATER-KEY")
	if err != nil {
		t.Fatal(err)
	}
	if got != "hidden" {
		t.Fatalf("a key named after the program started is still readable to it (10 s after Rehide)")
	}
	if b, _ := os.ReadFile(key); string(b) != "LATER-KEY" {
		t.Fatalf("the key changed for termhost: %q", b)
	}
}

// TestSandboxHidesPathsNamedLaterUnprivileged: the same when termhost is
// not root (the wrapper is root of a user namespace, the program in a
// nested one). Runs a copy of the test binary as nobody.
func TestSandboxHidesPathsNamedLaterUnprivileged(t *testing.T) {
	if key := os.Getenv("TERMHOST_PTY_UNPRIV_LATER"); key != "" {
		var mu sync.Mutex
		var hidden []string
		c, err := NewContainment(ContainmentConfig{Sandbox: "on", Mechanism: MechanismSubreaper, Hidden: func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), hidden...)
		}})
		if err != nil {
			fmt.Println("no-sandbox:", err)
			os.Exit(0)
		}
		got, err := laterKey(c, func() { mu.Lock(); hidden = append(hidden, key); mu.Unlock() }, key, "UNPRIV-LATER")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("result:", got)
		os.Exit(0)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to become nobody")
	}
	dir, err := os.MkdirTemp("", "termhost-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "pty.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "id_later")
	os.WriteFile(key, []byte("UNPRIV-LATER"), 0o600)
	os.Chown(key, 65534, 65534)
	cmd := exec.Command(bin, "-test.run", "^TestSandboxHidesPathsNamedLaterUnprivileged$")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TERMHOST_PTY_UNPRIV_LATER=" + key, "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.HasPrefix(string(out), "no-sandbox:") {
		t.Skipf("unprivileged user namespaces are not available: %s", out)
	}
	if !strings.Contains(string(out), "result: hidden") {
		t.Fatalf("as nobody, a key named after the program started: %s", out)
	}
}

// TestTellHideFrames: later paths go in frames a pipe takes whole (at
// most PIPE_BUF bytes, unless one path alone is longer), which the
// wrapper reads back in order.
func TestTellHideFrames(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var paths []string
	for i := range 12 {
		paths = append(paths, "/"+strings.Repeat(string(rune('a'+i)), 1000))
	}
	long := "/" + strings.Repeat("z", 5000) // alone in its frame
	type frame struct {
		size  int
		paths []string
	}
	got := make(chan []frame, 1)
	go func() {
		var frames []frame
		in := bufio.NewReader(r)
		for {
			var n uint32
			if binary.Read(in, binary.BigEndian, &n) != nil {
				break
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(in, b); err != nil {
				break
			}
			var m moreOrders
			json.Unmarshal(b, &m)
			frames = append(frames, frame{4 + int(n), m.Hide})
		}
		got <- frames
	}()
	if n, err := tellHide(w, paths); err != nil || n != len(paths) {
		t.Fatalf("tellHide of %d paths: %d, %v", len(paths), n, err)
	}
	if n, err := tellHide(w, []string{long}); err != nil || n != 1 {
		t.Fatalf("tellHide of a long path: %d, %v", n, err)
	}
	w.Close()
	frames := <-got
	var all []string
	for i, f := range frames {
		if f.size > pipeAtomic && len(f.paths) > 1 {
			t.Errorf("frame %d: %d bytes with %d paths (a pipe takes at most %d whole)", i, f.size, len(f.paths), pipeAtomic)
		}
		all = append(all, f.paths...)
	}
	if len(frames) < 4 {
		t.Errorf("%d frames for 12 KB of paths and one of 5 KB", len(frames))
	}
	if want := append(append([]string(nil), paths...), long); !slices.Equal(all, want) {
		t.Fatalf("read back %d paths, want the %d sent in order", len(all), len(want))
	}
}
