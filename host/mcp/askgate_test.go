package mcp

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// /proc/net/tcp and tcp6 as Linux writes them (little-endian words).
func TestParseTCP(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the sample is little-endian")
	}
	v4 := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1
`
	got := parseTCP([]byte(v4))
	if len(got) != 2 {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	want := tcpEntry{local: netip.MustParseAddrPort("127.0.0.1:8080"), remote: netip.MustParseAddrPort("0.0.0.0:0"), state: tcpListen, uid: 1000, inode: 4242}
	if got[0] != want {
		t.Errorf("listener: %+v, want %+v", got[0], want)
	}
	if got[1].remote != netip.MustParseAddrPort("127.0.0.1:54321") || got[1].state != tcpEstablished {
		t.Errorf("connection: %+v", got[1])
	}
	v6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:0017 0000000000000000FFFF00000100007F:A000 01 00000000:00000000 00:00000000 00000000     0        0 78 1 0000000000000000 100 0 0 10 0
`
	got = parseTCP([]byte(v6))
	if len(got) != 2 || got[0].local != netip.MustParseAddrPort("[::1]:22") {
		t.Fatalf("tcp6: %+v", got)
	}
	if got[1].local != netip.MustParseAddrPort("127.0.0.1:23") { // v4-mapped: unmapped
		t.Errorf("tcp6 v4-mapped: %+v", got[1])
	}
}

// A secret is one line of text (issue 33, item 2).
func TestNotOneLine(t *testing.T) {
	for _, ok := range []string{"hunter2", "pässwörd €", "a b", "日本語のパスワード"} {
		if why := notOneLine(ok); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
	for _, bad := range []string{"x\ry", "x\n", "\x03", "a\x1b[A", "\x7f", "x\u0085", "\x00", "a\tb", "\xff\xfe"} {
		if why := notOneLine(bad); !strings.Contains(why, "one line") {
			t.Errorf("%q: %q", bad, why)
		}
	}
}

// The agent's prompt and a program's command line cannot pass for
// something else on the page.
func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                   "plain",
		"a\nb":                    "a\uFFFDb",
		"evil\u202Egnp.exe":       "evil\uFFFDgnp.exe",
		"\x1b[31mred":             "\uFFFD[31mred",
		"bad\xffutf8":             "bad\uFFFDutf8",
		"line\u2028sep":           "line\uFFFDsep",
		"isolate\u2066x\u2069end": "isolate\uFFFDx\uFFFDend",
	} {
		if got := shown(in); got != want {
			t.Errorf("shown(%q) = %q, want %q", in, got, want)
		}
	}
}

// The allow-list is of real executables: a name is found in PATH and its
// links followed; a copy elsewhere is not the program.
func TestResolveAskPrograms(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	real, _ := filepath.EvalSymlinks(sh)
	p := resolveAskPrograms([]string{"sh", " ", "no-such-program-33"})
	if !p.paths[real] || len(p.paths) != 1 || p.named != "sh, no-such-program-33" {
		t.Fatalf("%+v (sh is %s)", p, real)
	}
	dir := t.TempDir()
	b, _ := os.ReadFile(real)
	copyPath := filepath.Join(dir, "sh")
	os.WriteFile(copyPath, b, 0o755)
	if p.paths[copyPath] {
		t.Error("a copy of sh passed")
	}
	if p := resolveAskPrograms(nil); len(p.paths) != 0 || p.named != "none" {
		t.Errorf("none: %+v", p)
	}
}

// Who holds a TCP end on this machine: this process itself is told as
// such; a process it started is a session's, and refused.
func TestLocalHolder(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	tab, err := readTCP()
	if err != nil {
		t.Fatal(err)
	}
	who, err := tab.localHolder(ap, netip.AddrPort{})
	if err != nil || !strings.Contains(who, "this termhost server itself") {
		t.Fatalf("a listener of this process: %q %v", who, err)
	}
	// Nothing at a port: cannot be told.
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	free := netip.MustParseAddrPort(closed.Addr().String())
	closed.Close()
	if tab, _ = readTCP(); tab != nil {
		if _, err := tab.localHolder(free, netip.AddrPort{}); err == nil || !strings.Contains(err.Error(), "cannot be told") {
			t.Errorf("a port nothing holds: %v", err)
		}
	}
	// A child of this process holding the listener: a session's program.
	py, err := exec.LookPath("python3")
	if err != nil {
		return
	}
	f, _ := ln.(*net.TCPListener).File()
	defer f.Close()
	cmd := exec.Command(py, "-c", "import time; time.sleep(30)")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ln.Close()
	f.Close() // only the child holds it now
	tab, _ = readTCP()
	if _, err := tab.localHolder(ap, netip.AddrPort{}); err == nil || !strings.Contains(err.Error(), "sessions started") {
		t.Errorf("a listener a child holds: %v", err)
	}
}

// A page's destination is the very processes (pid and start time) or
// connection it showed.
func TestAskDestSame(t *testing.T) {
	a := askDest{kind: "pty", pgid: 10, procs: []askProc{{pid: 10, start: 5, exe: "/usr/bin/sudo"}}}
	b := a
	b.procs = []askProc{{pid: 10, start: 6, exe: "/usr/bin/sudo"}}
	if !a.same(a) || a.same(b) {
		t.Error("a process with the same pid and another start time is another process")
	}
	n := askDest{kind: "telnet", host: "r1", port: 23, remote: netip.MustParseAddr("10.0.0.1"), holder: "x"}
	m := n
	m.holder = "y"
	if !n.same(m) {
		t.Error("who else holds the listener does not make it another connection")
	}
	m.remote = netip.MustParseAddr("10.0.0.2")
	if n.same(m) {
		t.Error("another address is another destination")
	}
}

// A program this user can replace is no asker the agent cannot change
// (it has this user's rights): as root, nothing is told apart.
func TestUserWritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can replace anything")
	}
	mine := filepath.Join(t.TempDir(), "sudo")
	os.WriteFile(mine, []byte("#!/bin/sh\n"), 0o755)
	if !userWritable(mine) {
		t.Errorf("%s is this user's", mine)
	}
	if sh, err := filepath.EvalSymlinks("/bin/sh"); err == nil && userWritable(sh) {
		t.Errorf("%s is the system's", sh)
	}
	p := resolveAskPrograms([]string{mine})
	if !p.paths[mine] || len(p.writable) != 1 {
		t.Errorf("a path named is kept, with a warning: %+v", p)
	}
}
