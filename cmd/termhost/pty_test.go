package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/testapps"
	"github.com/termhost/termhost/internal/testutil"
)

// The PTY and terminal-tester tools, end to end: the built binary over
// stdio with go-sdk's client, real programs under a PTY.

func screenOf(t *testing.T, res map[string]any) string {
	t.Helper()
	if sc, ok := res["screen"].(map[string]any); ok {
		res = sc
	}
	c, ok := res["content"].(string)
	if !ok {
		t.Fatalf("no content in %v", res)
	}
	return c
}

// view returns view_screen's plain content.
func (h *hostProc) view(id string) string {
	h.t.Helper()
	r := h.must("view_screen", map[string]any{"session_id": id})
	return r["content"].(string)
}

// screenHas waits until the screen shows want.
func (h *hostProc) screenHas(id, want string) map[string]any {
	h.t.Helper()
	r := h.call(20*time.Second, "wait_for", map[string]any{"session_id": id, "until": regexpQuote(want), "onScreen": true, "timeoutMs": 15000, "view": "plain"})
	if r.isErr || r.res["reason"] != "matched" {
		h.t.Fatalf("screen never showed %q: %v\nscreen:\n%s", want, r, h.view(id))
	}
	return r.res
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TestShellIntegration: a bash under the PTY: a prompt wait returns when
// the command finished, with its exit code and duration; no marker is seen
// in any format.
func TestShellIntegration(t *testing.T) {
	for _, sh := range []string{"bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			testutil.NeedProgram(t, sh)
			h := startHost(t)
			home := t.TempDir()
			id := h.must("launch_app", map[string]any{"command": sh, "env": map[string]string{"HOME": home}, "cols": 100, "rows": 30})["session_id"].(string)
			r := h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000})
			if r["reason"] != "prompt" {
				t.Fatalf("first prompt: %v\n%s", r, h.view(id))
			}
			r = h.must("send_keys", map[string]any{"session_id": id, "text": "echo hi-$((6*7))", "keys": "Enter", "prompt": true, "timeoutMs": 15000})
			if r["reason"] != "prompt" || r["exit_code"] != 0.0 || r["duration_ms"] == nil || !strings.Contains(screenOf(t, r), "hi-42") {
				t.Fatalf("echo: %v", r)
			}
			r = h.must("send_keys", map[string]any{"session_id": id, "text": "sleep 0.3; false", "keys": []string{"Enter"}, "prompt": true, "timeoutMs": 15000})
			if r["reason"] != "prompt" || r["exit_code"] != 1.0 || r["duration_ms"].(float64) < 250 {
				t.Fatalf("false: %v", r)
			}
			// send_keys then a separate wait_for: the prompt that came in
			// between is not lost.
			h.must("send_keys", map[string]any{"session_id": id, "text": "(exit 3)", "keys": "Enter"})
			r = h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000})
			if r["reason"] != "prompt" || r["exit_code"] != 3.0 {
				t.Fatalf("wait_for after send_keys: %v", r)
			}
			for _, f := range []string{"plain", "ansi", "raw", "scrollback"} {
				c := h.must("view_screen", map[string]any{"session_id": id, "format": f})["content"].(string)
				if strings.Contains(c, "133;") {
					t.Fatalf("%s view shows a shell-integration marker: %q", f, c)
				}
			}
			if p := h.must("send_keys", map[string]any{"session_id": id, "text": "echo $PAGER $GIT_PAGER $TERM", "keys": "Enter", "prompt": true, "timeoutMs": 15000}); !strings.Contains(screenOf(t, p), "cat cat xterm-256color") {
				t.Fatalf("agent-safe environment: %s", screenOf(t, p))
			}
		})
	}
}

