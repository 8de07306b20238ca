package pty

// The wrapper: the process between termhost and every program it starts
// under containment (see contain.go). termhost runs its own executable
// again (/proc/self/exe, as docker's reexec does) with a marker in argv[0]
// and the environment; this package's init sees the marker and runs
// wrapperMain instead of the program's main, so it works from any binary
// that links this package, test binaries included.
//
// The wrapper, in order: reads its orders from termhost (fd 4), hides the
// files it is told to hide (it was started in a new mount namespace),
// becomes a child subreaper, starts the program as the leader of a new
// session with the PTY (fd 3) as its controlling terminal, reports the
// program's pid (fd 5), then reaps every child. When the program exits it
// kills whatever the program left behind and exits with the program's
// exact status (the same code, or dies of the same signal). While the
// program runs, termhost may send more paths to hide on fd 4 (a reload of
// the credentials named another key). When termhost closes fd 4 (it is
// stopping the session, or it died, even by SIGKILL) it kills the whole
// subtree, through cgroup.kill when it was started in a session cgroup.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	wrapperArg0   = "termhost-pty-wrapper"
	wrapperMarker = "_TERMHOST_PTY_WRAPPER"

	wrapperTTY    = 3 // the PTY's terminal side
	wrapperOrders = 4 // from termhost: the orders, more paths to hide, then EOF means "kill everything"
	wrapperReport = 5 // to termhost: one line, the program's pid or why it did not start
)

// orders is what termhost tells the wrapper.
type orders struct {
	Path string   `json:"path"` // the program, resolved
	Argv []string `json:"argv"`
	Dir  string   `json:"dir,omitempty"`
	Env  []string `json:"env"`
	// Hide are paths the program must not read: a file is covered by
	// /dev/null, a directory by an empty read-only tmpfs. Set only when
	// the wrapper runs in a mount namespace of its own (Sandbox).
	Hide []string `json:"hide,omitempty"`
	// Sandbox: the wrapper runs in a mount namespace of its own, and
	// covers the paths of later orders (moreOrders) too. Without it those
	// are ignored: a wrapper in termhost's own namespace never mounts.
	Sandbox bool `json:"sandbox,omitempty"`
	// Cgroup is the session cgroup's directory ("" when none): on EOF of
	// the orders pipe the wrapper writes cgroup.kill there.
	Cgroup string `json:"cgroup,omitempty"`
	// AsUser is set when the wrapper runs as root of a user namespace of
	// its own (termhost is not root): the program then runs in a nested
	// one, as the user's own uid and gid again, without capabilities.
	AsUser *[2]int `json:"asUser,omitempty"`
	// Probe: set up, check that Hide[0] reads empty, report and exit.
	Probe bool `json:"probe,omitempty"`
}

// moreOrders come after the orders, while the program runs, in the same
// framing (a 4-byte big-endian length, then JSON), each at most
// pipeAtomic bytes where it can be: more paths the program must not read
// (a reload of the credentials named another key). The wrapper covers
// them in the namespace the program runs in.
type moreOrders struct {
	Hide []string `json:"hide"`
}

// maxMoreOrders bounds one frame of moreOrders.
const maxMoreOrders = 1 << 20

