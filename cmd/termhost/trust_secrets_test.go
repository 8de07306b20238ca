package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testapps"
	"github.com/termhost/termhost/internal/testutil"
)

// Issue 16, "Secrets" (SPEC TRUST-1, TRUST-2): a credential goes only to
// the target it names, a secret is typed only into a session to that
// target or into a program the credential names, every secret typed is
// masked in every session for the server's life, and a login types each
// secret once. Everything listens on 127.0.0.1.

// trustCred is a credential of these tests, written as credentials.json
// has it (hosts, programs).
type trustCred struct {
	ID, Host string
	Port     int
	User     string
	Pass     string
	Enable   string // enableSecret, left out when empty
	Hosts    []string
	Programs []string
}

// startTrustHost writes creds to a credentials.json (0600) of the test's
// own and starts termhost on it.
func startTrustHost(t *testing.T, creds ...trustCred) *hostProc {
	t.Helper()
	dir := t.TempDir()
	list := []map[string]any{}
	for _, c := range creds {
		if c.Host == "" {
			c.Host = "127.0.0.1"
		}
		m := map[string]any{"id": c.ID, "host": c.Host, "port": c.Port, "username": c.User,
			"password": base64.StdEncoding.EncodeToString([]byte(c.Pass))}
		if c.Enable != "" {
			m["enableSecret"] = base64.StdEncoding.EncodeToString([]byte(c.Enable))
		}
		if c.Hosts != nil {
			m["hosts"] = c.Hosts
		}
		if c.Programs != nil {
			m["programs"] = c.Programs
		}
		list = append(list, m)
	}
	b, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": list})
	path := filepath.Join(dir, "credentials.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return startHost(t, "--credentials", path, "--rules", emptyRules(t, dir), "--known-hosts", filepath.Join(dir, "kh"))
}

// fakePeer is a TCP service on 127.0.0.1 that plays a login dialogue (or
// anything else) on each connection, and remembers every byte it was sent
// (Telnet commands removed).
type fakePeer struct {
	ln    net.Listener
	port  int
	conns atomic.Int32
	mu    sync.Mutex
	got   bytes.Buffer
}

func startFakePeer(t *testing.T, serve func(f *fakePeer, c net.Conn, r *telnetLines)) *fakePeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeer{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(60 * time.Second))
				serve(f, c, &telnetLines{r: bufio.NewReader(c), f: f})
			})
		}
	})
	return f
}

func (f *fakePeer) received() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got.String()
}

// telnetLines reads lines from a Telnet client, dropping its commands.
type telnetLines struct {
	r *bufio.Reader
	f *fakePeer
}

func (l *telnetLines) line() (string, error) {
	var b []byte
	for {
		c, err := l.r.ReadByte()
		if err != nil {
			return string(b), err
		}
		if c == 0xff {
			cmd, _ := l.r.ReadByte()
			switch {
			case cmd == 0xff:
			case cmd == 250: // SB … IAC SE
				for {
					x, err := l.r.ReadByte()
					if err != nil {
						return string(b), err
					}
					if x == 0xff {
						if y, _ := l.r.ReadByte(); y == 240 {
							break
						}
					}
				}
				continue
			case cmd >= 251:
				l.r.ReadByte()
				continue
			default:
				continue
			}
		}
		l.f.mu.Lock()
		l.f.got.WriteByte(c)
		l.f.mu.Unlock()
		switch c {
		case 0:
		case '\r', '\n':
			if len(b) > 0 || c == '\r' {
				return string(b), nil
			}
		default:
			b = append(b, c)
		}
	}
}

// loginService asks for a username and a password and then shows a shell
// prompt.
func loginService(f *fakePeer, c net.Conn, r *telnetLines) {
	io.WriteString(c, "fake login service\r\nlogin: ")
	if _, err := r.line(); err != nil {
		return
	}
	io.WriteString(c, "Password: ")
	if _, err := r.line(); err != nil {
		return
	}
	io.WriteString(c, "\r\nwelcome\r\nfake$ ")
	io.Copy(io.Discard, c)
}