// TestVimEditsAFile: open a file in vim, edit, save, check the file.
func TestVimEditsAFile(t *testing.T) {
	testutil.NeedProgram(t, "vim")
	h := startHost(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("first line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := h.must("launch_app", map[string]any{"command": "vim", "args": []string{"-u", "NONE", "-N", "-n", file}, "env": map[string]string{"HOME": t.TempDir()}})["session_id"].(string)
	h.screenHas(id, "first line")
	h.must("send_keys", map[string]any{"session_id": id, "keys": "G o", "text": ""})
	h.must("send_keys", map[string]any{"session_id": id, "text": "added by termhost", "keys": "Escape", "screenStable": 200, "timeoutMs": 10000})
	h.screenHas(id, "added by termhost")
	r := h.must("send_keys", map[string]any{"session_id": id, "text": ":wq", "keys": "Enter", "exit": true, "timeoutMs": 10000})
	if r["reason"] != "exit" || r["exit_code"] != 0.0 {
		t.Fatalf(":wq: %v", r)
	}
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "first line\nadded by termhost\n" {
		t.Fatalf("file after :wq = %q, %v", b, err)
	}
	// The final screen stays readable with the exit status.
	v := h.must("view_screen", map[string]any{"session_id": id})
	if v["state"] != "terminated" || v["exit_code"] != 0.0 {
		t.Fatalf("after exit: %v", v)
	}
}

// TestLessPages: page through a file in less with Space, quit with q.
func TestLessPages(t *testing.T) {
	testutil.NeedProgram(t, "less")
	h := startHost(t)
	file := filepath.Join(t.TempDir(), "long.txt")
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "line %03d\n", i)
	}
	os.WriteFile(file, []byte(b.String()), 0o600)
	id := h.must("launch_app", map[string]any{"command": "less", "args": []string{file}, "rows": 24, "env": map[string]string{"LESSHISTFILE": "-"}})["session_id"].(string)
	h.screenHas(id, "line 023")
	h.must("send_keys", map[string]any{"session_id": id, "keys": "Space"})
	h.screenHas(id, "line 046")
	if v := h.view(id); strings.Contains(v, "line 010") {
		t.Fatalf("first page still shown after Space:\n%s", v)
	}
	r := h.must("send_keys", map[string]any{"session_id": id, "keys": "q", "exit": true, "timeoutMs": 10000})
	if r["reason"] != "exit" {
		t.Fatalf("q: %v", r)
	}
}

// TestHtopQuits: htop draws its meters and quits on q.
func TestHtopQuits(t *testing.T) {
	testutil.NeedProgram(t, "htop")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": "htop", "cols": 120, "rows": 40, "env": map[string]string{"HOME": t.TempDir()}})["session_id"].(string)
	h.screenHas(id, "PID")
	v := h.must("view_screen", map[string]any{"session_id": id, "format": "ansi"})
	if !strings.Contains(v["content"].(string), "\x1b[") {
		t.Fatalf("ansi view has no SGR: %q", v["content"])
	}
	r := h.must("send_keys", map[string]any{"session_id": id, "keys": "q", "exit": true, "timeoutMs": 10000})
	if r["reason"] != "exit" || r["exit_code"] != 0.0 {
		t.Fatalf("q: %v", r)
	}
}

// TestMenuApp: the menu test app: the selection is visible in the ansi
// view as reverse video, moves with Down (SS3 under application cursor
// keys), and Enter selects.
func TestMenuApp(t *testing.T) {
	app := testapps.Build(t, "menu")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": app})["session_id"].(string)
	// The whole first frame: the app draws it in one write a row, and a
	// view taken after the first row alone makes every row a change.
	h.screenHas(id, "Item 5")
	before := h.must("view_screen", map[string]any{"session_id": id, "format": "ansi"})["content"].(string)
	if !strings.Contains(before, "\x1b[7m") && !strings.Contains(before, ";7m") && !strings.Contains(before, "[7;") {
		t.Fatalf("no reverse video in the ansi view:\n%q", before)
	}
	h.must("send_keys", map[string]any{"session_id": id, "keys": "Down Down", "screenStable": 100, "timeoutMs": 5000})
	// Only the rows that changed since this client's last ansi view.
	ch := h.must("view_screen", map[string]any{"session_id": id, "format": "ansi", "changes": true})["changes"].([]any)
	if len(ch) < 2 || len(ch) > 4 {
		t.Fatalf("changes after moving the selection: %v", ch)
	}
	r := h.must("send_keys", map[string]any{"session_id": id, "keys": "Enter", "exit": true, "timeoutMs": 5000})
	if r["reason"] != "exit" || !strings.Contains(screenOf(t, r), "selected:") {
		t.Fatalf("enter: %v", r)
	}
}