// readFrame reads one frame of orders (at most max bytes) into v.
func readFrame(in io.Reader, max uint32, v any) error {
	var n uint32
	if err := binary.Read(in, binary.BigEndian, &n); err != nil {
		return err
	}
	if n > max {
		return fmt.Errorf("orders of %d bytes (at most %d)", n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(in, buf); err != nil {
		return fmt.Errorf("orders cut short: %w", err)
	}
	return json.Unmarshal(buf, v)
}

// report is the wrapper's answer: first the program's pid (or why it did
// not start), then, once the program has ended, how it ended (the
// wrapper's own end may come from a cgroup.kill before it can exit like
// the program).
type report struct {
	Pid    int    `json:"pid,omitempty"`
	Err    string `json:"err,omitempty"`
	Ended  bool   `json:"ended,omitempty"`
	Code   int    `json:"code,omitempty"`
	Signal int    `json:"signal,omitempty"`
}

// writeReport writes r to termhost as one line.
func writeReport(w *os.File, r report) {
	b, _ := json.Marshal(r)
	w.Write(append(b, '\n'))
}

func init() {
	if len(os.Args) > 0 && os.Args[0] == wrapperArg0 {
		switch os.Getenv(wrapperMarker) {
		case "1":
			os.Unsetenv(wrapperMarker)
			wrapperMain()
		case "userns":
			os.Unsetenv(wrapperMarker)
			launcherMain()
		}
	}
}

// launcherMain starts the wrapper in a new user and mount namespace, with
// fds 3-5 passed on, and ends the way it ends. termhost cannot do that
// itself: it is not dumpable, so it may not write the uid_map of a child
// that is not dumpable either; this process, freshly executed, is.
func launcherMain() {
	runtime.LockOSThread()
	files := []*os.File{os.NewFile(wrapperTTY, "tty"), os.NewFile(wrapperOrders, "orders"), os.NewFile(wrapperReport, "report")}
	for _, fd := range []int{wrapperTTY, wrapperOrders, wrapperReport} {
		unix.CloseOnExec(fd)
	}
	proc, err := os.StartProcess("/proc/self/exe", []string{wrapperArg0}, &os.ProcAttr{
		Env:   []string{wrapperMarker + "=1"},
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, files[0], files[1], files[2]},
		Sys: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			// Root inside, so that the wrapper keeps the capabilities to
			// mount after its exec; it starts the program in a nested
			// user namespace as the user again (orders.AsUser).
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
		},
	})
	if err != nil {
		writeReport(files[2], report{Err: fmt.Sprintf("start in a user namespace: %v", err)})
		os.Exit(125)
	}
	for _, f := range files {
		f.Close()
	}
	st, err := proc.Wait()
	if err != nil {
		os.Exit(125)
	}
	exitLike(unix.WaitStatus(st.Sys().(syscall.WaitStatus)))
}

// wrapperMain never returns.
func wrapperMain() {
	// The program's parent-death signal is tied to the thread that
	// started it: keep that thread.
	runtime.LockOSThread()
	for _, fd := range []int{wrapperTTY, wrapperOrders, wrapperReport} {
		unix.CloseOnExec(fd)
	}
	rep := os.NewFile(wrapperReport, "report")
	fail := func(format string, args ...any) {
		writeReport(rep, report{Err: fmt.Sprintf(format, args...)})
		os.Exit(125)
	}
	ordersPipe := os.NewFile(wrapperOrders, "orders")
	in := bufio.NewReader(ordersPipe)
	var o orders
	if err := readFrame(in, 64<<20, &o); errors.Is(err, io.EOF) {
		fail("wrapper: no orders from termhost")
	} else if err != nil {
		fail("wrapper: orders: %v", err)
	}
	if err := hide(o.Hide); err != nil {
		fail("%v", err)
	}
	if o.Probe {
		if len(o.Hide) > 0 {
			b, err := os.ReadFile(o.Hide[0])
			if err != nil || len(b) != 0 {
				fail("a hidden file could still be read (%d bytes, %v)", len(b), err)
			}
		}
		writeReport(rep, report{Pid: os.Getpid()})
		os.Exit(0)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fail("wrapper: cannot become a child subreaper: %v", err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	tty := os.NewFile(wrapperTTY, "tty")
	attr := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if u := o.AsUser; u != nil {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: u[0], HostID: 0, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: u[1], HostID: 0, Size: 1}}
	}
	proc, err := os.StartProcess(o.Path, o.Argv, &os.ProcAttr{
		Dir: o.Dir, Env: o.Env, Files: []*os.File{tty, tty, tty}, Sys: attr,
	})
	if err != nil {
		fail("%v", err)
	}
	tty.Close() // the terminal ends when the program's side of it does
	cv := &covers{private: len(o.Hide) > 0}
	cv.keep(o.Hide)
	writeReport(rep, report{Pid: proc.Pid})

	stop := make(chan struct{})
	go func() {
		// More paths to hide, while they come; then anything else is the
		// order to stop: termhost closed the pipe, or it died. Orders that
		// do not parse end the reading of orders, not the program.
		for {
			var m moreOrders
			if err := readFrame(in, maxMoreOrders, &m); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(os.Stderr, "%s: later orders: %v; no more paths will be hidden from this program\n", wrapperArg0, err)
				}
				break
			}
			if o.Sandbox {
				cv.add(m.Hide)
			}
		}
		io.Copy(io.Discard, in)
		close(stop)
	}()
	r := &reaper{pid: proc.Pid}
	for !r.done {
		// Told to stop (or termhost is gone): the tree goes first, then
		// the program's status is reported; cgroup.kill (which ends the
		// wrapper too) comes last, below.
		select {
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				killTree(r)
			}
		case <-stop:
			killTree(r)
			stop = nil
		}
		r.reap()
	}
	end := report{Ended: true, Code: r.status.ExitStatus()}
	if r.status.Signaled() {
		end = report{Ended: true, Code: -1, Signal: int(r.status.Signal())}
	}
	writeReport(rep, end)
	rep.Close()
	// The program is gone: so is everything it left behind, and whatever
	// escaped the tree but not the cgroup.
	killTree(r)
	if o.Cgroup != "" {
		os.WriteFile(o.Cgroup+"/cgroup.kill", []byte("1"), 0)
	}
	exitLike(r.status)
}

