package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/sshdtest"
	"github.com/termhost/termhost/internal/testutil"
)

// requireTool skips when a real peer is not installed, except in CI, where
// .ci/run installs it and its absence is a failure.
func requireTool(t *testing.T, path string, args ...string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		testutil.SkipUnlessCI(t, "%s not installed (apt-get install busybox-static inetutils-telnetd)", path)
	}
	if len(args) > 0 {
		out, err := exec.Command(path, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "telnetd") {
			testutil.SkipUnlessCI(t, "%s has no telnetd applet (install busybox-static): %s", path, out)
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits until something accepts on port.
// busyboxTelnetd starts BusyBox telnetd on a free loopback port with
// login as its login program (/bin/sh: none) and env added to its
// environment, stops it when the test ends, and returns the port once it
// listens.
func busyboxTelnetd(tb testing.TB, login string, env ...string) int {
	tb.Helper()
	port := freePort(tb)
	cmd := exec.Command("/bin/busybox", "telnetd", "-F", "-b", "127.0.0.1", "-p", strconv.Itoa(port), "-l", login)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitListening(tb, port)
	return port
}

func waitListening(t testing.TB, port int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nothing listens on port %d", port)
}

// shellRoundTrip reaches a shell prompt, runs echo of a computed value and
// reads it back with until. withTTYPE: the server asks for the terminal
// type (inetutils does; BusyBox does not). interrupt is what stops a
// running command: IAC IP for servers that map it to the tty's interrupt
// character (inetutils), a literal ^C otherwise (BusyBox ignores IAC IP).
func shellRoundTrip(t *testing.T, port int, withTTYPE bool, interrupt map[string]any) {
	cs := startServe(t)
	id := mustCall(t, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	expect(t, cs, map[string]any{"sessionId": id, "until": `[#$] $`, "timeoutMs": 10000}, "matched", "")
	a, b := 7919, time.Now().Nanosecond()%100000+1
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo th-$((" + strconv.Itoa(a) + "*" + strconv.Itoa(b) + "))"})
	want := "th-" + strconv.Itoa(a*b)
	expect(t, cs, map[string]any{"sessionId": id, "until": want + `\r?\n`, "timeoutMs": 10000}, "matched", want)
	// The terminal type and window size reached the server.
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": `echo "T=$TERM"; stty size`})
	data := expect(t, cs, map[string]any{"sessionId": id, "until": `24 80`, "timeoutMs": 10000}, "matched", "24 80")
	if withTTYPE && !strings.Contains(data, "T=xterm-256color") {
		t.Errorf("TERM did not reach the shell: %q", data)
	}
	// Interrupt a running command. The shell says it is about to start it;
	// an interrupt that lands in the moment before sleep runs is lost, so
	// interrupt until the prompt comes back (each try bounded).
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo sleeping-$((6*7)); sleep 30"})
	expect(t, cs, map[string]any{"sessionId": id, "until": `sleeping-42`, "timeoutMs": 10000}, "matched", "sleeping-42")
	start := time.Now()
	interrupt["sessionId"] = id
	for try := 0; ; try++ {
		mustCall(t, cs, "telnet_send", interrupt)
		if r := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "until": `[#$] $`, "timeoutMs": 1000}); r["reason"] == "matched" {
			break
		}
		if try == 10 {
			t.Fatal("the interrupt never stopped sleep")
		}
	}
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo after-$((40+2))"})
	expect(t, cs, map[string]any{"sessionId": id, "until": `after-42\r?\n`, "timeoutMs": 10000}, "matched", "after-42")
	if time.Since(start) > 20*time.Second {
		t.Errorf("interrupt did not stop sleep")
	}
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "exit"})
	expect(t, cs, map[string]any{"sessionId": id, "exit": true, "timeoutMs": 10000}, "exit", "")
	mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
}

func TestInteropBusyBoxTelnetd(t *testing.T) {
	requireTool(t, "/bin/busybox", "--list")
	port := busyboxTelnetd(t, "/bin/sh", "PS1=$ ")
	shellRoundTrip(t, port, false, map[string]any{"command": "\x03", "noNewline": true})
}

func TestInteropInetutilsTelnetd(t *testing.T) {
	requireTool(t, "/usr/sbin/telnetd")
	d, err := devsim.ListenInetd("127.0.0.1:0", []string{"/usr/sbin/telnetd", "-h", "-E", "/bin/sh"}, []string{"PS1=$ ", "PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, p, _ := net.SplitHostPort(d.Addr())
	port, _ := strconv.Atoi(p)
	shellRoundTrip(t, port, true, map[string]any{"command": "", "noNewline": true, "signal": "ip"})
}

// Real telnetd logins through /bin/login, answered by the host from a
// credential; the linux dialect detected; a command in one call.
func TestInteropTelnetdLoginWithCredential(t *testing.T) {
	user, pass := sshdtest.SystemUser(t)
	type daemon struct {
		name  string
		start func(t *testing.T) int
	}
	daemons := []daemon{
		{"busybox", func(t *testing.T) int {
			requireTool(t, "/bin/busybox", "--list")
			port := busyboxTelnetd(t, "/bin/login")
			return port
		}},
		{"inetutils", func(t *testing.T) int {
			requireTool(t, "/usr/sbin/telnetd")
			d, err := devsim.ListenInetd("127.0.0.1:0", []string{"/usr/sbin/telnetd", "-h"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			_, p, _ := net.SplitHostPort(d.Addr())
			port, _ := strconv.Atoi(p)
			return port
		}},
	}
	for _, d := range daemons {
		t.Run(d.name, func(t *testing.T) {
			port := d.start(t)
			h := startHostWithCreds(t, []devCred{{ID: "box", Port: port, User: user, Pass: pass}})
			c := h.call(40*time.Second, "telnet_connect", map[string]any{"credentialId": "box", "dialect": "auto"})
			if c.isErr || c.res["loggedIn"] != true {
				t.Fatalf("login: %+v", c)
			}
			id := c.res["sessionId"].(string)
			r := h.must("run_command", map[string]any{"sessionId": id, "command": "echo out-$((6*7))", "timeoutMs": 15000})
			if r["output"] != "out-42\n" || r["dialect"] != "linux" {
				t.Errorf("run_command: %v", r)
			}
			for _, s := range []string{fmt.Sprint(c), fmt.Sprint(r), h.logs.String(), h.view(id)} {
				if strings.Contains(s, pass) {
					t.Fatalf("the password shows: %q", s)
				}
			}
		})
	}
}
