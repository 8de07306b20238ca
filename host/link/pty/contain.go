package pty

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/termhost/termhost/internal/warm"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/rawio"
)

// Containment is how termhost starts programs so that nothing they start
// outlives them and they cannot read termhost's secret files (SPEC
// TRUST-2, TRUST-3). Every program runs under a wrapper process (wrap.go)
// that is a child subreaper and watches a pipe from termhost; where the
// machine allows, the wrapper and everything below it also run in a
// cgroup v2 of their own, ended at once by cgroup.kill, and in a mount
// namespace where the credentials file and the keys it names read empty.
// NewContainment measures once what the machine allows.
type Containment struct {
	mechanism string // MechanismCgroup or MechanismSubreaper
	cgroupWhy string // why not a cgroup (subreaper only)
	cgroupDir string // termhost's own parent cgroup of the session cgroups

	sandbox    bool
	sandboxWhy string // why not (when !sandbox)
	nsFlags    uintptr
	userns     bool
	hidden     func() []string

	probed  chan struct{} // closed once the fields above are measured
	begin   *warm.Gate    // opened by the first start (the probes wait for it)
	closing atomic.Bool

	exe string // this executable, run again as the wrapper
	seq atomic.Uint64

	// The programs running in a namespace of their own, each with the
	// paths its wrapper hides: a path added to Hidden later (a reload of
	// the credentials named another key) is sent to them (Rehide), by a
	// look once a second while any runs (rehiding).
	liveMu   sync.Mutex
	live     map[*PTY]*sandboxed
	rehiding bool
	log      *slog.Logger
}

// sandboxed is a program running in a namespace of its own: the paths its
// wrapper was told to hide.
type sandboxed struct {
	sent   map[string]bool
	broken bool // a later order was cut short: its wrapper reads no more
}

// rehideEvery is how often the hidden paths are asked again while a
// sandboxed program runs.
const rehideEvery = time.Second

// The containment mechanisms.
const (
	MechanismCgroup    = "cgroup"
	MechanismSubreaper = "subreaper"
)

// ContainmentConfig says what to try.
type ContainmentConfig struct {
	// Mechanism: "auto" (or ""): a cgroup where one can be created, else a
	// subreaper; "cgroup": a cgroup or an error; "subreaper": never a
	// cgroup.
	Mechanism string
	// Sandbox: "auto" (or ""): hide the files where the machine allows;
	// "on": hide them or fail; "off": do not try.
	Sandbox string
	// Hidden lists the paths programs must not read, asked at every start
	// (a reloaded credentials file may name other keys).
	Hidden func() []string
	// Begin holds the probes of an "auto" setting back until it opens
	// (nil: at once), so that they do not share the cores with a client's
	// first requests; the first program start opens it.
	Begin  *warm.Gate
	Logger *slog.Logger
}

// NewContainment tries what cfg asks for and logs what it got. It fails
// only when cfg insists ("cgroup", sandbox "on") on what cannot be had.
func NewContainment(cfg ContainmentConfig) (*Containment, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// /proc/self/exe, not the path: it still runs this binary after an
	// upgrade replaced or removed the file.
	c := &Containment{hidden: cfg.Hidden, exe: "/proc/self/exe", probed: make(chan struct{}), live: map[*PTY]*sandboxed{}, log: log}
	if c.hidden == nil {
		c.hidden = func() []string { return nil }
	}
	switch cfg.Sandbox {
	case "", "auto", "on", "off":
	default:
		return nil, fmt.Errorf("sandbox %q: expected auto, on or off", cfg.Sandbox)
	}
	switch cfg.Mechanism {
	case "", "auto", MechanismCgroup, MechanismSubreaper:
	default:
		return nil, fmt.Errorf("containment %q: expected auto, cgroup or subreaper", cfg.Mechanism)
	}
	// What the user insists on is probed before termhost serves, so that
	// it stops at once when the machine cannot give it. Otherwise the
	// probes (each starts the wrapper once, some tens of milliseconds) run
	// beside the client's first requests, and the first program waits for
	// them.
	if cfg.Sandbox == "on" || cfg.Mechanism == MechanismCgroup {
		err := c.probe(cfg, log)
		close(c.probed)
		return c, err
	}
	c.begin = cfg.Begin
	go func() {
		defer close(c.probed)
		<-cfg.Begin.Done()
		if c.closing.Load() {
			return // closed before anything needed it: nothing to measure
		}
		c.probe(cfg, log) // auto: it cannot fail, only choose
	}()
	return c, nil
}