// reaper collects every child that ends, and keeps the program's status.
type reaper struct {
	pid    int
	status unix.WaitStatus
	done   bool // the program was reaped
}

// reap collects what has ended, and reports whether no child is left:
// the wrapper is a child subreaper, so then no descendant is left either.
func (r *reaper) reap() (none bool) {
	for {
		var ws unix.WaitStatus
		p, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if p <= 0 || err != nil {
			return errors.Is(err, unix.ECHILD)
		}
		if p == r.pid && (ws.Exited() || ws.Signaled()) {
			r.status, r.done = ws, true
		}
	}
}

// killTree SIGKILLs every descendant of the wrapper until none is left
// (bounded): as a child subreaper, whatever a program double-forked is
// still below it.
func killTree(r *reaper) {
	// r.reap: no child, nothing to look for in /proc.
	killDescendants(os.Getpid(), 50, time.Millisecond, r.reap)
}

// killDescendants SIGKILLs every live process below pid, in rounds a
// pause apart, until none is left or the rounds run out. none (if not
// nil) is asked first each round and ends it early when true.
func killDescendants(pid, rounds int, pause time.Duration, none func() bool) {
	for round := 0; round < rounds; round++ {
		if none != nil && none() {
			return
		}
		kids := descendantsOf(pid)
		if len(kids) == 0 {
			return
		}
		for _, p := range kids {
			unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(pause)
	}
}

// descendantsOf lists every live process below pid, from /proc.
func descendantsOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := make(map[int]int, len(ents))
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(p); ok && st.state != 'Z' {
			parent[p] = st.ppid
		}
	}
	var out []int
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 4096; q, hops = parent[q], hops+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// exitLike ends the wrapper the way the program ended: the same exit
// code, or death by the same signal (so termhost reports exit_signal
// right). The signal is raised with its default action set by a raw
// rt_sigaction, past the Go runtime, which would otherwise catch or ignore
// some (SIGSEGV sent by kill, SIGPIPE).
func exitLike(ws unix.WaitStatus) {
	if !ws.Signaled() {
		os.Exit(ws.ExitStatus())
	}
	sig := ws.Signal()
	signal.Reset(sig)
	var dfl [4]uint64 // struct sigaction, all zero: SIG_DFL, no flags, empty mask
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	var set unix.Sigset_t
	set.Val[(int(sig)-1)/64] = 1 << ((uint(sig) - 1) % 64)
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
	unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	time.Sleep(100 * time.Millisecond)
	os.Exit(128 + int(sig)) // a signal that does not end a process
}

// hide covers each path: a file by /dev/null, a directory by an empty
// read-only tmpfs. Mounts are made private first so none of this reaches
// the namespace termhost runs in. A path that does not exist is skipped
// (there is nothing to read); any other failure is returned, and the
// program is not started.
func hide(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox: make mounts private: %w", err)
	}
	for _, p := range paths {
		if err := cover(p); err != nil {
			return fmt.Errorf("sandbox: hide %s: %w", p, err)
		}
	}
	return nil
}

// cover hides p unless it is hidden already (or does not exist).
func cover(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return nil
	}
	if covered(p, &st) {
		return nil
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
	}
	return unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
}

