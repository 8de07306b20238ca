// Package frrtest runs a real FRRouting zebra daemon for tests, its vty
// on 127.0.0.1 at a free port with a throwaway configuration (a vty
// password and an enable password), never the system's FRR.
package frrtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

const zebra = "/usr/lib/frr/zebra"

// Router is a running zebra.
type Router struct {
	Port           int
	Hostname       string
	Password       string // the vty login password
	EnablePassword string
	Dir            string
}

// Need skips the test without FRR or root (zebra starts as root and drops
// to the frr user); under CI it fails instead (.ci/run installs frr).
func Need(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(zebra); err != nil {
		testutil.SkipUnlessCI(t, "FRRouting is needed (apt-get install frr)")
	}
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "zebra must be started as root")
	}
}

// Start starts zebra for the test; it is stopped when the test ends.
func Start(t testing.TB) *Router {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	os.Chmod(filepath.Dir(dir), 0o755)
	r := &Router{Hostname: "frr-test", Password: "vty-Pass-3", EnablePassword: "en-Pass-7", Dir: dir}
	conf := filepath.Join(dir, "zebra.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("hostname %s\npassword %s\nenable password %s\n", r.Hostname, r.Password, r.EnablePassword)), 0o644)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(zebra, "-A", "127.0.0.1", "-P", strconv.Itoa(r.Port), "-f", conf,
		"-i", filepath.Join(dir, "zebra.pid"), "-z", filepath.Join(dir, "zserv.api"), "--vty_socket", dir, "-u", "frr", "-g", "frr")
	logf, _ := os.Create(filepath.Join(dir, "zebra.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start zebra: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "zebra.log"))
			t.Logf("zebra log:\n%s", b)
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("zebra did not listen on %s", addr)
		}
	}
}