// probe measures what the machine allows of what cfg asks for and logs
// what it got.
func (c *Containment) probe(cfg ContainmentConfig, log *slog.Logger) error {
	switch cfg.Sandbox {
	case "", "auto", "on":
		if err := c.probeSandbox(); err != nil {
			if cfg.Sandbox == "on" {
				return fmt.Errorf("sandbox on: the credentials file and keys cannot be hidden from programs: %w", err)
			}
			c.sandboxWhy = err.Error()
		}
	case "off":
		c.sandboxWhy = "turned off (--sandbox=off)"
	}
	switch cfg.Mechanism {
	case "", "auto", MechanismCgroup:
		if err := c.probeCgroup(); err != nil {
			if cfg.Mechanism == MechanismCgroup {
				return fmt.Errorf("containment cgroup: %w", err)
			}
			c.mechanism, c.cgroupWhy = MechanismSubreaper, err.Error()
		} else {
			c.mechanism = MechanismCgroup
		}
	case MechanismSubreaper:
		c.mechanism, c.cgroupWhy = MechanismSubreaper, "subreaper asked for (--containment=subreaper)"
	}
	if c.sandbox {
		how := "mount namespace"
		if c.userns {
			how = "mount namespace in a user namespace: setuid programs such as sudo do not gain privileges in them; --sandbox=off if you need that"
		}
		log.Info("sandbox: credentials file and keys hidden from programs (" + how + ")")
	} else {
		log.Warn("sandbox: the credentials file and keys cannot be hidden from programs started by termhost; they can read what your user can read", "reason", c.sandboxWhy)
	}
	if c.mechanism == MechanismCgroup {
		log.Info("containment: each program and everything it starts run in a cgroup of their own, ended by cgroup.kill", "cgroup", c.cgroupDir)
	} else {
		log.Info("containment: each program runs under a child subreaper that ends everything it started (no cgroup)", "reason", c.cgroupWhy)
	}
	return nil
}

// Mechanism is MechanismCgroup or MechanismSubreaper.
func (c *Containment) Mechanism() string { c.measured(); return c.mechanism }

// measured lets the probes run if they wait, and waits for them.
func (c *Containment) measured() {
	c.begin.Open()
	<-c.probed
}

// Sandboxed reports whether programs run without access to the hidden
// paths, and if not, why.
func (c *Containment) Sandboxed() (bool, string) {
	c.measured()
	return c.sandbox, c.sandboxWhy
}

