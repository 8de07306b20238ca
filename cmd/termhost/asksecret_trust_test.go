package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/internal/sshdtest"
	"github.com/termhost/termhost/internal/testapps"
	"github.com/termhost/termhost/internal/testutil"
)

// Issue 33, items 1 and 2 (SPEC VIEW-3, TRUST-2): what the person types
// on ask_secret's page goes only where the page shows them it goes — a
// local program of the server's --ask-programs reading its terminal with
// echo off, or a Telnet/SSH session whose destination they confirm, never
// a listener one of the server's own sessions started — and it is one
// line. Each attack below, on the code before, made a page and the agent
// read what the person typed there.

// askServer starts `termhost serve --http` with args and connects a client
// without URL elicitation (ask_secret then answers with the page's
// address); base is the server's address.
func askServer(t *testing.T, args ...string) (cs *sdk.ClientSession, h *hostProc, base string) {
	t.Helper()
	srv := startHTTP(t, args...)
	cs = connectEra(t, srv, eraModern, nil)
	return cs, &hostProc{t: t, cs: cs}, strings.TrimSuffix(srv.url, "/mcp")
}

// askFor calls ask_secret on session id: the page's address, or "" and
// why it was refused.
func askFor(t *testing.T, cs *sdk.ClientSession, id, prompt string) (page, refusal string) {
	t.Helper()
	res := testutil.CallTool(cs, 20*time.Second, "ask_secret", map[string]any{"sessionId": id, "prompt": prompt})
	if res.Err != nil {
		t.Fatalf("ask_secret: %v", res.Err)
	}
	if res.IsError {
		return "", res.Text
	}
	var m map[string]any
	json.Unmarshal([]byte(res.Text), &m)
	page, _ = m["url"].(string)
	if page == "" {
		t.Fatalf("ask_secret gave neither a page nor a refusal: %s", res.Text)
	}
	return page, ""
}

