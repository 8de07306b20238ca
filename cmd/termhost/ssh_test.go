package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/internal/sshdtest"
	"github.com/termhost/termhost/internal/testutil"
)

// sshFixture is a real sshd, keys, an agent, and a termhost serving the ssh
// tools with credentials for all of them.
type sshFixture struct {
	srv      *sshdtest.Server
	dir      string
	credFile string
	rules    string
	known    string
	cs       *sdk.ClientSession
	logs     *lockedWriter
	secrets  []string // every secret a leak check looks for
	results  []string // every tool result text and error message seen
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func newSSHFixture(t *testing.T) *sshFixture {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	f := &sshFixture{srv: srv, dir: t.TempDir()}
	plain := srv.KeyPair("id_plain", "ed25519", "")
	const passphrase = "correct horse battery staple"
	locked := srv.KeyPair("id_locked", "rsa", passphrase)
	agentKey := srv.KeyPair("id_agent", "ed25519", "")
	for _, k := range []string{plain, locked, agentKey} {
		srv.AuthorizeKey(k)
		data, _ := os.ReadFile(k)
		// The body of each private key file, line by line, is key material.
		for _, line := range strings.Split(string(data), "\n") {
			if len(line) > 40 && !strings.HasPrefix(line, "-----") {
				f.secrets = append(f.secrets, line)
			}
		}
	}
	f.secrets = append(f.secrets, passphrase, b64(passphrase))
	sock := sshdtest.Agent(t, agentKey)
	t.Setenv("SSH_AUTH_SOCK", sock)
	creds := []map[string]any{
		{"id": "key", "name": "plain key", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "key", "privateKeyPath": plain},
		{"id": "locked", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "key", "privateKeyPath": locked, "passphrase": b64(passphrase)},
		{"id": "agent", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "agent"},
		{"id": "wrongpw", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "password", "password": b64("not-the-password-42")},
	}
	f.secrets = append(f.secrets, "not-the-password-42")
	if srv.Password != "" {
		creds = append(creds, map[string]any{"id": "pw", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "password", "password": b64(srv.Password)})
		f.secrets = append(f.secrets, srv.Password, b64(srv.Password))
	}
	f.credFile = filepath.Join(f.dir, "credentials.json")
	f.writeCreds(t, creds)
	f.rules = filepath.Join(f.dir, "rules.json")
	os.WriteFile(f.rules, []byte(`{"deny": ["forbidden-command", "^rm -rf /$"]}`), 0o644)
	f.known = filepath.Join(f.dir, "known_hosts")
	f.cs, f.logs = startServeLogs(t, "--credentials", f.credFile, "--rules", f.rules, "--known-hosts", f.known, "--no-user-known-hosts")
	t.Cleanup(func() { f.checkLeaks(t) })
	return f
}

func (f *sshFixture) writeCreds(t *testing.T, creds []map[string]any) {
	t.Helper()
	f.writeCredsMode(t, creds, 0o600)
}

// writeCredsMode is writeCreds with the file's mode set before it appears.
func (f *sshFixture) writeCredsMode(t *testing.T, creds []map[string]any, mode os.FileMode) {
	t.Helper()
	data, _ := json.MarshalIndent(map[string]any{"version": "1.0", "credentials": creds}, "", "  ")
	tmp := f.credFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.credFile); err != nil {
		t.Fatal(err)
	}
}

// call runs a tool; it returns the result or the JSON-RPC error.
func (f *sshFixture) call(t *testing.T, tool string, args map[string]any) (map[string]any, *jsonrpc.Error) {
	t.Helper()
	r := testutil.CallTool(f.cs, 60*time.Second, tool, args)
	if r.Err != nil {
		f.results = append(f.results, r.Err.Error())
		if r.RPC == nil {
			// go-sdk's client takes code -32003 for its own "client is
			// closing" and reports it as a closed connection, keeping only
			// the text (rawCall checks that code on the wire).
			if strings.Contains(r.Err.Error(), "blocked by rules.json") {
				return nil, &jsonrpc.Error{Code: -32003, Message: r.Err.Error()}
			}
			t.Fatalf("%s: %v (not a JSON-RPC error)", tool, r.Err)
		}
		f.results = append(f.results, string(r.RPC.Data))
		return nil, r.RPC
	}
	f.results = append(f.results, r.Text)
	if r.IsError {
		t.Fatalf("%s: tool error %s (the ssh tools answer with JSON-RPC errors)", tool, r.Text)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(r.Text), &res); err != nil {
		t.Fatalf("%s: %q is not a JSON object", tool, r.Text)
	}
	return res, nil
}

