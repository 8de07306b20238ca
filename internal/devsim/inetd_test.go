//go:build unix

package devsim

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

func TestInetdCat(t *testing.T) {
	d, err := ListenInetd("127.0.0.1:0", []string{"/bin/cat"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	nc, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(nc)
	for _, msg := range []string{"hello\n", "second line \xff\n"} {
		if _, err := io.WriteString(nc, msg); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != msg {
			t.Fatalf("echo: %q, %v", got, err)
		}
	}
	waitFor(t, "one running child", func() bool { return len(d.Running()) == 1 })
	pid := d.Running()[0]

	// A second connection gets its own child.
	nc2, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	io.WriteString(nc2, "two\n")
	nc2.SetDeadline(time.Now().Add(5 * time.Second))
	if got, _ := bufio.NewReader(nc2).ReadString('\n'); got != "two\n" {
		t.Fatalf("second child: %q", got)
	}
	if n := len(d.PIDs()); n != 2 {
		t.Fatalf("PIDs: %v", d.PIDs())
	}

	start := time.Now()
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("Close took %v", time.Since(start))
	}
	for _, p := range d.PIDs() {
		if err := syscall.Kill(p, 0); err != syscall.ESRCH {
			t.Errorf("child %d still exists after Close (kill 0: %v)", p, err)
		}
	}
	if len(d.Running()) != 0 {
		t.Errorf("running after Close: %v", d.Running())
	}
	// The client sees the connection end.
	if _, err := r.ReadString('\n'); err == nil {
		t.Errorf("connection still open after Close")
	}
	if !strings.Contains(d.Log(), "started /bin/cat pid") {
		t.Errorf("log: %q", d.Log())
	}
	_ = pid
	if _, err := net.DialTimeout("tcp", d.Addr(), time.Second); err == nil {
		t.Errorf("still accepting after Close")
	}
}

func TestInetdChildExitClosesConnection(t *testing.T) {
	d, err := ListenInetd("127.0.0.1:0", []string{"/bin/sh", "-c", "echo hi; echo oops >&2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	nc, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(nc)
	if err != nil || string(b) != "hi\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	waitFor(t, "child exit", func() bool { return len(d.Running()) == 0 && strings.Contains(d.Log(), "exited") })
	if !strings.Contains(d.Log(), "oops\n") {
		t.Errorf("stderr not logged: %q", d.Log())
	}
}

func TestInetdRefusesNonLoopback(t *testing.T) {
	if d, err := ListenInetd("0.0.0.0:0", []string{"/bin/cat"}, nil); err == nil {
		d.Close()
		t.Fatal("listened on 0.0.0.0")
	}
	if _, err := ListenInetd("127.0.0.1:0", nil, nil); err == nil {
		t.Fatal("empty argv accepted")
	}
}

// inetutilsTelnetd finds GNU inetutils telnetd (Debian: inetutils-telnetd,
// /usr/sbin/telnetd; built from source: libexec). Where it is missing the
// test skips, except in CI, where .ci/run installs it and its absence is a
// failure.
func inetutilsTelnetd(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/sbin/telnetd", "/usr/libexec/telnetd", "/usr/local/libexec/telnetd", "/usr/sbin/in.telnetd"}
	if p, err := exec.LookPath("telnetd"); err == nil {
		candidates = append([]string{p}, candidates...)
	}
	var others []string
	for _, p := range candidates {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, _ := exec.CommandContext(ctx, p, "--version").CombinedOutput()
		cancel()
		if strings.Contains(string(out), "GNU inetutils") {
			return p
		}
		others = append(others, p)
	}
	msg := "GNU inetutils telnetd is not installed (apt-get install inetutils-telnetd)"
	if len(others) > 0 {
		msg += "; not GNU inetutils: " + strings.Join(others, ", ")
	}
	testutil.SkipUnlessCI(t, "%s", msg)
	return ""
}

// TestInetdRealTelnetd runs GNU inetutils telnetd, which only runs from
// inetd, under ListenInetd, with a shell instead of login (no root
// needed).
func TestInetdRealTelnetd(t *testing.T) {
	telnetd := inetutilsTelnetd(t)
	d, err := ListenInetd("127.0.0.1:0", []string{telnetd, "-h", "-E", "/bin/sh"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		d.Close()
		if t.Failed() {
			t.Logf("inetd log:\n%s", d.Log())
		}
	}()
	c := dial(t, d.Addr())
	waitFor(t, "a shell prompt", func() bool {
		s := c.transcript()
		return strings.HasSuffix(s, "$ ") || strings.HasSuffix(s, "# ")
	})
	c.send("echo marker-$((6*7)) term=$TERM\r\n")
	c.expect("marker-42 term=")
	if got := c.expect("\r\n"); !strings.EqualFold(strings.TrimSpace(got), c.termType) {
		t.Errorf("TERM in the shell is %q; the client sent %q", got, c.termType)
	}
	c.send("exit\r\n")
	c.expectEOF()
	waitFor(t, "telnetd to exit", func() bool { return len(d.Running()) == 0 })
	t.Logf("negotiation seen: %v", c.negLog)
}
