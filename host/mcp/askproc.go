package mcp

// What ask_secret reads of the machine to tell where a secret would go:
// the TCP sockets and who holds them, and the /proc facts of a process.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// TCP states of /proc/net/tcp.
const (
	tcpEstablished = 0x01
	tcpListen      = 0x0a
)

type tcpEntry struct {
	local, remote netip.AddrPort
	state         int
	uid           int
	inode         uint64
}

type tcpTable struct {
	entries []tcpEntry
	byInode map[uint64]tcpEntry
}

// readTCP reads this network namespace's TCP sockets (IPv4 and IPv6).
func readTCP() (*tcpTable, error) {
	t := &tcpTable{byInode: map[uint64]tcpEntry{}}
	found := false
	var firstErr error
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		found = true
		for _, e := range parseTCP(b) {
			t.entries = append(t.entries, e)
			if e.inode != 0 {
				t.byInode[e.inode] = e
			}
		}
	}
	if !found {
		return nil, firstErr
	}
	return t, nil
}

// parseTCP parses the lines of /proc/net/tcp or tcp6.
func parseTCP(b []byte) []tcpEntry {
	var out []tcpEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 10 {
			continue
		}
		local, ok1 := parseHexAddr(f[1])
		remote, ok2 := parseHexAddr(f[2])
		state, err1 := strconv.ParseInt(f[3], 16, 32)
		uid, err2 := strconv.Atoi(f[7])
		inode, err3 := strconv.ParseUint(f[9], 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, tcpEntry{local: local, remote: remote, state: int(state), uid: uid, inode: inode})
	}
	return out
}

// parseHexAddr parses "0100007F:1F90": the address as the kernel's 32-bit
// words in host order, the port in hex.
func parseHexAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	ip := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}

// localHolder says who on this machine holds the TCP end at ap: the
// listener there and the connections it accepted — only that of peer
// when peer is given (the other end of one connection) — or why the
// person's secret may not go there: a program of one of this server's
// sessions holds it, or no holder can be told from such a program.
func (t *tcpTable) localHolder(ap, peer netip.AddrPort) (string, error) {
	ends := map[uint64]tcpEntry{}
	for _, e := range t.entries {
		if e.inode == 0 || e.local.Port() != ap.Port() {
			continue
		}
		switch {
		case peer.IsValid() && e.local == ap && e.remote == peer,
			!peer.IsValid() && e.local.Addr() == ap.Addr(),
			e.state == tcpListen && e.local.Addr().IsUnspecified():
			ends[e.inode] = e
		}
	}
	if len(ends) == 0 {
		return "", fmt.Errorf("nothing termhost can see on this machine holds %s, so who would get the secret cannot be told", ap)
	}
	holders := socketHolders(ends)
	self := os.Getpid()
	var shown []string
	for ino, e := range ends {
		pids := holders[ino]
		if len(pids) == 0 {
			if e.uid == os.Geteuid() {
				return "", fmt.Errorf("a process of this server's own user (uid %d) that termhost cannot inspect holds it: it may be one the agent started", e.uid)
			}
			shown = append(shown, "a service of "+userName(e.uid))
			continue
		}
		for _, pid := range pids {
			if pid != self && inSessions(pid) {
				return "", fmt.Errorf("it is held by %s (pid %d), which one of this server's sessions started: a program the agent runs", exeName(exeOf(pid)), pid)
			}
			if pid == self {
				shown = append(shown, fmt.Sprintf("this termhost server itself (pid %d)", pid))
				continue
			}
			uid, mine := procUID(pid), ""
			if uid == os.Geteuid() {
				mine = " (this server's own user, as the agent's programs are: make sure it is a service you know)"
			}
			shown = append(shown, fmt.Sprintf("pid %d, %s, of %s%s, not started by this server's sessions: %s", pid, exeName(exeOf(pid)), userName(uid), mine, cmdline(pid)))
		}
	}
	slices.Sort(shown)
	return strings.Join(slices.Compact(shown), "; "), nil
}

// socketHolders finds the processes that hold the sockets of ends open.
func socketHolders(ends map[uint64]tcpEntry) map[uint64][]int {
	out := map[uint64][]int{}
	for _, pid := range allPids() {
		for _, ino := range socketsOf(pid) {
			if _, ok := ends[ino]; ok && !slices.Contains(out[ino], pid) {
				out[ino] = append(out[ino], pid)
			}
		}
	}
	return out
}

// maxProcScan and maxFDScan bound what is looked at in /proc.
const (
	maxProcScan = 1 << 16
	maxFDScan   = 1 << 12
)