// Close removes termhost's parent cgroup (once the session cgroups are
// gone).
func (c *Containment) Close() error {
	if c == nil {
		return nil
	}
	c.closing.Store(true)
	c.measured()
	if c.cgroupDir == "" {
		return nil
	}
	var err error
	for i := 0; i < 25; i++ {
		if err = os.Remove(c.cgroupDir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// probeSandbox starts the wrapper once in a new mount namespace (and a
// user namespace when not root) and checks that a file it hides reads
// empty.
func (c *Containment) probeSandbox() error {
	c.nsFlags = syscall.CLONE_NEWNS
	if os.Geteuid() != 0 {
		c.nsFlags |= syscall.CLONE_NEWUSER
		c.userns = true
	}
	f, err := os.CreateTemp("", "termhost-sandbox-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	f.WriteString("visible")
	f.Close()
	c.sandbox = true // for the probe's start
	_, err = c.runProbe(orders{Probe: true, Hide: []string{f.Name()}}, -1)
	if err != nil {
		c.sandbox, c.nsFlags, c.userns = false, 0, false
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EACCES) {
			return fmt.Errorf("the kernel refused a new mount namespace (%v): unprivileged user namespaces are off (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, or an AppArmor restriction) or a seccomp profile forbids them", err)
		}
		return err
	}
	return nil
}

// probeCgroup finds the cgroup v2 hierarchy and termhost's place in it,
// creates termhost's parent cgroup there and starts the wrapper once in a
// session cgroup below it.
func (c *Containment) probeCgroup() error {
	mount, err := cgroup2Mount()
	if err != nil {
		return err
	}
	own, err := ownCgroup()
	if err != nil {
		return err
	}
	base := filepath.Join(mount, own)
	if _, err := os.Stat(filepath.Join(base, "cgroup.kill")); err != nil && own != "/" {
		return errors.New("no cgroup.kill (Linux 5.14 or later is needed)")
	}
	removeStale(base)
	dir := filepath.Join(base, "termhost-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cannot create a cgroup under termhost's own (%s): %w", base, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		os.Remove(dir)
		return errors.New("no cgroup.kill (Linux 5.14 or later is needed)")
	}
	c.cgroupDir = dir
	cg, err := c.newCgroup()
	if err == nil {
		_, err = c.runProbe(orders{Probe: true}, cg.fd)
		cg.close()
	}
	if err != nil {
		c.cgroupDir = ""
		os.Remove(dir)
		return fmt.Errorf("cannot start a process in a new cgroup: %w", err)
	}
	return nil
}

// runProbe starts the wrapper with o and waits for its report.
func (c *Containment) runProbe(o orders, cgroupFD int) (int, error) {
	cmd, ctl, rep, err := c.startWrapper(nil, cgroupFD)
	if err != nil {
		return 0, err
	}
	defer func() {
		ctl.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	defer rep.Close()
	pid, _, err := c.handOver(ctl, rep, cmd.Process.Pid, o)
	return pid, err
}

// startWrapper starts the wrapper process with the PTY's terminal side
// (nil: /dev/null) on fd 3 and the two pipes on 4 and 5; it returns the
// orders pipe (termhost's end) and the report pipe.
func (c *Containment) startWrapper(tty *os.File, cgroupFD int) (*exec.Cmd, *os.File, *os.File, error) {
	if tty == nil {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, nil, err
		}
		defer null.Close()
		tty = null
	}
	ordersR, ordersW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		ordersR.Close()
		ordersW.Close()
		return nil, nil, nil, err
	}
	cmd := exec.Command(c.exe)
	cmd.Args = []string{wrapperArg0}
	cmd.Env = []string{wrapperMarker + "=1"}
	cmd.Stderr = os.Stderr // a crash of the wrapper is worth seeing in termhost's log
	cmd.ExtraFiles = []*os.File{tty, ordersR, reportW}
	// A session of its own: a ^C at termhost's terminal does not reach it.
	attr := &syscall.SysProcAttr{Setsid: true}
	if c.sandbox {
		if c.userns {
			// A launcher makes the namespaces (wrap.go, launcherMain).
			cmd.Env = []string{wrapperMarker + "=userns"}
		} else {
			attr.Cloneflags = c.nsFlags
		}
	}
	if cgroupFD >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, cgroupFD
	}
	cmd.SysProcAttr = attr
	err = cmd.Start()
	ordersR.Close()
	reportW.Close()
	if err != nil {
		ordersW.Close()
		reportR.Close()
		return nil, nil, nil, err
	}
	return cmd, ordersW, reportR, nil
}

// handOver writes the orders and reads the wrapper's first report
// (bounded); the reader returned holds the rest.
func (c *Containment) handOver(ctl, rep *os.File, wrapper int, o orders) (int, *bufio.Reader, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return 0, nil, err
	}
	// The program may stop its wrapper (SIGSTOP to its parent) before the
	// wrapper has reported: wake it while waiting. Under a launcher (see
	// startWrapper) the wrapper is below it, found in /proc; otherwise it
	// is the process started.
	launched := c.sandbox && c.userns
	waiting := make(chan struct{})
	defer close(waiting)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-waiting:
				return
			case <-t.C:
				pids := []int{wrapper}
				if launched {
					pids = append(pids, descendantsOf(wrapper)...)
				}
				for _, pid := range pids {
					if st, ok := readProcStat(pid); ok && (st.state == 'T' || st.state == 't') && isWrapper(pid) {
						unix.Kill(pid, unix.SIGCONT)
					}
				}
			}
		}
	}()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	// The orders can be larger than a pipe holds: the wrapper reads while
	// this writes.
	wrote := make(chan error, 1)
	go func() {
		_, err := ctl.Write(append(n[:], b...))
		wrote <- err
	}()
	rep.SetReadDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(rep)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, nil, errors.New("the program's wrapper did not answer within 10 s")
		}
		if werr := <-wrote; werr != nil {
			return 0, nil, fmt.Errorf("the program's wrapper ended before taking its orders: %w", werr)
		}
		return 0, nil, errors.New("the program's wrapper ended without a word (see termhost's log)")
	}
	rep.SetReadDeadline(time.Time{})
	var r report
	if err := json.Unmarshal(line, &r); err != nil {
		return 0, nil, fmt.Errorf("the program's wrapper said %q", strings.TrimSpace(string(line)))
	}
	if r.Err != "" {
		return 0, nil, errors.New(r.Err)
	}
	return r.Pid, rd, nil
}