// TestEditorApp: the editor test app asks for the cursor position (the
// screen answers it), takes typed and bracketed-pasted text, saves.
func TestEditorApp(t *testing.T) {
	app := testapps.Build(t, "editor")
	h := startHost(t)
	file := filepath.Join(t.TempDir(), "doc.txt")
	id := h.must("launch_app", map[string]any{"command": app, "args": []string{file}})["session_id"].(string)
	h.screenHas(id, "cpr ok")
	h.must("send_keys", map[string]any{"session_id": id, "text": "typed", "keys": "Enter"})
	h.must("send_keys", map[string]any{"session_id": id, "paste": "pasted\x1b[201~still pasted"})
	h.must("send_keys", map[string]any{"session_id": id, "keys": "C-s"})
	h.screenHas(id, "saved")
	b, _ := os.ReadFile(file)
	if got := string(b); !strings.Contains(got, "typed\n") || !strings.Contains(got, "pastedstill pasted") {
		t.Fatalf("file = %q", got)
	}
	r := h.must("send_keys", map[string]any{"session_id": id, "keys": "C-q", "exit": true, "timeoutMs": 5000})
	if r["reason"] != "exit" || r["exit_code"] != 0.0 {
		t.Fatalf("quit: %v", r)
	}
}

// TestProgressApp: a bar redrawn with CR; the screen shows the last frame.
func TestProgressApp(t *testing.T) {
	app := testapps.Build(t, "progress")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": app, "args": []string{"-steps", "20", "-delay", "5ms"}})["session_id"].(string)
	r := h.must("wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 10000, "view": "ansi"})
	sc := r["screen"].(map[string]any)["content"].(string)
	if !strings.Contains(sc, "100%") || !strings.Contains(sc, "done") || strings.Contains(sc, " 50%") || !strings.Contains(sc, "32m[#") {
		t.Fatalf("final screen: %q", sc)
	}
}

// TestProcessLifecycles: a process that exits, one that ignores SIGTERM,
// one that never reads its input; restart.
func TestProcessLifecycles(t *testing.T) {
	h := startHost(t, "--write-timeout", "1s")
	id := h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", "echo bye; exit 7"}})["session_id"].(string)
	r := h.must("wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 10000})
	if r["reason"] != "exit" || r["exit_code"] != 7.0 {
		t.Fatalf("exit: %v", r)
	}
	if !strings.Contains(h.view(id), "bye") {
		t.Fatal("final screen lost")
	}
	if r := h.call(5*time.Second, "send_keys", map[string]any{"session_id": id, "text": "x"}); !r.isErr || !strings.HasPrefix(r.msg, "SESSION_DEAD") {
		t.Fatalf("keys to an exited process: %v", r)
	}

	// SIGTERM ignored: SIGKILL after 3 s.
	id = h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", "trap '' TERM HUP; echo ready; while :; do sleep 1; done"}})["session_id"].(string)
	h.screenHas(id, "ready")
	start := time.Now()
	r = h.must("stop_app", map[string]any{"session_id": id})
	if took := time.Since(start); r["exit_signal"] != "SIGKILL" || took > 8*time.Second {
		t.Fatalf("stop of a TERM-ignoring process: %v after %v", r, took)
	}

	// A program that never reads (in raw mode: a cooked terminal drops
	// what does not fit instead): typing answers within the write deadline.
	id = h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", "stty raw -echo; echo raw; exec sleep 60"}})["session_id"].(string)
	h.screenHas(id, "raw")
	big := strings.Repeat("x", 1<<20)
	cr := h.call(10*time.Second, "send_keys", map[string]any{"session_id": id, "text": big})
	if !cr.isErr || cr.took > 5*time.Second {
		t.Fatalf("1 MiB to a program that never reads: %v", cr)
	}
	h.alive("after a stuck write")

	// restart_app keeps the id and starts the program again.
	id = h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", "echo run-$$; exec sleep 60"}, "name": "again"})["session_id"].(string)
	first := h.screenHas(id, "run-")
	r = h.must("restart_app", map[string]any{"session_id": "again"})
	if r["session_id"] != id {
		t.Fatalf("restart changed the id: %v", r)
	}
	second := h.screenHas(id, "run-")
	if screenOf(t, first) == screenOf(t, second) {
		t.Fatalf("restart did not start a new process: %q", screenOf(t, second))
	}
}

// TestPTYTools: the seed-003 tools and resources.
func TestPTYTools(t *testing.T) {
	h := startHost(t)
	pid := h.must("start_pty", map[string]any{"command": "echo hello-pty; read line; echo got:$line"})["processId"].(string)
	// Resources: status and list, output and status of a process.
	res, err := h.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "pty://status"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"processes":1`) {
		t.Fatalf("pty://status: %v %v", res, err)
	}
	updated := make(chan string, 16)
	h.onUpdated(func(uri string) { updated <- uri })
	out := "pty://session/" + pid + "/output"
	if err := h.cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: out}); err != nil {
		t.Fatal(err)
	}
	h.must("send_keys", map[string]any{"session_id": pid, "text": "abc\r"})
	select {
	case uri := <-updated:
		if uri != out {
			t.Fatalf("updated %s", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated for the output")
	}
	h.must("wait_for", map[string]any{"session_id": pid, "exit": true, "timeoutMs": 10000})
	res, err = h.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: out})
	if err != nil || !strings.Contains(res.Contents[0].Text, "got:abc") {
		t.Fatalf("output resource: %v %v", res, err)
	}
	res, err = h.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "pty://session/" + pid + "/status"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"exitCode":0`) || !strings.Contains(res.Contents[0].Text, `"state":"terminated"`) {
		t.Fatalf("status resource: %v %v", res, err)
	}
	res, err = h.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "pty://sessions/list"})
	if err != nil || !strings.Contains(res.Contents[0].Text, pid) {
		t.Fatalf("list resource: %v %v", res, err)
	}
	if _, err := h.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "pty://session/nope/output"}); err == nil {
		t.Fatal("a resource of no session was read")
	}
	tmpl, err := h.cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(tmpl.ResourceTemplates) != 2 {
		t.Fatalf("resource templates: %v %v", tmpl, err)
	}
	// list_pty and read_pty come with activate_pty_tools.
	if r := h.call(5*time.Second, "read_pty", map[string]any{"processId": pid}); !r.isErr {
		t.Fatalf("read_pty before activation: %v", r)
	}
	h.must("activate_pty_tools", map[string]any{})
	l := h.must("list_pty", map[string]any{})["processes"].([]any)
	if len(l) != 1 || l[0].(map[string]any)["exitCode"] != 0.0 {
		t.Fatalf("list_pty: %v", l)
	}
	r := h.must("read_pty", map[string]any{"processId": pid, "stripAnsi": true})
	if !strings.Contains(r["output"].(string), "hello-pty") || !strings.Contains(r["output"].(string), "got:abc") {
		t.Fatalf("read_pty: %v", r)
	}
	if r := h.must("kill_pty", map[string]any{"processId": pid}); r["killed"] != true {
		t.Fatalf("kill_pty: %v", r)
	}

	// With MCP_PTY_DEACTIVATE_RESOURCES the two are plain tools.
	h2 := startHostEnv(t, []string{"MCP_PTY_DEACTIVATE_RESOURCES=true"})
	tools, err := h2.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["list_pty"] || !names["read_pty"] || names["activate_pty_tools"] {
		t.Fatalf("tools without resources: %v", names)
	}
}

