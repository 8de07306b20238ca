package pty

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/testutil"
)

// Compile-time: a PTY is every kind of link a session can use.
var (
	_ link.Link           = (*PTY)(nil)
	_ link.WriteDeadliner = (*PTY)(nil)
	_ link.Resizer        = (*PTY)(nil)
	_ link.Signaler       = (*PTY)(nil)
	_ link.Exiter         = (*PTY)(nil)
	_ link.Stopper        = (*PTY)(nil)
)

func start(t *testing.T, cmd string, args ...string) *PTY {
	t.Helper()
	p, err := Start(Config{Command: cmd, Args: args, Env: append(os.Environ(), "TERM=xterm"), Contain: testContainment(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// reader collects a PTY's output in the background.
type reader struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan error
}

func collect(p *PTY) *reader {
	r := &reader{done: make(chan error, 1)}
	go func() {
		b := make([]byte, 32<<10)
		for {
			n, err := p.Read(b)
			r.mu.Lock()
			r.buf.Write(b[:n])
			r.mu.Unlock()
			if err != nil {
				r.done <- err
				return
			}
		}
	}()
	return r
}

func (r *reader) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// until waits (bounded) for the output to contain s.
func (r *reader) until(t *testing.T, s string) {
	t.Helper()
	if !testutil.Poll(10*time.Second, func() bool { return strings.Contains(r.String(), s) }) {
		t.Fatalf("output never contained %q; got %q", s, r.String())
	}
}

func TestEchoRoundTrip(t *testing.T) {
	p := start(t, "cat")
	r := collect(p)
	if _, err := p.Write([]byte("hello pty\r")); err != nil {
		t.Fatal(err)
	}
	r.until(t, "hello pty\r\nhello pty")
}

// TestOutputBeforeExitIsNotLost: a child that writes 1 MiB and exits at
// once: every byte arrives, then EOF, then the exit status.
func TestOutputBeforeExitIsNotLost(t *testing.T) {
	p := start(t, "sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x; exit 5")
	r := collect(p)
	select {
	case err := <-r.done:
		if err != io.EOF {
			t.Fatalf("read ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no EOF")
	}
	if n := strings.Count(r.String(), "x"); n != 1<<20 {
		t.Fatalf("got %d of %d bytes", n, 1<<20)
	}
	if st := p.Exit(); st.Code != 5 || st.Signal != "" {
		t.Fatalf("exit = %+v", st)
	}
}

func TestExitBySignal(t *testing.T) {
	p := start(t, "sh", "-c", "kill -TERM $$")
	collect(p)
	if st := p.Exit(); st.Code != -1 || st.Signal != "SIGTERM" {
		t.Fatalf("exit = %+v", st)
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(Config{Command: "no-such-program-xyz"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing program: %v", err)
	}
	if _, err := Start(Config{Command: "sh", Dir: "/no/such/dir"}); err == nil || !strings.Contains(err.Error(), "/no/such/dir") {
		t.Fatalf("missing dir: %v", err)
	}
}

// TestWriteDeadline: a child that never reads its input cannot hang a
// writer past its deadline.
func TestWriteDeadline(t *testing.T) {
	// Raw mode: a full input queue holds the writer back (in canonical mode
	// the line discipline drops what does not fit instead).
	p := start(t, "sh", "-c", "stty raw -echo; echo ready; sleep 100")
	r := collect(p)
	r.until(t, "ready")
	p.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	start := time.Now()
	n, err := p.Write(bytes.Repeat([]byte("y"), 1<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n >= 1<<20 {
		t.Fatalf("write: n=%d err=%v", n, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("write took %v", took)
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	p := start(t, "sleep", "100")
	r := collect(p)
	p.Close()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatal("read not unblocked by Close")
	}
	if st := p.Exit(); st.Signal != "SIGKILL" {
		t.Fatalf("exit after close: %+v", st)
	}
}

func TestResize(t *testing.T) {
	p := start(t, "sh", "-c", `trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done`)
	r := collect(p)
	r.until(t, "ready")
	if err := p.Resize(100, 33); err != nil {
		t.Fatal(err)
	}
	r.until(t, "33 100")
	if err := p.Resize(0, 5); err == nil {
		t.Fatal("a 0-column window was accepted")
	}
}

// TestInterruptReachesForegroundJob: ^C as a signal goes to the job in the
// foreground of an interactive shell, not to the shell.
func TestInterruptReachesForegroundJob(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	p := start(t, "bash", "--norc", "--noprofile", "-i")
	r := collect(p)
	p.Write([]byte("PS1='P> '\r"))
	r.until(t, "P> ")
	p.Write([]byte("sleep 30\r"))
	if !testutil.Poll(10*time.Second, func() bool { fg := p.foreground(); return fg > 0 && fg != p.Pid() }) {
		t.Fatal("sleep never became the foreground job")
	}
	// The job dies, the shell does not: it runs the next command. (bash
	// makes the job the foreground group just before the child execs; an
	// interrupt landing in between is lost, so it is repeated until seen.)
	p.Write([]byte("echo status-$?\r"))
	if !testutil.Poll(10*time.Second, func() bool {
		if err := p.Signal("interrupt"); err != nil {
			t.Fatal(err)
		}
		return testutil.Poll(200*time.Millisecond, func() bool { return strings.Contains(r.String(), "status-130") })
	}) {
		t.Fatalf("the interrupt never ended the job: %q", r.String())
	}
	if err := p.Signal("bogus"); err == nil || !strings.Contains(err.Error(), "interrupt") {
		t.Fatalf("unknown signal: %v", err)
	}
}

// TestStopKillsWhatIgnoresTerm: SIGTERM ignored, SIGKILL after termWait.
func TestStopKillsWhatIgnoresTerm(t *testing.T) {
	p := start(t, "sh", "-c", "trap '' TERM HUP; echo ready; while :; do sleep 0.1; done")
	r := collect(p)
	r.until(t, "ready")
	start := time.Now()
	st := p.Stop(context.Background(), 100*time.Millisecond, 300*time.Millisecond)
	if st.Signal != "SIGKILL" {
		t.Fatalf("exit = %+v", st)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stop took %v", took)
	}
	if _, err := p.Write([]byte("x")); err == nil {
		t.Fatal("write after stop succeeded")
	}
}

// TestStopLeavesNothing: jobs a shell put in the background, in other
// process groups, nohup'd, do not survive the session.
func TestStopLeavesNothing(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	p := start(t, "bash", "--norc", "--noprofile", "-i")
	r := collect(p)
	p.Write([]byte("sleep 1000 & nohup sleep 1001 >/dev/null 2>&1 & (trap '' HUP TERM; exec sleep 1002) & echo started\r"))
	r.until(t, "started")
	if !testutil.Poll(5*time.Second, func() bool { return len(sessionMembers(p.Pid())) >= 4 }) {
		t.Fatalf("session members: %v", sessionMembers(p.Pid()))
	}
	p.Stop(context.Background(), 100*time.Millisecond, 300*time.Millisecond)
	if !testutil.Poll(5*time.Second, func() bool { return len(liveMembers(p.Pid())) == 0 }) {
		t.Fatalf("left behind: %v", liveMembers(p.Pid()))
	}
}

// liveMembers are the session's processes that are not zombies.
func liveMembers(sid int) []int {
	var out []int
	for _, pid := range sessionMembers(sid) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && s[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// TestStopGivesARunningCommandGrace: a foreground command that finishes
// within the grace is not killed.
func TestStopGivesARunningCommandGrace(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	p := start(t, "bash", "--norc", "--noprofile", "-i")
	r := collect(p)
	p.Write([]byte("sleep 0.3; echo finished-cleanly\r"))
	if !testutil.Poll(10*time.Second, func() bool { fg := p.foreground(); return fg > 0 && fg != p.Pid() }) {
		t.Fatal("no foreground job")
	}
	p.Stop(context.Background(), 5*time.Second, time.Second)
	r.until(t, "finished-cleanly")
}

func TestManyConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Go(func() {
			p, err := Start(Config{Command: "cat", Env: os.Environ()})
			if err != nil {
				t.Error(err)
				return
			}
			r := collect(p)
			msg := "n" + strconv.Itoa(i) + "\r"
			p.Write([]byte(msg))
			if !testutil.Poll(10*time.Second, func() bool { return strings.Count(r.String(), "n"+strconv.Itoa(i)) >= 2 }) {
				t.Errorf("pty %d: %q", i, r.String())
			}
			p.Stop(context.Background(), 0, 200*time.Millisecond)
		})
	}
	wg.Wait()
}

// TestChildDiesWithServer: when the process holding the PTY is killed
// outright, the program under it dies too.
func TestChildDiesWithServer(t *testing.T) {
	if os.Getenv("TERMHOST_PTY_HOLDER") != "" {
		p, err := Start(Config{Command: "sh", Args: []string{"-c", "echo $$; sleep 1000"}, Env: os.Environ()})
		if err != nil {
			os.Exit(2)
		}
		b := make([]byte, 64)
		n, _ := p.Read(b)
		os.Stdout.Write(b[:n])
		select {} // wait to be killed
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChildDiesWithServer$")
	cmd.Env = append(os.Environ(), "TERMHOST_PTY_HOLDER=1")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	n, _ := out.Read(b)
	child, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("holder said %q", b[:n])
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !testutil.Poll(5*time.Second, func() bool { return syscall.Kill(child, 0) != nil }) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("child %d outlived its holder", child)
	}
}

// TestIgnoredSignalsAreNotInherited: a server started with SIGINT and
// SIGHUP ignored (in the background, under nohup) still starts programs
// that ^C and a hang-up reach.
func TestIgnoredSignalsAreNotInherited(t *testing.T) {
	if os.Getenv("TERMHOST_PTY_IGNORED") != "" {
		p, err := Start(Config{Command: "sh", Args: []string{"-c", "grep -E '^SigIgn' /proc/self/status"}, Env: os.Environ()})
		if err != nil {
			os.Exit(2)
		}
		b, _ := io.ReadAll(p)
		os.Stdout.Write(b)
		os.Exit(0)
	}
	cmd := exec.Command("sh", "-c", `trap '' INT HUP; exec "$0" -test.run '^TestIgnoredSignalsAreNotInherited$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "TERMHOST_PTY_IGNORED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		t.Fatalf("child said %q", out)
	}
	mask, err := strconv.ParseUint(f[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if mask&(1<<(syscall.SIGINT-1)) != 0 || mask&(1<<(syscall.SIGHUP-1)) != 0 {
		t.Fatalf("the program started with SIGINT or SIGHUP ignored: SigIgn %s", f[1])
	}
}