func (f *sshFixture) mustCall(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := f.call(t, tool, args)
	if err != nil {
		t.Fatalf("%s %v: error %d %s (data %s)", tool, args, err.Code, err.Message, err.Data)
	}
	return res
}

func (f *sshFixture) wantErr(t *testing.T, tool string, args map[string]any, code int64, msg string) *jsonrpc.Error {
	t.Helper()
	res, err := f.call(t, tool, args)
	if err == nil {
		t.Fatalf("%s %v: got %v, want error %d", tool, args, res, code)
	}
	if err.Code != code || !strings.Contains(err.Message, msg) {
		t.Fatalf("%s %v: error %d %q, want %d containing %q", tool, args, err.Code, err.Message, code, msg)
	}
	return err
}

// checkLeaks greps every log line and result for the secrets.
func (f *sshFixture) checkLeaks(t *testing.T) {
	all := f.logs.String() + "\n" + strings.Join(f.results, "\n")
	for _, s := range f.secrets {
		if s != "" && strings.Contains(all, s) {
			t.Errorf("a secret (%d bytes, starting %q) appears in a log line or result", len(s), s[:min(4, len(s))])
		}
	}
}

func TestSSHExecuteAgainstOpenSSH(t *testing.T) {
	f := newSSHFixture(t)
	list := f.mustCall(t, "ssh_list_credentials", nil)
	raw, _ := json.Marshal(list)
	for _, want := range []string{`"id":"key"`, `"authType":"agent"`, `"username":"` + f.srv.User + `"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("ssh_list_credentials lacks %s: %s", want, raw)
		}
	}
	ids := []string{"key", "locked", "agent"}
	if f.srv.Password != "" {
		ids = append(ids, "pw")
	} else {
		t.Log("not root: password login against sshd is not tested here")
	}
	for _, id := range ids {
		res := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": id, "command": "echo out-$((6*7)); echo err-line >&2; exit 3"})
		if res["stdout"] != "out-42\n" || res["stderr"] != "err-line\n" || res["exitCode"] != 3.0 {
			t.Errorf("%s: %v", id, res)
		}
	}
	// The first connection trusted the host key and recorded it.
	known, _ := os.ReadFile(f.known)
	if !strings.Contains(string(known), strings.Fields(f.srv.HostKeyPub)[1]) {
		t.Errorf("known_hosts does not hold the server's key: %q", known)
	}
	f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "wrongpw", "command": "true"}, -32000, "auth")
	e := f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "nope", "command": "true"}, -32001, `Credential not found: "nope"`)
	if !strings.Contains(e.Message, "key") {
		t.Errorf("unknown credential error does not list the known ids: %s", e.Message)
	}
	if string(e.Data) != `{"credentialId":"nope"}` { // seed 002's error table
		t.Errorf("unknown credential error data: %s", e.Data)
	}
	before := len(f.srv.Commands())
	if f.srv.Logged && before == 0 {
		t.Fatal("the server's command log is empty: it cannot show a blocked command did not arrive")
	}
	e = f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo x; forbidden-command"}, -32003, "forbidden-command")
	_ = e
	for _, c := range f.srv.Commands()[before:] {
		if strings.Contains(c, "forbidden") {
			t.Errorf("a blocked command reached the server: %q", c)
		}
	}
	f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "key"}, -32602, "command")
	f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "true", "sessionMode": "forever"}, -32602, "sessionMode")
}

func TestSSHPersistentSessions(t *testing.T) {
	f := newSSHFixture(t)
	run := func(cmd string) map[string]any {
		return f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": cmd, "sessionMode": "persistent"})
	}
	r1 := run("cd /tmp")
	id := r1["sessionId"]
	if id == nil || r1["cwd"] != "/tmp" {
		t.Fatalf("persistent cd: %v", r1)
	}
	r2 := run("pwd; echo oops >&2; false")
	if r2["stdout"] != "/tmp\n" || r2["stderr"] != "oops\n" || r2["exitCode"] != 1.0 || r2["sessionId"] != id {
		t.Fatalf("second command: %v", r2)
	}
	run("mkdir -p sub-$PPID && cd sub-$PPID")
	run("true")
	r5 := run("pwd")
	if r5["sessionId"] != id || r5["commandCount"] != 5.0 || !strings.HasPrefix(r5["stdout"].(string), "/tmp/sub-") {
		t.Fatalf("fifth command: %v", r5)
	}
	r6 := run("pwd")
	if r6["sessionId"] == id || r6["replacedSessionId"] != id || r6["commandCount"] != 1.0 || r6["stdout"] != r5["stdout"] {
		t.Fatalf("sixth command must run on a fresh session in the same directory: %v", r6)
	}
	info := f.mustCall(t, "ssh_session_info", map[string]any{"credentialId": "key"})
	sessions, _ := info["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["id"] != r6["sessionId"] || sessions[0].(map[string]any)["maxCommands"] != 5.0 {
		t.Errorf("ssh_session_info: %v", info)
	}
	// A command that runs too long is stopped on the server.
	start := time.Now()
	res := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo started; sleep 600", "sessionMode": "persistent", "timeoutMs": 1500})
	if res["timedOut"] != true || res["stdout"] != "started\n" || time.Since(start) > 20*time.Second {
		t.Errorf("timed-out command: %v after %v", res, time.Since(start))
	}
	waitGone(t, f.srv, "sleep 600")
	res = f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "sleep 600", "timeoutMs": 1000})
	if res["timedOut"] != true {
		t.Errorf("ephemeral timed-out command: %v", res)
	}
	waitGone(t, f.srv, "sleep 600")
}

// waitGone waits until no process of the server's user runs sub.
func waitGone(t *testing.T, srv *sshdtest.Server, sub string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if left = srv.Processes(sub); len(left) == 0 {
			return
		}
	}
	t.Errorf("still running on the server: %q", left)
}

func TestSSHHostKeyChangedFailsClosed(t *testing.T) {
	f := newSSHFixture(t)
	// known_hosts says the server has another key.
	other := f.srv.KeyPair("other_host", "ed25519", "")
	pub, _ := os.ReadFile(other + ".pub")
	line := fmt.Sprintf("[%s]:%d %s\n", f.srv.Host, f.srv.Port, strings.Join(strings.Fields(string(pub))[:2], " "))
	os.WriteFile(f.known, []byte(line), 0o600)
	before := len(f.srv.Commands())
	e := f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo should-not-run"}, -32000, "HOST KEY CHANGED")
	if !strings.Contains(e.Message, "ssh-keygen -R") || !regexp.MustCompile(`SHA256:\S+.*SHA256:\S+`).MatchString(e.Message) {
		t.Errorf("changed-key error lacks both fingerprints or the fix: %s", e.Message)
	}
	if got := f.srv.Commands()[before:]; len(got) != 0 {
		t.Errorf("commands reached a server whose key changed: %q", got)
	}
}

func TestSSHCredentialsHotReload(t *testing.T) {
	f := newSSHFixture(t)
	f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "late", "command": "true"}, -32001, "late")
	key := filepath.Join(f.srv.Dir, "id_plain")
	f.writeCreds(t, []map[string]any{
		{"id": "late", "host": f.srv.Host, "port": f.srv.Port, "username": f.srv.User, "authType": "key", "privateKeyPath": key},
	})
	var res map[string]any
	var err *jsonrpc.Error
	if !testutil.Poll(10*time.Second, func() bool {
		res, err = f.call(t, "ssh_execute", map[string]any{"credentialId": "late", "command": "echo reloaded"})
		return err == nil && res["stdout"] == "reloaded\n"
	}) {
		t.Fatalf("credentials not reloaded: %v %v", res, err)
	}
	// The server's view of the credentials, as the agent sees it.
	listed := func() string {
		raw, _ := json.Marshal(f.mustCall(t, "ssh_list_credentials", nil))
		return string(raw)
	}
	// A broken file keeps the last good set. The warning shows the reload
	// was tried; only then does the set it kept say anything.
	os.WriteFile(f.credFile, []byte(`{"version":`), 0o600)
	var raw string
	if !testutil.Poll(10*time.Second, func() bool { raw = listed(); return strings.Contains(raw, "warning") }) {
		t.Fatalf("a broken credentials file gave no warning: %s", raw)
	}
	if !strings.Contains(raw, `"late"`) {
		t.Errorf("after a broken file the last good set is gone: %s", raw)
	}
	// A file others can read is refused. It appears with that mode (a
	// chmod after the write could let the reload read it before).
	f.writeCredsMode(t, []map[string]any{{"id": "open", "host": "h", "username": "u", "authType": "agent"}}, 0o644)
	if !testutil.Poll(10*time.Second, func() bool { raw = listed(); return strings.Contains(raw, "chmod 600") }) {
		t.Fatalf("a group-readable credentials file was not refused with the fix: %s", raw)
	}
	if strings.Contains(raw, `"open"`) {
		t.Errorf("a group-readable file was loaded: %s", raw)
	}
}

func TestSSHShellDrivesVim(t *testing.T) {
	testutil.NeedProgram(t, "vim")
	f := newSSHFixture(t)
	res := f.mustCall(t, "ssh_shell", map[string]any{"credentialId": "key", "cols": 100, "rows": 30})
	id, _ := res["session_id"].(string)
	if id == "" {
		t.Fatalf("ssh_shell: %v", res)
	}
	h := &hostProc{t: t, cs: f.cs}
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo ready-$((6*7))\n"})
	h.screenHas(id, "ready-42")
	size := mustCall(t, f.cs, "get_screen_size", map[string]any{"session_id": id})
	if size["cols"] != 100.0 || size["rows"] != 30.0 {
		t.Errorf("size: %v", size)
	}
	// Typed input is checked against the rules too.
	_, msg, isErr := call(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "rm -rf /\n"})
	if !isErr || !strings.Contains(msg, "rules.json") {
		t.Errorf("a blocked line typed into the shell: %v %s", isErr, msg)
	}
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "keys": "C-u"})
	file := fmt.Sprintf("/tmp/termhost-ssh-vim-%d.txt", time.Now().UnixNano())
	defer os.Remove(file)
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "vim " + file + "\n"})
	h.screenHas(id, "~")
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "keys": "i"})
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "written over ssh"})
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "keys": []any{"Escape"}})
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": ":wq\r"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(file)
		if strings.TrimSpace(string(data)) == "written over ssh" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vim over ssh did not save the file: %q\nscreen:\n%s", data, h.view(id))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// vim flushes unread input as it restores the terminal: type on only
	// once the shell is back.
	for i := 0; ; i++ {
		mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": fmt.Sprintf("echo back-%d-$((2*3))\n", i)})
		r := h.call(5*time.Second, "wait_for", map[string]any{"session_id": id, "until": fmt.Sprintf("back-%d-6", i), "onScreen": true, "timeoutMs": 2000})
		if !r.isErr && r.res["reason"] == "matched" {
			break
		}
		if i == 5 {
			t.Fatalf("the shell did not come back after vim:\n%s", h.view(id))
		}
	}
	mustCall(t, f.cs, "resize_terminal", map[string]any{"session_id": id, "cols": 90, "rows": 20})
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "stty size\n"})
	h.screenHas(id, "20 90")
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "sleep 300\n"})
	// Interrupt it once it runs (a ^C before the shell read the line would
	// only flush the input).
	for deadline := time.Now().Add(10 * time.Second); len(f.srv.Processes("sleep 300")) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sleep 300 never started:\n%s", h.view(id))
		}
	}
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "keys": "C-c"})
	waitGone(t, f.srv, "sleep 300")
	mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": "echo after-$((1+1))\n"})
	h.screenHas(id, "after-2")
	mustCall(t, f.cs, "stop_app", map[string]any{"session_id": id})
}

// TestSSHBlockedOnTheWire checks the JSON-RPC error of a blocked command as
// it is written (go-sdk's client cannot show code -32003, see call), and
// that it needs no credentials file or server: rules come first.
func TestSSHBlockedOnTheWire(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.json")
	os.WriteFile(rules, []byte(`{"deny": ["^shutdown\\b"]}`), 0o644)
	cmd := exec.Command(binary, "serve", "--cache-dir", cacheDir(), "--rules", rules, "--credentials", filepath.Join(dir, "none.json"),
		"--known-hosts", filepath.Join(dir, "kh"), "--no-user-known-hosts")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ssh_execute","arguments":{"credentialId":"any","command":"shutdown -h now"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ssh_execute","arguments":{"credentialId":"any","command":"uptime"}}}
`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("answers: %q", out)
	}
	type answer struct {
		ID    int `json:"id"`
		Error struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	byID := map[int]answer{}
	for _, l := range lines {
		var a answer
		json.Unmarshal([]byte(l), &a)
		byID[a.ID] = a
	}
	blocked, unknown := byID[2], byID[3]
	if blocked.Error.Code != -32003 || !strings.Contains(blocked.Error.Message, "deny pattern") || !strings.Contains(string(blocked.Error.Data), `"rule":"^shutdown\\b"`) {
		t.Errorf("blocked command: %+v", blocked)
	}
	if unknown.Error.Code != -32001 || !strings.Contains(unknown.Error.Message, `"any"`) {
		t.Errorf("unknown credential: %+v", unknown)
	}
}

// An OpenSSH shell through the linux dialect: detected, run_command in one
// call.
func TestSSHShellLinuxDialect(t *testing.T) {
	f := newSSHFixture(t)
	res := f.mustCall(t, "ssh_shell", map[string]any{"credentialId": "key", "dialect": "auto"})
	id, _ := res["session_id"].(string)
	// The login's output and the first prompt come first.
	if w := mustCall(t, f.cs, "wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000}); w["reason"] != "prompt" {
		t.Fatalf("first prompt: %v", w)
	}
	r := mustCall(t, f.cs, "run_command", map[string]any{"sessionId": id, "command": "echo out-$((6*7))", "timeoutMs": 15000})
	if r["output"] != "out-42\n" || r["reason"] != "done" || r["dialect"] != "linux" {
		t.Fatalf("run_command over an ssh shell: %v", r)
	}
	r = mustCall(t, f.cs, "run_command", map[string]any{"sessionId": id, "command": "no-such-command-x", "timeoutMs": 15000})
	if !strings.Contains(r["output"].(string), "not found") {
		t.Errorf("unknown command: %v", r)
	}
	// The generic interrupt (telnet_send's signal ip) reaches the ssh
	// plugin, which types ^C into the shell channel: the foreground job
	// ends and the prompt comes back.
	r = mustCall(t, f.cs, "run_command", map[string]any{"sessionId": id, "command": "sleep 60", "expect": "never-printed", "timeoutMs": 1000})
	if r["reason"] != "timeout" {
		t.Fatalf("sleep 60: %v", r)
	}
	mustCall(t, f.cs, "telnet_send", map[string]any{"sessionId": id, "command": "", "noNewline": true, "signal": "ip"})
	if w := mustCall(t, f.cs, "wait_for", map[string]any{"session_id": id, "until": `\^C[\s\S]*\$\s*$`, "timeoutMs": 15000}); w["reason"] != "matched" {
		t.Fatalf("no prompt after the interrupt: %v", w)
	}
}