// postPage sends the page's form as the person's browser does.
func postPage(t *testing.T, base, page string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, page, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getPage(t *testing.T, page string) (int, string) {
	t.Helper()
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// typed is the form of a person who typed secret and ticked the
// confirmation a network session's page has.
func typed(secret string) url.Values {
	return url.Values{"secret": {secret}, "confirm": {"yes"}}
}

// bashAt launches an interactive bash, waits for its prompt and types line.
func bashAt(h *hostProc, home, line string) string {
	h.t.Helper()
	id := h.must("launch_app", map[string]any{"command": "bash", "args": []string{"--norc", "--noprofile"},
		"env": map[string]string{"PS1": "$ ", "HOME": home}})["session_id"].(string)
	h.screenHas(id, "$ ")
	h.must("send_keys", map[string]any{"session_id": id, "text": line + "\r"})
	return id
}

// refused checks that ask_secret refused, naming each of want; if it made
// a page instead (the code before), the person's secret is typed there
// and leak says whether the agent then has it.
func refused(t *testing.T, what, page, refusal, base, secret string, leak func() bool, want ...string) {
	t.Helper()
	if page != "" {
		t.Errorf("%s: ask_secret made a page (%s)", what, page)
		if code, body := postPage(t, base, page, typed(secret)); code != 200 {
			t.Logf("%s: posting: %d %.200s", what, code, body)
		}
		if leak != nil && testutil.Poll(10*time.Second, leak) {
			t.Errorf("%s: the agent read what the person typed on the page", what)
		}
		return
	}
	for _, w := range want {
		if !strings.Contains(refusal, w) {
			t.Errorf("%s: the refusal does not say %q: %s", what, w, refusal)
		}
	}
	t.Logf("%s: %s", what, refusal)
}

// listenerScript is a Telnet service a hijacked agent starts: it says it
// echoes (so the client does not), asks for a password and prints what it
// got, reversed (masking sees only exact copies).
const listenerScript = `
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print("PORT=%d" % s.getsockname()[1], flush=True)
c, _ = s.accept()
c.sendall(b"\xff\xfb\x01Password: ")
got = b""
while True:
    d = c.recv(1024)
    if not d:
        break
    got += d
    text = "".join(chr(b) for b in got if 32 <= b < 127)
    print("GOT:" + text[::-1], flush=True)
`

// TestAskSecretRefusesWhereTheAgentReads (issue 33, item 1): with the
// default --ask-programs, ask_secret refuses, before any page is made and
// naming why, every place the agent set up to read the secret: a shell's
// read -rs that prints it base64, a shell that turned echo off and copies
// the terminal to a file, a copy of an asker under its name, a Telnet
// listener a session of the server started, an asker that does not read
// the terminal (what is typed would wait for the shell after it), and a
// pipeline in which only one process is an asker.
func TestAskSecretRefusesWhereTheAgentReads(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	const secret = "Ask-Trust-Secret-8817"
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	cs, h, base := askServer(t)
	dir := t.TempDir()
	home := t.TempDir()

	// A shell that reads it silently and prints it base64.
	id := bashAt(h, home, `read -rs S; echo "B64:$(printf %s "$S" | base64)"`)
	h.screenHas(id, "base64)")
	page, why := askFor(t, cs, id, "Your GitHub password")
	refused(t, "bash read -rs", page, why, base, secret, func() bool { return strings.Contains(h.view(id), "B64:"+b64) },
		"/bash", "--ask-programs")

	// A shell that turned echo off and copies the terminal to a file.
	file := filepath.Join(dir, "stolen")
	id = h.must("launch_app", map[string]any{"command": "bash", "args": []string{"-c", "stty -echo; echo ready; cat > " + file}})["session_id"].(string)
	h.screenHas(id, "ready")
	page, why = askFor(t, cs, id, "sudo password")
	refused(t, "stty -echo; cat > FILE", page, why, base, secret, func() bool { b, _ := os.ReadFile(file); return strings.Contains(string(b), secret) },
		"/cat")

	// A copy of a program that asks, under an asker's name: not ssh.
	gp := testapps.Build(t, "getpass")
	fake := filepath.Join(dir, "ssh")
	copyProg(t, gp, fake)
	id = h.must("launch_app", map[string]any{"command": fake})["session_id"].(string)
	h.screenHas(id, "Password:")
	page, why = askFor(t, cs, id, "ssh password")
	refused(t, "a copy named ssh", page, why, base, secret, func() bool { return strings.Contains(h.view(id), fmt.Sprintf("read %d bytes", len(secret))) },
		fake)

	// A Telnet listener a session of this server started.
	py := pythonPath(t)
	lid := h.must("launch_app", map[string]any{"command": py, "args": []string{"-u", "-c", listenerScript}})["session_id"].(string)
	h.screenHas(lid, "PORT=")
	m := regexp.MustCompile(`PORT=(\d+)`).FindStringSubmatch(h.view(lid))
	if m == nil {
		t.Fatalf("the listener's port: %s", h.view(lid))
	}
	port, _ := strconv.Atoi(m[1])
	tid := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": tid, "until": "Password: ", "timeoutMs": 10000})
	page, why = askFor(t, cs, tid, "the router's password")
	reversed := []rune(secret)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	refused(t, "a listener started by a session", page, why, base, secret, func() bool { return strings.Contains(h.view(lid), string(reversed)) },
		"127.0.0.1", "port "+m[1], "python", "session")

	// An asker that does not read the terminal: ssh waiting for a server
	// that says nothing, after the shell turned echo off. What is typed
	// would wait in the terminal for the shell's read after it.
	sshPath := testutil.NeedProgram(t, "ssh")
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	sshArgs := fmt.Sprintf("-F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p %d x@127.0.0.1", silent.Addr().(*net.TCPAddr).Port)
	id = bashAt(h, home, `stty -echo; `+sshPath+` `+sshArgs+`; read -r S; echo "B64:$(printf %s "$S" | base64)"`)
	var held net.Conn
	select {
	case held = <-conns:
	case <-time.After(15 * time.Second):
		t.Fatalf("ssh did not connect: %s", h.view(id))
	}
	time.Sleep(300 * time.Millisecond) // ssh waits for the server's banner
	page, why = askFor(t, cs, id, "ssh password")
	if page != "" {
		go func() { time.Sleep(time.Second); held.Close() }() // ssh ends; the shell reads on
	}
	refused(t, "an asker that does not read the terminal", page, why, base, secret, func() bool { return strings.Contains(h.view(id), "B64:"+b64) },
		"not reading")
	held.Close()

	// A pipeline in which only the second process is an asker.
	id = bashAt(h, home, `stty -echo; tee `+file+`.tee | `+sshPath+` `+sshArgs)
	select {
	case held = <-conns:
	case <-time.After(15 * time.Second):
		t.Fatalf("ssh did not connect: %s", h.view(id))
	}
	defer held.Close()
	time.Sleep(300 * time.Millisecond)
	page, why = askFor(t, cs, id, "ssh password")
	refused(t, "tee | ssh", page, why, base, secret, func() bool { b, _ := os.ReadFile(file + ".tee"); return strings.Contains(string(b), secret) },
		"/tee")
}

// TestAskSecretIntoSSHClient (issue 33, item 1): the default --ask-programs
// lets the person's password go into a real ssh asking for it: the page
// names the program, its process and its command line, and what the
// person types logs ssh in. The same ssh behind a pipe is refused.
func TestAskSecretIntoSSHClient(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	sshPath := testutil.NeedProgram(t, "ssh")
	srv := sshdtest.Start(t, sshdtest.Options{})
	if srv.Password == "" {
		t.Skip("the test sshd has no password login (not root)")
	}
	cs, h, base := askServer(t)
	home := t.TempDir()
	sshLine := fmt.Sprintf("%s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o PubkeyAuthentication=no "+
		"-o PreferredAuthentications=password -p %d %s@%s", sshPath, srv.Port, srv.User, srv.Host)

	id := bashAt(h, home, sshLine+" | cat")
	h.screenHas(id, "password:")
	page, why := askFor(t, cs, id, "your password on the test server")
	refused(t, "ssh | cat", page, why, base, srv.Password, nil, "/cat")
	h.must("send_keys", map[string]any{"session_id": id, "text": "\x03"})

	id = bashAt(h, home, sshLine)
	h.screenHas(id, "password:")
	page, why = askFor(t, cs, id, "your password on the test server")
	if page == "" {
		t.Fatalf("ask_secret into ssh at its password prompt: %s", why)
	}
	code, body := getPage(t, page)
	for _, want := range []string{"The agent asks", "your password on the test server", sshPath, "-p " + strconv.Itoa(srv.Port), "pid "} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("the page does not show %q: %d %s", want, code, body)
		}
	}
	if code, body := postPage(t, base, page, url.Values{"secret": {srv.Password}}); code != 200 || !strings.Contains(body, "Sent into the session") {
		t.Fatalf("posting the password: %d %.300s", code, body)
	}
	time.Sleep(500 * time.Millisecond)
	h.must("send_keys", map[string]any{"session_id": id, "text": "echo in-$((6*7))\r"})
	h.screenHas(id, "in-42")
	if strings.Contains(h.view(id), srv.Password) {
		t.Error("the password is on the screen")
	}
}