// TRUST-1: telnet_connect with a credential to a target it does not name
// is refused before anything is dialed, naming the credential's own
// target; a target its "hosts" names (an address, a network with a port)
// is accepted, a name matched by the address it resolves to.
func TestTrustCredentialOnlyForItsTarget(t *testing.T) {
	const pass = "Trust-Target-Pass-1"
	own := startFakePeer(t, loginService)
	other := startFakePeer(t, loginService)
	h := startTrustHost(t,
		trustCred{ID: "dev", Port: own.port, User: "netops", Pass: pass},
		trustCred{ID: "wide", Port: own.port, User: "netops", Pass: pass, Hosts: []string{"127.0.0.0/8:" + strconv.Itoa(other.port)}},
	)
	ownAddr := "127.0.0.1:" + strconv.Itoa(own.port)
	for _, host := range []string{"127.0.0.1", "localhost", "LOCALHOST", "127.0.0.2"} {
		r := h.call(20*time.Second, "telnet_connect", map[string]any{"credentialId": "dev", "host": host, "port": other.port})
		if !r.isErr || !strings.Contains(r.msg, ownAddr) {
			t.Errorf("telnet_connect dev to %s:%d: %+v (want an error naming %s)", host, other.port, r, ownAddr)
		}
	}
	if n := other.conns.Load(); n != 0 {
		t.Fatalf("the other service got %d connections (the credential was pointed at it)", n)
	}
	if got := other.received(); got != "" {
		t.Fatalf("the other service was sent %q", got)
	}
	// Its own target, also by a name that resolves to it.
	for _, host := range []string{"", "localhost"} {
		args := map[string]any{"credentialId": "dev"}
		if host != "" {
			args["host"], args["port"] = host, own.port
		}
		if r := h.call(20*time.Second, "telnet_connect", args); r.isErr || r.res["loggedIn"] != true {
			t.Errorf("telnet_connect dev to its own target (host %q): %+v", host, r)
		}
	}
	// A network of its "hosts", with the port it names.
	if r := h.call(20*time.Second, "telnet_connect", map[string]any{"credentialId": "wide", "host": "localhost", "port": other.port}); r.isErr || r.res["loggedIn"] != true {
		t.Errorf("telnet_connect wide to a network it names: %+v", r)
	}
	if r := h.call(20*time.Second, "telnet_connect", map[string]any{"credentialId": "wide", "host": "127.0.0.1", "port": other.port + 1}); !r.isErr {
		t.Errorf("telnet_connect wide to a port its network does not name: %+v", r)
	}
}

// TRUST-1: send_secret types only into a session to the credential's
// target, or into a local program its "programs" names that is the
// terminal's foreground program; a shell that turned echo off, a copy of
// an allowed program elsewhere, or a Telnet session to anything else is
// refused, and nothing is typed.
func TestTrustSendSecretOnlyToItsTarget(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	const pass = "Trust-SendSecret-Pass-2"
	gp := testapps.Build(t, "getpass")
	dir := t.TempDir()
	copyProg(t, gp, filepath.Join(dir, "sudo"))
	listener := startFakePeer(t, func(f *fakePeer, c net.Conn, r *telnetLines) {
		io.WriteString(c, "Password: ")
		for {
			if _, err := r.line(); err != nil {
				return
			}
		}
	})
	h := startTrustHost(t,
		trustCred{ID: "dev", Port: 2323, User: "netops", Pass: pass},
		trustCred{ID: "local", Port: 2323, User: "me", Pass: pass, Programs: []string{gp}},
		trustCred{ID: "sudo", Port: 2323, User: "me", Pass: pass, Programs: []string{"sudo"}},
	)
	// A Telnet session to a service the agent chose.
	tid := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": listener.port})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": tid, "until": "Password: ", "timeoutMs": 5000})
	r := h.call(10*time.Second, "send_secret", map[string]any{"sessionId": tid, "credentialId": "dev", "field": "password"})
	if !r.isErr || !strings.Contains(r.msg, "127.0.0.1:2323") || !strings.Contains(r.msg, "127.0.0.1:"+strconv.Itoa(listener.port)) {
		t.Errorf("send_secret into a Telnet session to another target: %+v", r)
	}
	// A shell that turned echo off and copies what is typed into a file.
	file := filepath.Join(dir, "stolen")
	sid := h.must("launch_app", map[string]any{"command": "bash", "args": []string{"-c", "stty -echo; echo ready; cat > " + file}})["session_id"].(string)
	h.screenHas(sid, "ready")
	for _, cred := range []string{"dev", "local", "sudo"} {
		r := h.call(10*time.Second, "send_secret", map[string]any{"sessionId": sid, "credentialId": cred, "field": "password"})
		if !r.isErr || !strings.Contains(r.msg, "programs") {
			t.Errorf("send_secret %s into bash -c 'stty -echo; cat > FILE': %+v", cred, r)
		}
	}
	// A copy of getpass named sudo is not sudo, and not getpass either.
	cid := h.must("launch_app", map[string]any{"command": filepath.Join(dir, "sudo")})["session_id"].(string)
	h.screenHas(cid, "Password:")
	for _, cred := range []string{"local", "sudo"} {
		if r := h.call(10*time.Second, "send_secret", map[string]any{"sessionId": cid, "credentialId": cred, "field": "password"}); !r.isErr || !strings.Contains(r.msg, filepath.Join(dir, "sudo")) {
			t.Errorf("send_secret %s into a copy named sudo: %+v", cred, r)
		}
	}
	// The program the credential names.
	gid := h.must("launch_app", map[string]any{"command": gp})["session_id"].(string)
	h.screenHas(gid, "Password:")
	if r := h.call(10*time.Second, "send_secret", map[string]any{"sessionId": gid, "credentialId": "dev", "field": "password"}); !r.isErr {
		t.Errorf("send_secret of a credential without programs into a local program: %+v", r)
	}
	h.must("send_secret", map[string]any{"sessionId": gid, "credentialId": "local", "field": "password"})
	h.screenHas(gid, fmt.Sprintf("read %d bytes", len(pass)))
	// Nothing reached the shell or the listener: a line typed now arrives,
	// and a secret typed before it would have arrived first.
	h.must("telnet_send", map[string]any{"sessionId": tid, "command": "typed-after"})
	h.must("send_keys", map[string]any{"session_id": sid, "text": "typed-after\n"})
	testutil.Eventually(t, 10*time.Second, "the line typed after at the listener", func() bool {
		return strings.Contains(listener.received(), "typed-after")
	})
	testutil.Eventually(t, 10*time.Second, "the line typed after in the shell's file", func() bool {
		b, _ := os.ReadFile(file)
		return strings.Contains(string(b), "typed-after")
	})
	if b, _ := os.ReadFile(file); string(b) != "typed-after\n" {
		t.Errorf("the shell got %q", b)
	}
	if strings.Contains(listener.received(), pass) {
		t.Error("the listener got the password")
	}
}