// TestManySessionsAndCleanup: 100 concurrent PTY sessions; when the client
// goes away (closes the server's input) every process is gone.
func TestManySessionsAndCleanup(t *testing.T) {
	h := startHost(t)
	var wg sync.WaitGroup
	ids := make([]string, 100)
	errs := make(chan string, 100)
	for i := range ids {
		wg.Go(func() {
			r := h.call(60*time.Second, "launch_app", map[string]any{"command": "sh", "args": []string{"-c", "echo up-" + strconv.Itoa(i) + "; sleep 1000 & cat"}})
			if r.isErr {
				errs <- r.String()
				return
			}
			ids[i] = r.res["session_id"].(string)
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if n := len(h.must("list_sessions", map[string]any{})["sessions"].([]any)); n != 100 {
		t.Fatalf("list_sessions: %d", n)
	}
	r := h.must("send_keys", map[string]any{"session_id": ids[42], "text": "ping\r", "until": "ping", "timeoutMs": 10000})
	if r["reason"] != "matched" {
		t.Fatalf("session 42: %v", r)
	}
	kids := descendants(h.pid)
	if len(kids) < 100 {
		t.Fatalf("only %d child processes", len(kids))
	}
	h.stdin.Close() // the client goes away
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(4 * time.Second):
		t.Fatal("the server did not exit within 4 s of its input closing")
	}
	if !testutil.Poll(5*time.Second, func() bool { return len(alive(kids)) == 0 }) {
		t.Fatalf("processes left behind: %v", alive(kids))
	}
}

// descendants lists every process below pid (children, grandchildren…).
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// alive are the pids that still exist and are not zombies.
func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			continue
		}
		out = append(out, p)
	}
	return out
}