// TestAskSecretAskPrograms (issue 33, item 1): --ask-programs names the
// askers (by name in PATH, or path), compared by the real executable; a
// program of the list is still refused when its terminal echoes, when it
// is traced or runs with LD_PRELOAD, and a page whose program was
// replaced since it was made types nothing; an empty list refuses every
// local program.
func TestAskSecretAskPrograms(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	const secret = "Ask-Programs-Secret-3"
	gp := testapps.Build(t, "getpass")
	cs, h, base := askServer(t, "--ask-programs", gp+",cat")

	id := h.must("launch_app", map[string]any{"command": gp})["session_id"].(string)
	h.screenHas(id, "Password:")
	page, why := askFor(t, cs, id, "the code")
	if page == "" {
		t.Fatalf("ask_secret into a program of --ask-programs: %s", why)
	}
	if code, body := getPage(t, page); code != 200 || !strings.Contains(body, gp) {
		t.Fatalf("the page does not name the program: %d %s", code, body)
	}
	if code, body := postPage(t, base, page, url.Values{"secret": {secret}}); code != 200 || !strings.Contains(body, "Sent into the session") {
		t.Fatalf("posting: %d %.300s", code, body)
	}
	h.screenHas(id, fmt.Sprintf("read %d bytes", len(secret)))

	// A program of the list reading a terminal that echoes.
	id = h.must("launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	time.Sleep(200 * time.Millisecond)
	page, why = askFor(t, cs, id, "the code")
	refused(t, "echo on", page, why, base, secret, func() bool { return strings.Contains(h.view(id), secret) }, "would show")

	// With LD_PRELOAD: the program's code is not only its own.
	id = h.must("launch_app", map[string]any{"command": gp, "env": map[string]string{"LD_PRELOAD": "/nonexistent/steal.so"}})["session_id"].(string)
	h.screenHas(id, "Password:")
	page, why = askFor(t, cs, id, "the code")
	refused(t, "LD_PRELOAD", page, why, base, secret, nil, "LD_PRELOAD")

	// Traced: strace sees every byte it reads.
	if st, err := exec.LookPath("strace"); err == nil {
		log := filepath.Join(t.TempDir(), "strace.log")
		id = h.must("launch_app", map[string]any{"command": st, "args": []string{"-f", "-e", "trace=read", "-o", log, "bash", "--norc", "--noprofile"},
			"env": map[string]string{"PS1": "$ "}})["session_id"].(string)
		h.screenHas(id, "$ ")
		h.must("send_keys", map[string]any{"session_id": id, "text": gp + "\r"})
		h.screenHas(id, "Password:")
		page, why = askFor(t, cs, id, "the code")
		refused(t, "traced", page, why, base, secret, func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), secret) }, "traced")
	}

	// The program is replaced by another of the list after the page was
	// made (the page names the first's pid): nothing is typed.
	id = bashAt(h, t.TempDir(), gp+"; "+gp)
	h.screenHas(id, "Password:")
	page, why = askFor(t, cs, id, "the code")
	if page == "" {
		t.Fatalf("ask_secret: %s", why)
	}
	_, body := getPage(t, page)
	pm := regexp.MustCompile(`\(pid (\d+)\)`).FindStringSubmatch(body)
	if pm == nil {
		t.Fatalf("the page names no pid: %s", body)
	}
	pid, _ := strconv.Atoi(pm[1])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the second program asks", func() bool { return strings.Count(h.view(id), "Password:") == 2 })
	if code, body := postPage(t, base, page, url.Values{"secret": {secret}}); strings.Contains(body, "Sent into the session") || !strings.Contains(body, "changed") {
		t.Errorf("posting after the program changed: %d %.400s", code, body)
	}
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(h.view(id), fmt.Sprintf("read %d bytes", len(secret))) {
		t.Error("the secret was typed into the program that took the first one's place")
	}

	// An empty list: no local program.
	cs2, h2, _ := askServer(t, "--ask-programs=")
	id = h2.must("launch_app", map[string]any{"command": gp})["session_id"].(string)
	h2.screenHas(id, "Password:")
	if page, why := askFor(t, cs2, id, "the code"); page != "" || !strings.Contains(why, "--ask-programs") {
		t.Errorf("ask_secret with an empty --ask-programs: %q %s", page, why)
	}
}