func copyProg(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// laterThanOldMask is how long the programs of TestTrustMaskedForServerLife
// wait before printing the secret again: past the 10 s the old masks
// lasted.
const laterThanOldMask = 11 * time.Second

// TRUST-2: a secret typed once is masked for the server's life: printed
// again long after it was typed (by a device over Telnet and by a local
// program that read it as getpass does), in two writes 300 ms apart, and
// in a session opened afterwards; in reads, on the screen, in the
// scrollback and the raw bytes.
func TestTrustMaskedForServerLife(t *testing.T) {
	const pass = "Trust-Mask-Pass-3x"
	gp := testapps.Build(t, "getpass")
	typed := make(chan string, 1)
	device := startFakePeer(t, func(f *fakePeer, c net.Conn, r *telnetLines) {
		io.WriteString(c, "Password: ")
		pw, err := r.line()
		if err != nil {
			return
		}
		typed <- pw
		half := len(pw) / 2
		io.WriteString(c, "\r\nsplit:"+pw[:half])
		time.Sleep(300 * time.Millisecond)
		io.WriteString(c, pw[half:]+":\r\n")
		// Other output first: the copy is not the first thing sent after a
		// while.
		time.Sleep(laterThanOldMask - 500*time.Millisecond)
		io.WriteString(c, "tick\r\n")
		time.Sleep(500 * time.Millisecond)
		io.WriteString(c, "later:"+pw+":\r\ndevice$ ")
		io.Copy(io.Discard, c)
	})
	var got atomic.Value
	bystander := startFakePeer(t, func(f *fakePeer, c net.Conn, r *telnetLines) {
		pw, _ := got.Load().(string)
		io.WriteString(c, "other:"+pw+":\r\nother$ ")
		io.Copy(io.Discard, c)
	})
	h := startTrustHost(t, trustCred{ID: "dev", Port: device.port, User: "netops", Pass: pass, Programs: []string{gp}})
	did := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": device.port})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": did, "until": "Password: ", "timeoutMs": 5000})
	h.must("send_secret", map[string]any{"sessionId": did, "credentialId": "dev", "field": "password"})
	gid := h.must("launch_app", map[string]any{"command": gp, "args": []string{"-split", "300ms", "-delay", laterThanOldMask.String()}})["session_id"].(string)
	h.screenHas(gid, "Password:")
	h.must("send_secret", map[string]any{"sessionId": gid, "credentialId": "dev", "field": "password"})
	select {
	case pw := <-typed:
		if pw != pass {
			t.Fatalf("the device got %q", pw)
		}
		got.Store(pw)
	case <-time.After(10 * time.Second):
		t.Fatal("the device never got the password")
	}
	// A session opened afterwards, to a peer that shows the secret.
	bid := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": bystander.port})["sessionId"].(string)
	b := h.must("telnet_read", map[string]any{"sessionId": bid, "until": `other\$ `, "timeoutMs": 5000})
	stars := strings.Repeat("*", len(pass))
	if out := fmt.Sprint(b["data"]); !strings.Contains(out, "other:"+stars+":") {
		t.Errorf("second session: %q", out)
	}
	wait := int((laterThanOldMask + 8*time.Second).Milliseconds())
	d := h.must("telnet_read", map[string]any{"sessionId": did, "until": `device\$ `, "timeoutMs": wait})
	out := fmt.Sprint(d["data"])
	if !strings.Contains(out, "split:"+stars+":") || !strings.Contains(out, "later:"+stars+":") {
		t.Errorf("device session: %q", out)
	}
	h.must("wait_for", map[string]any{"session_id": gid, "until": "done", "onScreen": true, "timeoutMs": wait})
	views := []string{fmt.Sprint(b), fmt.Sprint(d)}
	for _, id := range []string{did, gid, bid} {
		for _, f := range []string{"plain", "ansi", "raw", "scrollback"} {
			views = append(views, h.must("view_screen", map[string]any{"session_id": id, "format": f})["content"].(string))
		}
	}
	screen := h.view(gid)
	if !strings.Contains(screen, "split:"+stars+":") || !strings.Contains(screen, "later:"+stars+":") {
		t.Errorf("getpass screen:\n%s", screen)
	}
	for _, v := range views {
		if strings.Contains(v, pass) || strings.Contains(v, pass[:len(pass)/2]+pass[len(pass)/2:]) {
			t.Fatalf("the secret shows: %q", v)
		}
	}
}

