// Package pty runs a local program under a pseudo-terminal: the link of a
// PTY session. The child is the leader of its own session and process
// group with the PTY as its controlling terminal; the master side is
// non-blocking and registered with Go's poller, so reads and writes take
// deadlines and Close unblocks them.
//
// What a PTY link can do beyond moving bytes: resize the window (the child
// gets SIGWINCH), deliver signals (an interrupt goes to the terminal's
// foreground process group, as ^C would), report how the child exited, and
// stop it gracefully (SPEC PTY-3). Nothing it started outlives it: a stop or
// close kills the child's whole session, jobs in other process groups
// included.
//
// termhost starts every program under a Containment (contain.go): a
// wrapper process (wrap.go, this executable run again) that is a child
// subreaper, ends everything the program started, daemons included, when
// the program or its session ends or termhost dies, and where the machine
// allows runs it in a session cgroup (cgroup.go) and a mount namespace
// that hides termhost's own files (SPEC TRUST-2, TRUST-3). The program is
// still the leader of the terminal's session, so everything above holds
// for it as without the wrapper.
package pty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/rawio"
)

// Config is the program to start and its terminal.
type Config struct {
	Command string
	Args    []string
	Dir     string
	Env     []string // the complete environment
	Cols    int      // default 80
	Rows    int      // default 24
	// Contain starts the program under containment (contain.go); nil
	// starts it directly, as a child of this process.
	Contain *Containment
}

// PTY is a running program and the master side of its terminal.
type PTY struct {
	f   *os.File    // master, non-blocking
	raw *rawio.File // f with raw system calls (internal/rawio); nil: through f itself
	cmd *exec.Cmd
	pid int

	exited chan struct{} // closed once the child is reaped
	status link.ExitStatus

	// Under containment cmd is the wrapper and pid the program it
	// started; closing ctl tells the wrapper to kill everything below it.
	ctl *os.File
	cg  *cgroup // the session cgroup, or nil
	// end is how the program ended, as the wrapper reported it.
	end func() (link.ExitStatus, bool)

	mu        sync.Mutex
	inputDone bool      // Stop refuses further input
	drainEnd  time.Time // reads end by then once the child has exited
	closed    bool
}

// unignore makes sure the children get SIGINT and SIGHUP at their default:
// a signal ignored when termhost started (run in the background, or under
// nohup) would stay ignored in every program it starts, and neither ^C nor
// a hang-up would reach them. Catching it (into a channel nobody reads)
// resets it for children and still ignores it here.
var unignore sync.Once

// Start's errors that are the caller's input, not a failure of the
// machine: a command that cannot be found or run, a working directory
// that is not one. errors.Is tells them apart.
var (
	ErrNoProgram = errors.New("no such program")
	ErrBadDir    = errors.New("no such working directory")
)

// inputError is one of those, with its own words.
type inputError struct {
	kind error
	msg  string
}

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Is(target error) bool { return target == e.kind }