// TestAskSecretOneLine (issue 33, item 2): a secret is one line. A
// submission with CR, LF or any other control character (or that is not
// UTF-8) is refused on the page, which says so, and nothing is typed; the
// page stays for the person to try again. A Telnet session's page shows
// its destination (host, port, the address it is connected to, and who
// holds that address on this machine) and types only once the person
// confirms it; the agent's prompt is quoted as the agent's, escaped.
func TestAskSecretOneLine(t *testing.T) {
	const secret = "One-Line-Secret-41"
	var mu sync.Mutex
	var lines []string
	peer := startFakePeer(t, func(f *fakePeer, c net.Conn, r *telnetLines) {
		io.WriteString(c, "\xff\xfb\x01Password: ")
		for {
			l, err := r.line()
			if err != nil {
				return
			}
			mu.Lock()
			lines = append(lines, l)
			mu.Unlock()
		}
	})
	got := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), lines...) }
	cs, h, base := askServer(t)
	tid := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": peer.port})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": tid, "until": "Password: ", "timeoutMs": 10000})
	page, why := askFor(t, cs, tid, `<b>termhost</b> needs your password`)
	if page == "" {
		t.Fatalf("ask_secret into a Telnet session to a service of this machine no session started: %s", why)
	}
	code, body := getPage(t, page)
	for _, want := range []string{"The agent asks", "&lt;b&gt;termhost&lt;/b&gt; needs your password", "127.0.0.1", strconv.Itoa(peer.port),
		`name="confirm"`, fmt.Sprintf("pid %d", os.Getpid())} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("the page does not show %q: %d %s", want, code, body)
		}
	}
	if strings.Contains(body, "<b>termhost</b>") {
		t.Errorf("the page shows the agent's prompt unescaped: %s", body)
	}
	for _, bad := range []string{"x\rdenied-command", "x\ndenied-command", "x\r\n", "x\x03", "x\x1b[A", "x\x7f", "x\u0085y", "x\xffy", "x\x00"} {
		code, body := postPage(t, base, page, typed(bad))
		if strings.Contains(body, "Sent into the session") || !strings.Contains(body, "one line") {
			t.Errorf("posting %q: %d %.300s", bad, code, body)
		}
	}
	if code, body := postPage(t, base, page, url.Values{"secret": {secret}}); strings.Contains(body, "Sent into the session") || !strings.Contains(body, "confirm") {
		t.Errorf("posting without confirming the destination: %d %.300s", code, body)
	}
	time.Sleep(500 * time.Millisecond)
	if l := got(); len(l) != 0 {
		t.Fatalf("refused submissions reached the service: %q", l)
	}
	if code, body := postPage(t, base, page, typed(secret)); code != 200 || !strings.Contains(body, "Sent into the session") {
		t.Fatalf("posting the secret: %d %.300s", code, body)
	}
	testutil.Eventually(t, 10*time.Second, "the service gets the secret", func() bool { l := got(); return len(l) == 1 && l[0] == secret })
}