// programEnd reads how the program ended from the wrapper's report, once
// the wrapper has been reaped (so the pipe holds all it will ever hold).
func programEnd(rd *bufio.Reader, rep *os.File) (link.ExitStatus, bool) {
	defer rep.Close()
	rep.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	line, err := rd.ReadBytes('\n')
	var r report
	if err != nil || json.Unmarshal(line, &r) != nil || !r.Ended {
		return link.ExitStatus{}, false
	}
	if r.Signal > 0 {
		return link.ExitStatus{Code: -1, Signal: unix.SignalName(syscall.Signal(r.Signal))}, true
	}
	return link.ExitStatus{Code: r.Code}, true
}

// start starts a program under the wrapper (pty.go's Start with
// containment).
func (c *Containment) start(path string, cfg Config, ws *cpty.Winsize) (*PTY, error) {
	c.measured()
	master, tty, err := cpty.Open()
	if err != nil {
		return nil, fmt.Errorf("open a PTY: %w", err)
	}
	if err := cpty.Setsize(master, ws); err != nil {
		master.Close()
		tty.Close()
		return nil, fmt.Errorf("PTY window size: %w", err)
	}
	var cg *cgroup
	fd := -1
	if c.mechanism == MechanismCgroup {
		if cg, err = c.newCgroup(); err != nil {
			master.Close()
			tty.Close()
			return nil, fmt.Errorf("session cgroup: %w", err)
		}
		fd = cg.fd
	}
	cmd, ctl, rep, err := c.startWrapper(tty, fd)
	tty.Close()
	if cg != nil {
		cg.closeFD()
	}
	if err != nil {
		master.Close()
		cg.remove()
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	o := orders{Path: path, Argv: append([]string{cfg.Command}, cfg.Args...), Dir: cfg.Dir, Env: cfg.Env}
	if c.sandbox {
		o.Hide, o.Sandbox = c.hidden(), true
		if c.userns {
			o.AsUser = &[2]int{os.Getuid(), os.Getgid()}
		}
	}
	if cg != nil {
		o.Cgroup = cg.dir
	}
	// abort ends the wrapper and all below it, even a wrapper its program
	// stopped (killBelow first: its orphans would go to init).
	abort := func(err error) (*PTY, error) {
		rep.Close()
		ctl.Close()
		killBelow(cmd.Process.Pid)
		cmd.Process.Kill()
		cmd.Wait()
		master.Close()
		cg.remove()
		return nil, err
	}
	pid, rd, err := c.handOver(ctl, rep, cmd.Process.Pid, o)
	if err != nil {
		return abort(fmt.Errorf("start %s: %w", cfg.Command, err))
	}
	f, err := pollable(master)
	if err != nil {
		return abort(err)
	}
	p := &PTY{f: f, raw: rawio.NewSleepingFile(f), cmd: cmd, pid: pid, exited: make(chan struct{}), ctl: ctl, cg: cg,
		end: func() (link.ExitStatus, bool) { return programEnd(rd, rep) }}
	go p.reap()
	if c.sandbox {
		c.track(p, o.Hide)
	}
	return p, nil
}

// track adds a sandboxed program to those Rehide tells of new paths, and
// starts the look once a second if it does not run.
func (c *Containment) track(p *PTY, hidden []string) {
	sent := make(map[string]bool, len(hidden))
	for _, h := range hidden {
		sent[h] = true
	}
	c.liveMu.Lock()
	defer c.liveMu.Unlock()
	c.live[p] = &sandboxed{sent: sent}
	if !c.rehiding {
		c.rehiding = true
		go c.rehideLoop()
	}
}

// rehideLoop calls Rehide once a second while a sandboxed program runs.
func (c *Containment) rehideLoop() {
	t := time.NewTicker(rehideEvery)
	defer t.Stop()
	for range t.C {
		if c.Rehide() == 0 {
			c.liveMu.Lock()
			if len(c.live) == 0 {
				c.rehiding = false
				c.liveMu.Unlock()
				return
			}
			c.liveMu.Unlock()
		}
	}
}

// Rehide asks Hidden again and tells the wrapper of every sandboxed
// program still running of each path it does not hide yet (a reload of the
// credentials named another key after the program started); the wrapper
// covers it in the program's namespace at once. It returns how many
// programs it looked at. Orders go one way: a wrapper its program stopped
// (SIGSTOP) covers the paths once it runs again.
func (c *Containment) Rehide() int {
	c.liveMu.Lock()
	progs := make([]*PTY, 0, len(c.live))
	for p := range c.live {
		select {
		case <-p.exited:
			delete(c.live, p)
		default:
			progs = append(progs, p)
		}
	}
	c.liveMu.Unlock()
	if len(progs) == 0 {
		return 0
	}
	hidden := c.hidden()
	for _, p := range progs {
		c.liveMu.Lock()
		sb := c.live[p]
		var fresh []string
		if sb != nil && !sb.broken {
			for _, h := range hidden {
				if h != "" && !sb.sent[h] {
					fresh = append(fresh, h)
				}
			}
		}
		c.liveMu.Unlock()
		if len(fresh) == 0 {
			continue
		}
		n, err := tellHide(p.ctl, fresh)
		c.liveMu.Lock()
		for _, h := range fresh[:n] {
			sb.sent[h] = true
		}
		if err != nil && errors.Is(err, errCutShort) {
			sb.broken = true
			c.log.Warn("sandbox: a program's wrapper did not take the paths to hide sent to it; files named since it started may stay readable to it", "pid", p.pid, "reason", err.Error())
		}
		c.liveMu.Unlock()
	}
	return len(progs)
}

// pipeAtomic is PIPE_BUF: a write of at most this many bytes to a pipe is
// whole or nothing, so a frame that size is never cut by a deadline.
const pipeAtomic = 4096

// errCutShort: a frame of later orders was written in part.
var errCutShort = errors.New("later orders cut short")

// tellHide sends paths to a wrapper as frames of moreOrders, each at most
// pipeAtomic bytes where a path allows, each within a second; it returns
// how many paths were sent. A frame not sent at all (the wrapper is
// stopped and its pipe full; the session is closing) is tried again at
// the next Rehide; one cut short (a path of nearly 4 KiB) spoils the
// framing, said by errCutShort.
func tellHide(ctl *os.File, paths []string) (int, error) {
	sent := 0
	for sent < len(paths) {
		k := sent + 1
		frame := hideFrame(paths[sent:k])
		for k < len(paths) {
			next := hideFrame(paths[sent : k+1])
			if len(next) > pipeAtomic {
				break
			}
			frame, k = next, k+1
		}
		ctl.SetWriteDeadline(time.Now().Add(time.Second))
		n, err := ctl.Write(frame)
		if err != nil {
			if n > 0 {
				return sent, fmt.Errorf("%w: %w", errCutShort, err)
			}
			return sent, err
		}
		sent = k
	}
	return sent, nil
}

// hideFrame is one frame of moreOrders.
func hideFrame(paths []string) []byte {
	b, _ := json.Marshal(moreOrders{Hide: paths})
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b))), b...)
}

// isWrapper: pid is a wrapper (or launcher) process, by its argv[0].
func isWrapper(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.HasPrefix(string(b), wrapperArg0+"\x00")
}

// killBelow SIGKILLs every process below the wrapper, from termhost's
// side: for a wrapper that cannot do it itself (its program stopped it),
// before the wrapper is killed and its orphans would go to init.
func killBelow(wrapper int) {
	killDescendants(wrapper, 20, 5*time.Millisecond, nil)
}