func allPids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(maxProcScan)
	var pids []int
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// socketsOf is the inodes of the sockets process pid holds.
func socketsOf(pid int) []uint64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	fds, _ := d.Readdirnames(maxFDScan)
	d.Close()
	var out []uint64
	for _, fd := range fds {
		l, err := os.Readlink(dir + fd)
		if err != nil {
			continue
		}
		if s, ok := strings.CutPrefix(l, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				out = append(out, ino)
			}
		}
	}
	return out
}

// procStat is what ask_secret reads of /proc/PID/stat.
type procStat struct {
	ppid, pgrp, ttyNr int
	start             uint64
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime
	if len(f) < 20 {
		return procStat{}, false
	}
	var st procStat
	var err1, err2, err3, err4 error
	st.ppid, err1 = strconv.Atoi(f[1])
	st.pgrp, err2 = strconv.Atoi(f[2])
	st.ttyNr, err3 = strconv.Atoi(f[4])
	st.start, err4 = strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return procStat{}, false
	}
	return st, true
}

// groupProcs is the processes of process group pgid, the leader first.
func groupProcs(pgid int) []askProc {
	var out []askProc
	for _, pid := range allPids() {
		st, ok := readStat(pid)
		if !ok || st.pgrp != pgid {
			continue
		}
		p := askProc{pid: pid, start: st.start, exe: exeOf(pid), args: cmdline(pid)}
		if pid == pgid {
			out = append([]askProc{p}, out...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

func exeOf(pid int) string {
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return exe
}

// maxArgsShown bounds a command line on the page.
const maxArgsShown = 300

// cmdline is a process's command line as the page shows it.
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return "(its command line cannot be read)"
	}
	var args []string
	for _, a := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
		if a == "" || strings.ContainsAny(a, " \t'\"\\$`;&|<>(){}*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	s := shown(strings.Join(args, " "))
	if utf8.RuneCountInString(s) > maxArgsShown {
		s = string([]rune(s)[:maxArgsShown]) + "…"
	}
	return s
}

// tracerOf is the pid of the process tracing pid (0: none).
func tracerOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func procUID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Uid:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return -1
}

func userName(uid int) string {
	if uid < 0 {
		return "an unknown user"
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("user %s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// loaderVars make the dynamic loader run code that is not the program's.
var loaderVars = []string{"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"}

// loaderVar is the first of loaderVars process pid runs with (set, not
// empty), or "". A process whose environment cannot be read (a setuid
// program, whose loader ignores them) has none that count.
func loaderVar(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" && slices.Contains(loaderVars, k) {
			return k
		}
	}
	return ""
}

// inSessions reports whether process pid is one a session of this server
// started: a descendant of termhost (each program runs under a wrapper
// that is termhost's child and keeps the orphans of its tree), or in one
// of its session cgroups (termhost-<pid>/s<n>, pty/cgroup.go).
func inSessions(pid int) bool {
	self := os.Getpid()
	for p, i := pid, 0; p > 1 && i < 256; i++ {
		st, ok := readStat(p)
		if !ok {
			break
		}
		if st.ppid == self {
			return true
		}
		p = st.ppid
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return bytes.Contains(b, []byte("/termhost-"+strconv.Itoa(self)+"/"))
}

// isLocalAddr reports whether a is an address of this machine.
func isLocalAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot be told: as if it were
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// ttyEchoes reports whether the controlling terminal of process pid
// would show what is typed, as the engine's check before typing a secret
// tells it (pty.Echoes): ECHO on, or no ICANON (a program reading keys
// one by one echoes them itself).
func ttyEchoes(pid int) (bool, error) {
	st, ok := readStat(pid)
	if !ok || st.ttyNr == 0 {
		return false, errors.New("no controlling terminal")
	}
	dev := uint64(uint32(st.ttyNr))
	major, minor := unix.Major(dev), unix.Minor(dev)
	if major < 136 || major > 143 {
		return false, fmt.Errorf("not a pseudo-terminal (%d:%d)", major, minor)
	}
	n := minor
	if major > 136 {
		n = (major-136)<<8 | minor
	}
	fd, err := unix.Open("/dev/pts/"+strconv.FormatUint(uint64(n), 10), unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	var sb unix.Stat_t
	if err := unix.Fstat(fd, &sb); err != nil || sb.Rdev != dev {
		return false, errors.New("not the process's terminal")
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, err
	}
	return t.Lflag&unix.ECHO != 0 || t.Lflag&unix.ICANON == 0, nil
}