// TestScreenToolsOnEveryKind: a Telnet session is viewed, keyed, resized
// (NAWS reaches the device) like a local program; get_screen_size and
// resize_terminal on a PTY (the program sees the new size).
func TestScreenToolsOnEveryKind(t *testing.T) {
	dev, err := devsim.Listen("127.0.0.1:0", devsim.Config{EOR: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	host, p, _ := net.SplitHostPort(dev.Addr())
	port, _ := strconv.Atoi(p)
	h := startHost(t)
	id := h.must("telnet_connect", map[string]any{"host": host, "port": port, "name": "dev"})["sessionId"].(string)
	h.screenHas(id, "Username:")
	h.must("send_keys", map[string]any{"session_id": "dev", "text": "admin", "keys": "Enter"})
	h.screenHas(id, "Password:")
	h.must("send_keys", map[string]any{"session_id": id, "text": "termhost", "keys": "Enter", "prompt": true, "timeoutMs": 5000})
	h.screenHas(id, "edge-r1>")
	v := h.must("view_screen", map[string]any{"session_id": id})
	if v["cols"] != 80.0 || v["rows"] != 24.0 || v["cursor"].(map[string]any)["col"].(float64) < 8 {
		t.Fatalf("telnet screen: %v", v)
	}
	h.must("resize_terminal", map[string]any{"session_id": id, "cols": 132, "rows": 40})
	if !testutil.Poll(5*time.Second, func() bool {
		for _, s := range dev.Sessions() {
			if s.Width == 132 && s.Height == 40 {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("NAWS did not follow resize_terminal: %+v", dev.Sessions())
	}
	if s := h.must("get_screen_size", map[string]any{"session_id": id}); s["cols"] != 132.0 || s["rows"] != 40.0 {
		t.Fatalf("size: %v", s)
	}
	if v := h.must("view_screen", map[string]any{"session_id": id}); v["cols"] != 132.0 {
		t.Fatalf("screen not resized: %v", v)
	}
	// A list of every kind.
	pid := h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", `trap 'stty size' WINCH; stty size; while :; do sleep 0.05; done`}})["session_id"].(string)
	h.screenHas(pid, "24 80")
	h.must("resize_terminal", map[string]any{"session_id": pid, "cols": 100, "rows": 30})
	h.screenHas(pid, "30 100")
	kinds := map[string]bool{}
	for _, s := range h.must("list_sessions", map[string]any{})["sessions"].([]any) {
		kinds[s.(map[string]any)["kind"].(string)] = true
	}
	if !kinds["telnet"] || !kinds["pty"] {
		t.Fatalf("list_sessions kinds: %v", kinds)
	}
	if c := h.must("get_cursor_position", map[string]any{"session_id": pid}); c["visible"] != true {
		t.Fatalf("cursor: %v", c)
	}
}

// TestTesterBadArguments: bad input to the tester tools gets a code and a
// message naming the field; the server keeps serving.
func TestTesterBadArguments(t *testing.T) {
	h := startHost(t)
	pid := h.must("launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"view_screen", map[string]any{"session_id": "nope"}, "SESSION_NOT_FOUND"},
		{"view_screen", map[string]any{"session_id": pid, "format": "html"}, "INVALID_INPUT: invalid arguments: format: must be one of plain, ansi, raw, scrollback, png or svg"},
		{"view_screen", map[string]any{}, "INVALID_INPUT: invalid arguments: session_id: required"},
		{"send_keys", map[string]any{"session_id": pid, "keys": "Entr"}, `INVALID_INPUT: invalid arguments: keys: "Entr" is not a key name`},
		{"send_keys", map[string]any{"session_id": pid, "keys": []any{"Enter", 5}}, "INVALID_INPUT: invalid arguments: keys[1]: must be a string"},
		{"send_keys", map[string]any{"session_id": pid, "keys": 5}, "INVALID_INPUT: invalid arguments: keys: must be a string or an array"},
		{"send_keys", map[string]any{"session_id": pid}, "INVALID_INPUT: invalid arguments: keys: give keys, text or paste"},
		{"send_keys", map[string]any{"session_id": pid, "text": "x", "until": "("}, "INVALID_INPUT: invalid arguments: until:"},
		{"resize_terminal", map[string]any{"session_id": pid, "cols": 0, "rows": 10}, "INVALID_INPUT: invalid arguments: cols: must be an integer between 1 and 1000, got 0"},
		{"resize_terminal", map[string]any{"session_id": pid, "cols": 80, "rows": 1e9}, "INVALID_INPUT: invalid arguments: rows: must be an integer between 1 and 1000"},
		{"launch_app", map[string]any{"command": ""}, "INVALID_INPUT: invalid arguments: command: must name a program"},
		{"launch_app", map[string]any{"command": "no-such-program-xyz"}, `INVALID_INPUT: invalid arguments: command: command "no-such-program-xyz" not found (looked in PATH)`},
		{"launch_app", map[string]any{"command": "/etc/passwd"}, `INVALID_INPUT: invalid arguments: command: command "/etc/passwd": permission denied`},
		{"start_pty", map[string]any{"command": "no-such-program-xyz --flag"}, `invalid arguments: command: command "no-such-program-xyz" not found`},
		{"launch_app", map[string]any{"command": "cat", "env": map[string]any{"A": 1}}, "INVALID_INPUT: invalid arguments: env.A: must be a string"},
		{"launch_app", map[string]any{"command": "cat", "cwd": "/no/such/dir"}, `INVALID_INPUT: invalid arguments: cwd: working directory "/no/such/dir": no such file or directory`},
		{"wait_for", map[string]any{"session_id": pid}, "INVALID_INPUT: invalid arguments: until: give at least one condition"},
		{"wait_for", map[string]any{"session_ids": []any{pid, "nope"}, "idleMs": 10}, "SESSION_NOT_FOUND"},
		{"wait_for", map[string]any{"session_id": pid, "onScreen": true}, "INVALID_INPUT: invalid arguments: onScreen: needs until"},
		{"stop_app", map[string]any{"session_id": ""}, "INVALID_INPUT: invalid arguments: session_id: must be a session id or name"},
		{"restart_app", map[string]any{"session_id": "nope"}, "SESSION_NOT_FOUND"},
		{"view_screen", map[string]any{"session_id": pid, "limit": 0}, "INVALID_INPUT: invalid arguments: limit: must be an integer between 1 and 5000, got 0"},
	}
	for _, c := range cases {
		r := h.call(10*time.Second, c.tool, c.args)
		if !r.isErr || !strings.Contains(r.msg, c.want) {
			t.Errorf("%s %v: %v; want an error containing %q", c.tool, c.args, r, c.want)
		}
	}
	// A Telnet-only tool refuses a PTY session, and says so.
	if r := h.call(5*time.Second, "kill_pty", map[string]any{"processId": "nope"}); !r.isErr {
		t.Errorf("kill_pty of nothing: %v", r)
	}
	h.alive("after bad arguments")
	if r := h.must("send_keys", map[string]any{"session_id": pid, "text": "still-alive\r", "until": "still-alive", "timeoutMs": 5000}); r["reason"] != "matched" {
		t.Fatalf("session after bad arguments: %v", r)
	}
}

// TestBubbleTeaApp: a Bubble Tea program driven through the screen.
func TestBubbleTeaApp(t *testing.T) {
	app := testapps.Build(t, "bubbletea")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": app})["session_id"].(string)
	h.screenHas(id, "> apple")
	if v := h.must("view_screen", map[string]any{"session_id": id}); v["alt_screen"] != true {
		t.Fatalf("not on the alternate screen: %v", v)
	}
	h.must("send_keys", map[string]any{"session_id": id, "keys": "Down Down"})
	h.screenHas(id, "> cherry")
	r := h.must("send_keys", map[string]any{"session_id": id, "keys": "Enter", "exit": true, "timeoutMs": 10000})
	if r["reason"] != "exit" || r["exit_code"] != 0.0 || !strings.Contains(screenOf(t, r), "chose: cherry") {
		t.Fatalf("enter: %v", r)
	}
}