// Start starts cfg.Command under a new PTY.
func Start(cfg Config) (*PTY, error) {
	if cfg.Command == "" {
		return nil, errors.New("no command given")
	}
	unignore.Do(func() {
		for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGHUP} {
			if signal.Ignored(sig) {
				signal.Notify(make(chan os.Signal, 1), sig)
			}
		}
	})
	path, err := exec.LookPath(cfg.Command)
	if err != nil {
		if strings.Contains(cfg.Command, "/") {
			return nil, &inputError{ErrNoProgram, fmt.Sprintf("command %q: %v", cfg.Command, errors.Unwrap(err))}
		}
		return nil, &inputError{ErrNoProgram, fmt.Sprintf("command %q not found (looked in PATH)", cfg.Command)}
	}
	if cfg.Dir != "" {
		if st, err := os.Stat(cfg.Dir); err != nil {
			return nil, &inputError{ErrBadDir, fmt.Sprintf("working directory %q: %v", cfg.Dir, errors.Unwrap(err))}
		} else if !st.IsDir() {
			return nil, &inputError{ErrBadDir, fmt.Sprintf("working directory %q is not a directory", cfg.Dir)}
		}
	}
	cols, rows := cfg.Cols, cfg.Rows
	if cols <= 0 {
		cols = 80
	}
	if rows <= 0 {
		rows = 24
	}
	ws := &cpty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}
	if cfg.Contain != nil {
		return cfg.Contain.start(path, cfg, ws)
	}
	cmd := exec.Command(path, cfg.Args...)
	cmd.Args[0] = cfg.Command
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	// A session of its own with the PTY as controlling terminal; SIGKILL
	// if termhost dies (the kernel's hangup of the PTY reaches the rest).
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true, Pdeathsig: syscall.SIGKILL}
	master, err := cpty.StartWithAttrs(cmd, ws, attrs)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	f, err := pollable(master)
	if err != nil {
		master.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	p := &PTY{f: f, raw: rawio.NewSleepingFile(f), cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	go p.reap()
	return p, nil
}

// pollable returns a non-blocking duplicate of the master, registered with
// the runtime poller (so deadlines work), and closes the original.
func pollable(master *os.File) (*os.File, error) {
	defer master.Close()
	rc, err := master.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.Dup(int(fd)) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup the PTY master: %w", derr)
	}
	unix.CloseOnExec(nfd)
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("PTY master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(nfd), "/dev/ptmx"), nil
}

// reap waits for the child and records how it ended. Output written just
// before the exit is still in the terminal: reads drain it (up to 2 s if a
// process left behind keeps writing), then end.
func (p *PTY) reap() {
	err := p.cmd.Wait()
	st := link.ExitStatus{Code: p.cmd.ProcessState.ExitCode()}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st = link.ExitStatus{Code: -1, Signal: unix.SignalName(ws.Signal())}
	} else if err != nil && st.Code < 0 {
		st.Code = -1
	}
	if p.end != nil {
		if end, ok := p.end(); ok {
			st = end
		}
	}
	p.status = st
	if p.cg != nil {
		// The wrapper killed what it could see; the cgroup holds what
		// escaped it (a wrapper killed by its own program).
		go p.cg.remove()
	}
	p.mu.Lock()
	p.drainEnd = time.Now().Add(drainFor)
	p.mu.Unlock()
	close(p.exited)
	// Wake a Read that waits for output which will not come.
	p.f.SetReadDeadline(time.Now().Add(drainQuiet))
}

const (
	wrapperGrace = time.Second
	drainFor     = 2 * time.Second
	drainQuiet   = 50 * time.Millisecond
)

// Pid is the child's process id (also its process group and session id).
func (p *PTY) Pid() int { return p.pid }

// Read returns the child's output. Once the child has exited and its
// output is drained it returns io.EOF.
func (p *PTY) Read(b []byte) (int, error) {
	for {
		n, err := p.read(b)
		if n > 0 {
			return p.more(b, n), nil
		}
		switch {
		case errors.Is(err, syscall.EIO):
			return 0, io.EOF // the last holder of the terminal closed it
		case errors.Is(err, os.ErrDeadlineExceeded):
			select {
			case <-p.exited:
			default:
				return 0, err
			}
			p.mu.Lock()
			end := p.drainEnd
			p.mu.Unlock()
			if p.pending() > 0 && time.Now().Before(end) {
				p.f.SetReadDeadline(time.Now().Add(drainQuiet))
				continue
			}
			return 0, io.EOF
		}
		return n, err
	}
}

// more appends to b[:n] what the terminal already holds, without waiting:
// a PTY hands out at most about 4 KiB per read, and every read is a walk
// through the plugins, so a burst is taken in as few reads as the buffer
// allows. It reads only while the terminal says it holds bytes
// (TIOCINQ): a read that finds the buffer empty does not return at once
// but waits in the kernel for the tty's buffer work to hand over what the
// program wrote since (n_tty_read flushes it), holding the pump, and its
// processor, while the screen could be taking in what was read. Without
// those waits a program flooding its screen streams about a fifth faster
// (BENCHMARKS "Issue 19, closing").
func (p *PTY) more(b []byte, n int) int {
	for n < len(b) {
		if p.pending() <= 0 {
			break
		}
		m := p.readNow(b[n:])
		if m <= 0 {
			break
		}
		n += m
	}
	return n
}

