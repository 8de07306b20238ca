package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/termhost/termhost/host/record"
	"github.com/termhost/termhost/internal/sshdtest"
	"github.com/termhost/termhost/internal/testapps"
	"github.com/termhost/termhost/internal/testutil"
)

// startRecHost starts termhost with a credentials file of the test's own
// and XDG_DATA_HOME in a directory of the test's own (where record:true
// writes), which it returns.
func startRecHost(t *testing.T, creds []trustCred, args ...string) (*hostProc, string) {
	t.Helper()
	dir := t.TempDir()
	list := []map[string]any{}
	for _, c := range creds {
		m := map[string]any{"id": c.ID, "host": "127.0.0.1", "port": c.Port, "username": c.User,
			"password": base64.StdEncoding.EncodeToString([]byte(c.Pass))}
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
	rules := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(rules, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	h := startHostEnv(t, []string{"XDG_DATA_HOME=" + data},
		append(args, "--credentials", path, "--rules", rules, "--known-hosts", filepath.Join(dir, "kh"))...)
	return h, data
}

// readCast reads a recording and the file's bytes.
func readCast(t *testing.T, path string) (*record.Cast, []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := record.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s does not read back: %v\n%s", path, err, raw)
	}
	return c, raw
}

// codes counts a recording's events by code; markers are the m events'
// labels, inputs the i events' data.
func codes(c *record.Cast) (n map[string]int, markers, inputs []string) {
	n = map[string]int{}
	for _, e := range c.Events {
		n[e.Code]++
		switch e.Code {
		case "m":
			markers = append(markers, e.Data)
		case "i":
			inputs = append(inputs, e.Data)
		}
	}
	return n, markers, inputs
}

func hasPrefixed(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// A PTY bash session recorded from its start (record:true): the header,
// output, the agent's input, a resize, prompt markers with exit codes, a
// secret typed by the host as its mask (never the secret), the exit; the
// file in a 0700 directory, 0600; list_sessions names it; `rec text` shows
// the screen view_screen shows; Debian's asciinema plays the v2 export as
// our replay does.
func TestRecordPTYBash(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	const secret = "Rec-s3cret-Never-Written"
	gp := testapps.Build(t, "getpass")
	h, data := startRecHost(t, []trustCred{{ID: "dev", Port: 23, User: "admin", Pass: secret, Programs: []string{gp}}})
	r := h.must("launch_app", map[string]any{"command": "bash", "record": true})
	id := r["session_id"].(string)
	path, _ := r["recording"].(string)
	if filepath.Dir(path) != filepath.Join(data, "termhost", "recordings") {
		t.Fatalf("launch_app's recording %q: want a file in %s", path, filepath.Join(data, "termhost", "recordings"))
	}
	if !strings.HasSuffix(path, "-"+id+".cast") {
		t.Errorf("launch_app's recording %q is not named after its session %s (asked for at open, as record_start names it)", path, id)
	}
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v (want mode %v): %v", p, fi.Mode(), want, err)
		}
	}
	prompt := func() {
		t.Helper()
		if w := h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000}); w["reason"] != "prompt" {
			t.Fatalf("no prompt: %v", w)
		}
	}
	prompt()
	line := func(text string) {
		t.Helper()
		if w := h.must("send_keys", map[string]any{"session_id": id, "text": text, "keys": "Enter", "prompt": true, "timeoutMs": 15000}); w["reason"] != "prompt" {
			t.Fatalf("%s: no prompt: %v", text, w)
		}
	}
	line("echo rec-$((6*7))")
	line("false")
	h.must("resize_terminal", map[string]any{"session_id": id, "cols": 100, "rows": 30})
	h.must("send_keys", map[string]any{"session_id": id, "text": gp + " -split 100ms", "keys": "Enter"})
	h.screenHas(id, "Password:")
	h.must("send_secret", map[string]any{"sessionId": id, "credentialId": "dev", "field": "password"})
	h.screenHas(id, "done")
	h.must("send_keys", map[string]any{"session_id": id, "keys": "C-c", "prompt": true, "timeoutMs": 15000}) // getpass sleeps on
	line("true")
	list := h.must("list_sessions", map[string]any{})
	if !strings.Contains(fmt.Sprint(list), path) {
		t.Errorf("list_sessions does not give the recording %s: %v", path, list)
	}
	view := h.must("view_screen", map[string]any{"session_id": id})["content"].(string)
	h.must("send_keys", map[string]any{"session_id": id, "text": "exit", "keys": "Enter"})
	if w := h.must("wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 15000}); w["reason"] != "exit" {
		t.Fatalf("bash did not exit: %v", w)
	}
	var c *record.Cast
	var raw []byte
	testutil.Eventually(t, 10*time.Second, "the recording ends with its exit event", func() bool {
		c, raw = readCast(t, path)
		return len(c.Events) > 0 && c.Events[len(c.Events)-1].Code == "x"
	})
	if c.Header.Version != 3 || c.Header.Term.Cols != 80 || c.Header.Term.Rows != 24 || c.Header.Term.Type == "" {
		t.Errorf("header: %+v", c.Header)
	}
	n, markers, inputs := codes(c)
	for _, code := range []string{"o", "i", "r", "m", "x"} {
		if n[code] == 0 {
			t.Errorf("no %q event: %v", code, n)
		}
	}
	if !strings.Contains(c.Output(), "rec-42") {
		t.Errorf("output lacks the command's output")
	}
	if !hasPrefixed(markers, "prompt exit=0") || !hasPrefixed(markers, "prompt exit=1") {
		t.Errorf("markers lack the prompts with exit codes: %q", markers)
	}
	if !slicesContain(inputs, strings.Repeat("*", len(secret))+"\r") {
		t.Errorf("the secret's input is not its mask: %q", inputs)
	}
	if !slicesContain(inputs, "echo rec-$((6*7))\r") {
		t.Errorf("the agent's input is missing: %q", inputs)
	}
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatalf("the secret is in the recording")
	}
	if last := c.Events[len(c.Events)-1]; last.Data != "0" {
		t.Errorf("exit event %+v, want 0", last)
	}
	rs := false
	for _, e := range c.Events {
		rs = rs || e.Code == "r" && e.Data == "100x30"
	}
	if !rs {
		t.Errorf("no resize event 100x30")
	}

	// rec text: the final screen through our own emulator, as view_screen
	// showed it before exit (the screen after exit adds the "exit" line).
	text := runRec(t, "text", "--cache-dir", cacheDir(), path)
	final := h.must("view_screen", map[string]any{"session_id": id})["content"].(string)
	if strings.TrimRight(text, "\n") != final {
		t.Errorf("rec text:\n%s\nview_screen:\n%s", text, final)
	}
	if !strings.HasPrefix(final, view[:min(len(view), 20)]) {
		t.Logf("screen before exit:\n%s", view)
	}

	// The v2 export, played by Debian's asciinema, and our replay.
	v2 := filepath.Join(t.TempDir(), "v2.cast")
	runRec(t, "convert", "--v2", path, v2)
	ours := runRec(t, "play", "--speed", "1000000", path)
	if ours != c.Output() {
		t.Errorf("rec play wrote %d bytes, the output events hold %d", len(ours), len(c.Output()))
	}
	if after := runRec(t, "play", path, "--speed", "1000000"); after != ours {
		t.Errorf("rec play with its flags after the file wrote %d bytes, before it %d", len(after), len(ours))
	}
	asciinema := testutil.NeedProgram(t, "asciinema")
	// asciinema cat reads keys from /dev/tty: it gets a terminal of its
	// own as its controlling terminal, its output goes to a pipe.
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	cat := exec.Command(asciinema, "cat", v2)
	cat.Stdin = tty
	cat.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var stderr bytes.Buffer
	cat.Stderr = &stderr
	out, err := cat.Output()
	if err != nil {
		t.Fatalf("asciinema cat: %v\n%s", err, stderr.String())
	}
	if string(out) != ours {
		t.Errorf("asciinema cat of the v2 export (%d bytes) differs from rec play (%d bytes)", len(out), len(ours))
	}
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runRec runs `termhost rec ARGS` and returns its standard output.
func runRec(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"rec"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("termhost rec %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// Every session recorded with --record-dir: a Telnet session to BusyBox's
// telnetd logged in by the host, whose password appears as its mask;
// login and prompt markers from the session's events.
func TestRecordTelnetBusyBox(t *testing.T) {
	requireTool(t, "/bin/busybox", "--list")
	user, pass := sshdtest.SystemUser(t)
	port := busyboxTelnetd(t, "/bin/login")
	dir := filepath.Join(t.TempDir(), "recs")
	h, _ := startRecHost(t, []trustCred{{ID: "box", Port: port, User: user, Pass: pass}}, "--record-dir", dir)
	c := h.call(40*time.Second, "telnet_connect", map[string]any{"credentialId": "box", "dialect": "auto"})
	if c.isErr || c.res["loggedIn"] != true {
		t.Fatalf("login: %+v", c)
	}
	id := c.res["sessionId"].(string)
	path, _ := c.res["recording"].(string)
	if filepath.Dir(path) != dir {
		t.Fatalf("recording %q, want a file in %s", path, dir)
	}
	r := h.must("run_command", map[string]any{"sessionId": id, "command": "echo out-$((6*7))", "timeoutMs": 15000})
	if r["output"] != "out-42\n" {
		t.Errorf("run_command: %v", r)
	}
	h.must("telnet_disconnect", map[string]any{"sessionId": id})
	var cast *record.Cast
	var raw []byte
	testutil.Eventually(t, 10*time.Second, "the recording ends with the session", func() bool {
		cast, raw = readCast(t, path)
		_, markers, _ := codes(cast)
		return hasPrefixed(markers, "end: ")
	})
	if cast.Header.Version != 3 || cast.Header.Term.Cols != 80 || cast.Header.Term.Rows != 24 {
		t.Errorf("header: %+v", cast.Header)
	}
	n, markers, inputs := codes(cast)
	if n["o"] == 0 || n["i"] == 0 {
		t.Errorf("events: %v", n)
	}
	if !hasPrefixed(markers, "login: password") || !hasPrefixed(markers, "prompt") {
		t.Errorf("markers: %q", markers)
	}
	if !slicesContain(inputs, strings.Repeat("*", len(pass))+"\r") || !slicesContain(inputs, user+"\r") {
		t.Errorf("inputs %q: want the username and the password's mask", inputs)
	}
	if bytes.Contains(raw, []byte(pass)) {
		t.Fatalf("the password is in the recording")
	}
	if !strings.Contains(cast.Output(), "out-42") {
		t.Errorf("output lacks the command's output")
	}
}

// A server killed outright (kill -9) leaves a recording that reads back,
// missing at most the last second.
func TestRecordKill9(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "recs")
	h, _ := startRecHost(t, nil, "--record-dir", dir)
	r := h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", "while :; do date +T%s.%N; sleep 0.02; done"}})
	path, _ := r["recording"].(string)
	h.screenHas(r["session_id"].(string), "T")
	time.Sleep(1500 * time.Millisecond) // the clock the program prints runs on
	killed := time.Now()
	if err := syscall.Kill(h.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c, _ := readCast(t, path)
	out := c.Output()
	i := strings.LastIndex(out, "T")
	var last float64
	for j := i - 1; j >= 0 && last == 0; j = strings.LastIndex(out[:j], "T") {
		end := strings.IndexAny(out[j+1:], "\r\n")
		if end < 0 {
			continue
		}
		last, _ = strconv.ParseFloat(out[j+1:j+1+end], 64)
	}
	if last == 0 {
		t.Fatalf("no line the program printed is in the recording: %q", out)
	}
	lost := float64(killed.UnixNano())/1e9 - last
	t.Logf("the recording's last line was printed %.3f s before the kill", lost)
	if lost > 1 {
		t.Fatalf("the recording lost %.3f s (last time %f)", lost, last)
	}
}

// record_start records a session from now on, its screen as it was
// first; record_stop ends the file (valid, the session goes on); the
// errors name the field; start_pty's record starts with the session.
func TestRecordStartStop(t *testing.T) {
	h, data := startRecHost(t, nil)
	id := h.must("launch_app", map[string]any{"command": "sh", "env": map[string]string{"PS1": "$ "}})["session_id"].(string)
	h.must("send_keys", map[string]any{"session_id": id, "text": "echo before-$((1+1))", "keys": "Enter"})
	h.screenHas(id, "before-2")
	if l := h.must("list_sessions", map[string]any{}); strings.Contains(fmt.Sprint(l), "recording") {
		t.Errorf("a session not recorded lists a recording: %v", l)
	}
	r := h.must("record_start", map[string]any{"session_id": id})
	path, _ := r["recording"].(string)
	if !strings.HasPrefix(path, filepath.Join(data, "termhost", "recordings")) {
		t.Fatalf("record_start: %v", r)
	}
	if again := h.must("record_start", map[string]any{"session_id": id}); again["recording"] != path {
		t.Errorf("record_start again: %v, want the same recording", again)
	}
	h.must("send_keys", map[string]any{"session_id": id, "text": "echo after-$((2+2))", "keys": "Enter"})
	h.screenHas(id, "after-4")
	if s := h.must("record_stop", map[string]any{"session_id": id}); s["recording"] != path {
		t.Errorf("record_stop: %v", s)
	}
	if e := h.call(10*time.Second, "record_stop", map[string]any{"session_id": id}); !e.isErr || !strings.Contains(e.msg, "session_id") {
		t.Errorf("record_stop of a session not recorded: %+v", e)
	}
	if e := h.call(10*time.Second, "record_start", map[string]any{"session_id": "nope"}); !e.isErr {
		t.Errorf("record_start of no session: %+v", e)
	}
	c, _ := readCast(t, path)
	out := c.Output()
	if !strings.Contains(out, "before-2") || !strings.Contains(out, "after-4") {
		t.Errorf("the recording lacks the screen before it or the output after: %q", out)
	}
	if text := runRec(t, "text", "--cache-dir", cacheDir(), path); !strings.Contains(text, "after-4") || !strings.Contains(text, "echo before-$((1+1))") {
		t.Errorf("rec text:\n%s", text)
	}
	p := h.must("start_pty", map[string]any{"command": "echo pty-rec", "record": true})
	ppath, _ := p["recording"].(string)
	testutil.Eventually(t, 10*time.Second, "start_pty's recording has the output", func() bool {
		b, _ := os.ReadFile(ppath)
		return bytes.Contains(b, []byte("pty-rec"))
	})
}

// An SSH shell recorded from its start (ssh_shell's record) against a
// real sshd: output, input, prompt markers from the dialect.
func TestRecordSSHShell(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data) // the server started below inherits it
	f := newSSHFixture(t)
	res := f.mustCall(t, "ssh_shell", map[string]any{"credentialId": "key", "record": true, "dialect": "auto"})
	id, _ := res["session_id"].(string)
	path, _ := res["recording"].(string)
	if id == "" || !strings.HasPrefix(path, filepath.Join(data, "termhost", "recordings")) {
		t.Fatalf("ssh_shell: %v", res)
	}
	h := &hostProc{t: t, cs: f.cs}
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo ssh-rec-$((6*7))", "keys": "Enter"})
	h.screenHas(id, "ssh-rec-42")
	mustCall(t, f.cs, "record_stop", map[string]any{"session_id": id})
	c, _ := readCast(t, path)
	n, markers, inputs := codes(c)
	// The rules' line check sends the line and its Enter apart.
	if n["o"] == 0 || strings.Join(inputs, "") != "echo ssh-rec-$((6*7))\r" || !strings.Contains(c.Output(), "ssh-rec-42") {
		t.Errorf("events %v, inputs %q", n, inputs)
	}
	if !hasPrefixed(markers, "prompt") {
		t.Errorf("no prompt marker: %q", markers)
	}
}

// The npm asciinema-player, in Debian's Chromium headless, plays a
// recording (v3 as written) to its end and shows the screen `rec text`
// shows.
func TestRecordBrowserPlayer(t *testing.T) {
	chromium := testutil.NeedProgram(t, "chromium")
	t.Setenv("CHROMIUM", chromium)
	dir := castPlayer(t)
	h, _ := startRecHost(t, nil)
	r := h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", "printf 'one\\n\\033[1mtwo\\033[0m\\n'; ls -l /usr | head -5; printf 'caf\\303\\251 end'"}, "record": true})
	id, path := r["session_id"].(string), r["recording"].(string)
	if w := h.must("wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 15000}); w["reason"] != "exit" {
		t.Fatalf("sh: %v", w)
	}
	testutil.Eventually(t, 10*time.Second, "the recording ends", func() bool {
		c, _ := readCast(t, path)
		return len(c.Events) > 0 && c.Events[len(c.Events)-1].Code == "x"
	})
	ctx := exec.Command("node", filepath.Join(dir, "play.mjs"), path)
	var stderr bytes.Buffer
	ctx.Stderr = &stderr
	out, err := ctx.Output()
	if err != nil {
		t.Fatalf("asciinema-player in chromium: %v\n%s", err, stderr.String())
	}
	var played struct{ Lines []string }
	if err := json.Unmarshal(out, &played); err != nil {
		t.Fatalf("play.mjs printed %q: %v", out, err)
	}
	n := len(played.Lines)
	for n > 0 && played.Lines[n-1] == "" {
		n--
	}
	got := strings.Join(played.Lines[:n], "\n")
	want := strings.TrimRight(runRec(t, "text", "--cache-dir", cacheDir(), path), "\n")
	if got != want || !strings.Contains(got, "café end") {
		t.Errorf("asciinema-player shows:\n%s\nrec text:\n%s", got, want)
	}
}

// castPlayer installs internal/castplayer (npm ci, from its lockfile:
// asciinema-player and puppeteer-core, no browser download) into a cache
// directory keyed by the lockfile's hash, with its script; it returns that
// directory.
func castPlayer(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		testutil.NeedProgram(t, tool)
	}
	src := filepath.Join("..", "..", "internal", "castplayer")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(filepath.Dir(cacheDir()), "castplayer-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", "play.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(dir, "node_modules", ".installed")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		if testutil.InCI() {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
		t.Skipf("npm ci failed (no registry?): %v\n%s", err, lastLines(string(out), 5))
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