// TRUST-1: a device that asks for the password again ends the login at
// once; the password was typed once.
func TestTrustLoginTypesEachSecretOnce(t *testing.T) {
	const pass = "Trust-Once-Pass-4"
	ended := make(chan struct{})
	device := startFakePeer(t, func(f *fakePeer, c net.Conn, r *telnetLines) {
		defer close(ended) // one connection: the host's
		io.WriteString(c, "login: ")
		if _, err := r.line(); err != nil {
			return
		}
		for range 5 {
			io.WriteString(c, "Password: ")
			if _, err := r.line(); err != nil {
				return
			}
			io.WriteString(c, "\r\n")
		}
		io.WriteString(c, "% Bad passwords\r\n")
		io.Copy(io.Discard, c)
	})
	h := startTrustHost(t, trustCred{ID: "dev", Port: device.port, User: "netops", Pass: pass})
	start := time.Now()
	r := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": "dev"})
	if !r.isErr || !strings.Contains(r.msg, "the device asked for the password again (wrong password?)") {
		t.Errorf("telnet_connect to a device that asks again: %+v", r)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the login took %v", took)
	}
	// The failed login ends the session, so the device sees the
	// connection close: everything the host typed has arrived by then.
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the device's connection stayed open after the failed login")
	}
	if n := strings.Count(device.received(), pass); n != 1 {
		t.Errorf("the password was typed %d times", n)
	}
}

// TRUST-1: an SSH shell is a session to its credential's target: a
// secret of a credential for that host and port is typed there (and
// masked in what comes back), one for another target is refused.
func TestTrustSendSecretIntoSSHShell(t *testing.T) {
	f := newSSHFixture(t)
	res := f.mustCall(t, "ssh_shell", map[string]any{"credentialId": "key"})
	id, _ := res["session_id"].(string)
	h := &hostProc{t: t, cs: f.cs}
	var file struct {
		Credentials []map[string]any `json:"credentials"`
	}
	b, _ := os.ReadFile(f.credFile)
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	creds := append(file.Credentials, []map[string]any{
		{"id": "samehost", "host": f.srv.Host, "port": f.srv.Port, "username": f.srv.User, "authType": "password", "password": b64("same-host-pw-31")},
		{"id": "elsewhere", "host": "127.0.0.1", "port": 1, "username": "x", "authType": "password", "password": b64("elsewhere-pw-77")},
	}...)
	f.secrets = append(f.secrets, "same-host-pw-31", "elsewhere-pw-77")
	f.writeCreds(t, creds)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(fmt.Sprint(f.mustCall(t, "ssh_list_credentials", map[string]any{})), "elsewhere") {
		if time.Now().After(deadline) {
			t.Fatal("the credentials were not reloaded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": `stty -echo; printf "Pass""word: "; read p; stty echo; echo; echo "got:$p:"` + "\n"})
	h.screenHas(id, "Password:")
	if _, msg, isErr := call(t, f.cs, "send_secret", map[string]any{"sessionId": id, "credentialId": "elsewhere", "field": "password"}); !isErr || !strings.Contains(msg, "127.0.0.1:1") {
		t.Errorf("send_secret of another target's credential into the SSH shell: %v %s", isErr, msg)
	}
	mustCall(t, f.cs, "send_secret", map[string]any{"sessionId": id, "credentialId": "samehost", "field": "password"})
	h.screenHas(id, "got:"+strings.Repeat("*", len("same-host-pw-31"))+":")
}