// readNow reads what the terminal holds now, never waiting.
func (p *PTY) readNow(b []byte) int {
	if p.raw != nil {
		return p.raw.ReadNow(b)
	}
	rc, err := p.f.SyscallConn()
	if err != nil {
		return 0
	}
	m := 0
	rc.Read(func(fd uintptr) bool {
		m, _ = unix.Read(int(fd), b)
		return true // never wait: only what is there now
	})
	return m
}

// read reads the master, with a raw system call where it can
// (internal/rawio: a scheduler-visible one wakes the runtime's monitor
// after every idle moment).
func (p *PTY) read(b []byte) (int, error) {
	if p.raw == nil {
		return p.f.Read(b)
	}
	return p.raw.Read(b)
}

// pending is how many bytes of output wait in the terminal.
func (p *PTY) pending() int {
	if p.raw != nil {
		return p.raw.Pending() // no allocation: more asks once per read
	}
	n := 0
	p.control(func(fd int) {
		n, _ = unix.IoctlGetInt(fd, unix.TIOCINQ)
	})
	return n
}

func (p *PTY) control(f func(fd int)) error {
	rc, err := p.f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { f(int(fd)) })
}

// ErrInputStopped: the program is being stopped; it takes no more input.
var ErrInputStopped = errors.New("the program is being stopped and takes no more input")

// Write types b into the terminal.
func (p *PTY) Write(b []byte) (int, error) {
	if p.inputStopped() {
		return 0, ErrInputStopped
	}
	if p.raw == nil {
		return p.f.Write(b)
	}
	return p.raw.Write(b)
}

// WriteNow writes what of b the terminal's input queue takes now (see
// link.NowWriter); where raw system calls are not used it writes nothing.
func (p *PTY) WriteNow(b []byte) (int, error) {
	if p.inputStopped() {
		return 0, ErrInputStopped
	}
	if p.raw == nil {
		return 0, nil
	}
	return p.raw.WriteNow(b)
}

// inputStopped says whether Stop has ended the input.
func (p *PTY) inputStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inputDone
}

// SetWriteDeadline bounds Writes (a program that stops reading its input
// fills the terminal's input queue, about 4 KiB).
func (p *PTY) SetWriteDeadline(t time.Time) error { return p.f.SetWriteDeadline(t) }

// Resize sets the window size; the child gets SIGWINCH.
func (p *PTY) Resize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > 0xffff || rows > 0xffff {
		return fmt.Errorf("window %dx%d: cols and rows must be between 1 and 65535", cols, rows)
	}
	var ierr error
	if err := p.control(func(fd int) {
		ierr = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	}); err != nil {
		return err
	}
	return ierr
}

// Echoes reports whether what is typed may be shown: the terminal echoes
// it (ECHO), or a program reads it raw (no ICANON) and echoes it itself,
// as a line editor (readline, zle) or a full-screen program does. A
// program reading a password (getpass, read -s) has ECHO off and ICANON
// on.
func (p *PTY) Echoes() (bool, error) {
	var t *unix.Termios
	var ierr error
	if err := p.control(func(fd int) { t, ierr = unix.IoctlGetTermios(fd, unix.TCGETS) }); err != nil {
		return false, err
	}
	if ierr != nil {
		return false, ierr
	}
	return t.Lflag&unix.ECHO != 0 || t.Lflag&unix.ICANON == 0, nil
}

var signals = map[string]syscall.Signal{
	"interrupt": syscall.SIGINT, "terminate": syscall.SIGTERM, "kill": syscall.SIGKILL,
	"hangup": syscall.SIGHUP, "quit": syscall.SIGQUIT, "suspend": syscall.SIGTSTP,
}