// A Telnet or SSH destination gets the secret only at a prompt that asks
// for one: the page's address is in the agent's answer, so at a shell's
// command line a POST of the form (confirm ticked) would run one line no
// rule checked.
func TestAskSecretOnlyAtASecretPrompt(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	peer := startFakePeer(t, func(f *fakePeer, c net.Conn, r *telnetLines) {
		io.WriteString(c, "\xff\xfb\x01$ ")
		for {
			l, err := r.line()
			if err != nil {
				return
			}
			mu.Lock()
			lines = append(lines, l)
			mu.Unlock()
		}
	})
	cs, h, base := askServer(t)
	tid := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": peer.port})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": tid, "until": `\$ $`, "timeoutMs": 10000})
	page, why := askFor(t, cs, tid, "your password")
	if page == "" {
		t.Fatalf("ask_secret into a Telnet session: %s", why)
	}
	code, body := postPage(t, base, page, typed("rm -rf ~"))
	if strings.Contains(body, "Sent into the session") || !strings.Contains(body, "does not show a prompt asking for a secret") {
		t.Errorf("posting at a shell's prompt: %d %.300s", code, body)
	}
	got := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), lines...) }
	if testutil.Poll(time.Second, func() bool { return len(got()) > 0 }) {
		t.Fatalf("a line reached the service: %q", got())
	}
}