// covered: p is /dev/null, or an empty read-only tmpfs.
func covered(p string, st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT == unix.S_IFCHR {
		var null unix.Stat_t
		return unix.Stat("/dev/null", &null) == nil && null.Rdev == st.Rdev
	}
	var fs unix.Statfs_t
	if unix.Statfs(p, &fs) != nil || fs.Type != unix.TMPFS_MAGIC || fs.Flags&unix.ST_RDONLY == 0 {
		return false
	}
	ents, err := os.ReadDir(p)
	return err == nil && len(ents) == 0
}

// covers are the paths a wrapper hides, kept covered while the program
// runs. A file replaced by rename outside (an editor saving
// credentials.json) is a new dentry, and the kernel drops the mounts on
// the old one in every namespace: directories holding hidden paths are
// watched (inotify), and checked every second besides; between the rename
// and the new cover a program that reads at that very moment sees the new
// file. Paths told later (add) are covered at once and kept the same way.
type covers struct {
	mu      sync.Mutex
	paths   []string
	private bool // the mounts were made private (hide)
	started bool // the watchers run
	fd      int  // inotify, or -1
	// The hidden names in each watched directory: other files coming and
	// going there (a busy ~/.cache, the working directory) are not worth
	// a look.
	names map[int32]map[string]bool
}

// keep starts keeping paths, already covered (hide), covered.
func (cv *covers) keep(paths []string) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	cv.keepLocked(paths)
}

// add covers paths not hidden yet, in the namespace the program runs in,
// and keeps them covered. A path that cannot be covered is said on
// stderr (termhost's log); the program goes on.
func (cv *covers) add(paths []string) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	var fresh []string
	for _, p := range paths {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(cv.paths, p) && !slices.Contains(fresh, p) {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return
	}
	if !cv.private {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			fmt.Fprintf(os.Stderr, "%s: sandbox: make mounts private: %v; later paths are not hidden\n", wrapperArg0, err)
			return
		}
		cv.private = true
	}
	for _, p := range fresh {
		if err := cover(p); err != nil {
			fmt.Fprintf(os.Stderr, "%s: sandbox: hide %s: %v\n", wrapperArg0, p, err)
		}
	}
	cv.keepLocked(fresh)
}

// keepLocked watches paths' directories and starts the watchers once.
// Caller holds mu.
func (cv *covers) keepLocked(paths []string) {
	if len(paths) == 0 {
		return
	}
	if !cv.started {
		cv.started = true
		cv.names = map[int32]map[string]bool{}
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			fd = -1
		}
		cv.fd = fd
		if fd >= 0 {
			go cv.watch()
		}
		go func() {
			for range time.Tick(time.Second) {
				cv.coverAll()
			}
		}()
	}
	cv.paths = append(cv.paths, paths...)
	if cv.fd < 0 {
		return
	}
	for _, p := range paths {
		wd, err := unix.InotifyAddWatch(cv.fd, filepath.Dir(p), unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF)
		if err != nil {
			continue
		}
		if cv.names[int32(wd)] == nil {
			cv.names[int32(wd)] = map[string]bool{}
		}
		cv.names[int32(wd)][filepath.Base(p)] = true
	}
}

// coverAll covers again every path that lost its cover.
func (cv *covers) coverAll() {
	cv.mu.Lock()
	paths := cv.paths
	cv.mu.Unlock()
	for _, p := range paths {
		cover(p)
	}
}

// watch reads the inotify events and covers again when one names a
// hidden path.
func (cv *covers) watch() {
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(cv.fd, buf)
		if n <= 0 && !errors.Is(err, unix.EINTR) {
			return
		}
		cv.mu.Lock()
		touched := n <= 0 || touchesHidden(buf[:n], cv.names)
		cv.mu.Unlock()
		if touched {
			cv.coverAll()
		}
	}
}

// touchesHidden: one of the inotify events in buf names a hidden path,
// or a watch itself changed (its directory moved or went, the queue
// overflowed).
func touchesHidden(buf []byte, names map[int32]map[string]bool) bool {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED|unix.IN_Q_OVERFLOW) != 0 {
			return true
		}
		start := off + unix.SizeofInotifyEvent
		end := start + int(ev.Len)
		if end > len(buf) {
			return true // cut short: look anyway
		}
		if names[ev.Wd][strings.TrimRight(string(buf[start:end]), "\x00")] {
			return true
		}
		off = end
	}
	return false
}