// Signal delivers a signal: "interrupt" to the terminal's foreground
// process group (what ^C does), the others to the child's process group.
func (p *PTY) Signal(name string) error {
	sig, ok := signals[name]
	if !ok {
		return fmt.Errorf("unknown signal %q: one of interrupt, terminate, kill, hangup, quit, suspend", name)
	}
	select {
	case <-p.exited:
		return errors.New("the process has exited")
	default:
	}
	pgrp := p.pid
	if name == "interrupt" {
		if fg := p.foreground(); fg > 0 {
			pgrp = fg
		}
	}
	if err := unix.Kill(-pgrp, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %s to process group %d: %w", name, pgrp, err)
	}
	return nil
}

// foreground is the terminal's foreground process group, or 0.
func (p *PTY) foreground() int {
	pg := 0
	p.control(func(fd int) {
		if v, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			pg = v
		}
	})
	return pg
}

// Exit waits until the child has exited and been reaped.
func (p *PTY) Exit() link.ExitStatus {
	<-p.exited
	return p.status
}

// Stop ends the program gracefully (SPEC PTY-3): input stops at once; a
// command running in the foreground (another process group than the
// child's) gets up to grace to finish; then the child's process group gets
// SIGHUP and SIGTERM, and termWait later SIGKILL, with every other process
// of its session. ctx ending skips to SIGKILL. It returns the exit status
// once the child is reaped.
func (p *PTY) Stop(ctx context.Context, grace, termWait time.Duration) link.ExitStatus {
	p.mu.Lock()
	p.inputDone = true
	p.mu.Unlock()
	if !p.waitExit(ctx, grace, func() bool { fg := p.foreground(); return fg == 0 || fg == p.pid }) {
		unix.Kill(-p.pid, syscall.SIGHUP)
		unix.Kill(-p.pid, syscall.SIGTERM)
		if fg := p.foreground(); fg > 0 && fg != p.pid {
			unix.Kill(-fg, syscall.SIGTERM)
		}
		if !p.waitExit(ctx, termWait, nil) {
			unix.Kill(-p.pid, syscall.SIGKILL)
		}
	}
	p.Close()
	return p.Exit()
}

// waitExit waits up to d (and while ctx lasts) for the child to exit, or
// for done to hold; it reports whether the child exited.
func (p *PTY) waitExit(ctx context.Context, d time.Duration, done func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if done != nil && done() {
			select {
			case <-p.exited:
				return true
			default:
				return false
			}
		}
		select {
		case <-p.exited:
			return true
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// Close kills the child's process group and every process left in its
// session, and closes the terminal. The child is reaped in the background
// (Exit waits for it). Safe to call more than once.
func (p *PTY) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed, p.inputDone = true, true
	p.mu.Unlock()
	unix.Kill(-p.pid, syscall.SIGKILL)
	killSession(p.pid)
	if p.ctl != nil {
		p.ctl.Close() // the wrapper kills its whole subtree, then reports
		// The cgroup is killed once the wrapper is reaped (reap). A
		// wrapper that does not end (its program stopped it) is woken,
		// the cgroup killed, and at last the wrapper itself.
		go func() {
			for _, step := range []func(){
				func() { p.cg.kill(); p.cmd.Process.Signal(syscall.SIGCONT) },
				func() { killBelow(p.cmd.Process.Pid); p.cmd.Process.Kill() },
			} {
				select {
				case <-p.exited:
					return
				case <-time.After(wrapperGrace):
					step()
				}
			}
		}()
	}
	err := p.f.Close()
	go func() {
		// A process that joined the session between the scan and the
		// child's exit is caught here.
		<-p.exited
		killSession(p.pid)
	}()
	return err
}

// killSession SIGKILLs every process whose session id is sid.
func killSession(sid int) {
	for _, pid := range sessionMembers(sid) {
		unix.Kill(pid, syscall.SIGKILL)
	}
}

// sessionMembers lists the processes of session sid (from /proc).
func sessionMembers(sid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok && st.sid == sid {
			out = append(out, pid)
		}
	}
	return out
}

// procStat is what termhost reads of /proc/<pid>/stat.
type procStat struct {
	state           byte
	ppid, pgrp, sid int
}

// readProcStat reads /proc/<pid>/stat. The command name is in
// parentheses and may hold anything: the fields after the last ')' are
// state, ppid, pgrp, session.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	sid, err3 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, sid: sid}, true
}
