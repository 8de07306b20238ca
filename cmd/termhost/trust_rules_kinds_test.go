package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/testutil"
)

// Issue 33 items 4 and 5: command rules on every path into a shell, and
// credentials that keep their kind.

// kindRules is the rules of these tests: touch and mkfs denied as
// commands (anchored, so only the parser's simple commands match: an
// echo of the word passes), and reload, a device's.
const kindRules = `{"deny": ["^touch\\b", "^mkfs", "^reload\\b"]}`

// startRulesHost starts termhost with rules (the text of rules.json) and
// credentials (entries of credentials.json, secrets as written), and
// returns it with the rules file's path.
func startRulesHost(t *testing.T, rules string, creds []map[string]any) (*hostProc, string) {
	t.Helper()
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(rulesFile, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	if creds == nil {
		creds = []map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": creds})
	credFile := filepath.Join(dir, "credentials.json")
	if err := os.WriteFile(credFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return startHost(t, "--rules", rulesFile, "--credentials", credFile,
		"--known-hosts", filepath.Join(dir, "kh"), "--no-user-known-hosts"), rulesFile
}

// denyTarget is a directory any user may write in: every file a denied
// command would make goes there, so an empty directory at the end says
// nothing ran.
func denyTarget(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	return dir
}

func noFilesIn(t *testing.T, dir string) {
	t.Helper()
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("denied commands ran: files were created: %v", names)
	}
}

// blocked says whether a call was refused by the rules.
func blocked(r callResult) bool {
	return r.isErr && (strings.Contains(r.msg, "rules.json") || strings.Contains(r.msg, "cannot be checked"))
}

// shellPaths tries, on one shell session, every way an agent sends a line:
// run_command (lists, sh -c, a computed name, a wrapper), send_keys with
// Enter (whole, split over calls, edited with the cursor keys, pasted,
// after C-v C-j, C-o), and, on Telnet, telnet_send with CR LF and with LF
// alone. Each must be refused; an allowed command then runs, which it
// could not before anything refused had run.
func shellPaths(t *testing.T, h *hostProc, id string, telnet bool, dir string) {
	t.Helper()
	f := func(name string) string { return filepath.Join(dir, name) }
	clear := func() {
		h.call(10*time.Second, "send_keys", map[string]any{"session_id": id, "keys": []any{"C-e", "C-u"}})
	}
	for _, cmd := range []string{
		"touch " + f("run1"),
		"true; touch " + f("run2"),
		"true && touch " + f("run3"),
		"sh -c 'touch " + f("run4") + "'",
		"T=touch; $T " + f("run5"),
		"env X=1 /usr/bin/touch " + f("run6"),
		"mkfs.ext4 -V",
	} {
		if r := h.call(20*time.Second, "run_command", map[string]any{"sessionId": id, "command": cmd, "timeoutMs": 5000}); !blocked(r) {
			t.Errorf("run_command %q was not refused: %+v", cmd, r)
		}
	}
	keys := func(args map[string]any) callResult {
		args["session_id"] = id
		return h.call(20*time.Second, "send_keys", args)
	}
	for _, c := range []struct {
		name  string
		steps []map[string]any
	}{
		{"whole", []map[string]any{{"text": "touch " + f("keys1"), "keys": "Enter"}}},
		{"text with CR", []map[string]any{{"text": "touch " + f("keys2") + "\r"}}},
		{"text with LF", []map[string]any{{"text": "touch " + f("keys3") + "\n"}}},
		{"split", []map[string]any{{"text": "tou"}, {"text": "ch " + f("keys4")}, {"keys": "Enter"}}},
		{"edited", []map[string]any{{"text": "ouch " + f("keys5")}, {"keys": []any{"Home"}}, {"text": "t"}, {"keys": []any{"Enter"}}}},
		{"C-a", []map[string]any{{"text": "ouch " + f("keys6")}, {"keys": []any{"C-a"}}, {"text": "t"}, {"keys": []any{"Enter"}}}},
		{"pasted", []map[string]any{{"paste": "touch " + f("keys7") + "\n"}}},
		{"pasted then Enter", []map[string]any{{"paste": "touch " + f("keys8")}, {"keys": "Enter"}}},
		{"C-v C-j", []map[string]any{{"text": "echo x"}, {"keys": []any{"C-v", "C-j"}}, {"text": "touch " + f("keys9")}, {"keys": "Enter"}}},
		{"C-o", []map[string]any{{"text": "touch " + f("keys10")}, {"keys": []any{"C-o"}}}},
	} {
		var r callResult
		for _, s := range c.steps {
			if r = keys(s); r.isErr {
				break
			}
		}
		if !blocked(r) {
			t.Errorf("send_keys %s was not refused: %+v", c.name, r)
		}
		clear()
	}
	// From history: ": touch FILE" is harmless; Up, C-a, C-d, C-d makes
	// it "touch FILE", which only the screen shows.
	if r := keys(map[string]any{"text": ": touch " + f("hist") + "\r"}); r.isErr {
		t.Fatalf("a harmless line: %+v", r)
	}
	h.screenHas(id, ": touch "+f("hist"))
	var r callResult
	for _, s := range []map[string]any{{"keys": []any{"Up", "C-a", "C-d", "C-d"}}, {"keys": []any{"Enter"}}} {
		if r = keys(s); r.isErr {
			break
		}
	}
	if !blocked(r) {
		t.Errorf("send_keys of a line edited from history was not refused: %+v", r)
	}
	clear()
	if telnet {
		for _, c := range []struct {
			name string
			args map[string]any
		}{
			{"CR LF", map[string]any{"command": "touch " + f("tel1")}},
			{"LF only", map[string]any{"command": "touch " + f("tel2") + "\n", "noNewline": true}},
			{"CR only", map[string]any{"command": "touch " + f("tel3") + "\r", "noNewline": true}},
		} {
			c.args["sessionId"] = id
			if r := h.call(20*time.Second, "telnet_send", c.args); !blocked(r) {
				t.Errorf("telnet_send %s was not refused: %+v", c.name, r)
			}
			clear()
		}
		// Typed in two calls, the line end in the second.
		h.call(10*time.Second, "telnet_send", map[string]any{"sessionId": id, "command": "touch " + f("tel4"), "noNewline": true})
		if r := h.call(20*time.Second, "telnet_send", map[string]any{"sessionId": id, "command": ""}); !blocked(r) {
			t.Errorf("telnet_send of a line end after a denied line was not refused: %+v", r)
		}
		clear()
	}
	// A line typed before run_command's own: the shell would run both.
	keys(map[string]any{"text": "touch " + f("pending") + "; "})
	h.call(20*time.Second, "run_command", map[string]any{"sessionId": id, "command": "true", "timeoutMs": 5000})
	clear()
	// The shell still works (and would have made any file by now).
	res := h.must("run_command", map[string]any{"sessionId": id, "command": "echo allowed-$((6*7)); echo touch me", "timeoutMs": 15000})
	if out, _ := res["output"].(string); !strings.Contains(out, "allowed-42") || !strings.Contains(out, "touch me") {
		t.Errorf("an allowed command: %v\n%s", res, h.view(id))
	}
	noFilesIn(t, dir)
}

// TestRulesEveryKindPTY: with touch and mkfs denied, a local bash
// (launch_app) refuses them on every path (issue 33 item 4: run_command
// ran them).
func TestRulesEveryKindPTY(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	h, _ := startRulesHost(t, kindRules, nil)
	dir := denyTarget(t)
	id := h.must("launch_app", map[string]any{"command": "bash", "cols": 200})["session_id"].(string)
	h.must("run_command", map[string]any{"sessionId": id, "command": "echo ready", "timeoutMs": 15000})
	shellPaths(t, h, id, false, dir)
	// The program a session starts is a command too.
	for _, c := range []map[string]any{
		{"command": "touch", "args": []string{filepath.Join(dir, "launch1")}},
		{"command": "/usr/bin/env", "args": []string{"touch", filepath.Join(dir, "launch2")}},
		{"command": "sh", "args": []string{"-c", "touch " + filepath.Join(dir, "launch3")}},
	} {
		if r := h.call(20*time.Second, "launch_app", c); !blocked(r) {
			t.Errorf("launch_app %v was not refused: %+v", c, r)
		}
	}
	for _, line := range []string{"touch " + filepath.Join(dir, "pty1"), "env touch " + filepath.Join(dir, "pty2"), "true; touch " + filepath.Join(dir, "pty3")} {
		if r := h.call(20*time.Second, "start_pty", map[string]any{"command": line}); !blocked(r) {
			t.Errorf("start_pty %q was not refused: %+v", line, r)
		}
	}
	if r := h.call(20*time.Second, "launch_app", map[string]any{"command": "bash", "env": map[string]string{"PROMPT_COMMAND": "touch " + filepath.Join(dir, "prompt")}}); !blocked(r) {
		t.Errorf("launch_app bash with a PROMPT_COMMAND was not refused: %+v", r)
	}
	time.Sleep(300 * time.Millisecond)
	noFilesIn(t, dir)
}

// TestRulesEveryKindTelnet: the same on bash behind BusyBox telnetd, with
// telnet_send too.
func TestRulesEveryKindTelnet(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	requireTool(t, "/bin/busybox", "--list")
	port := busyboxTelnetd(t, "/bin/bash", "HOME="+t.TempDir(), "PS1=tb$ ")
	h, _ := startRulesHost(t, kindRules, nil)
	dir := denyTarget(t)
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "cols": 200})["sessionId"].(string)
	h.must("run_command", map[string]any{"sessionId": id, "command": "echo ready", "timeoutMs": 15000})
	shellPaths(t, h, id, true, dir)
}

// TestRulesDeviceCLI: a device's commands are checked as well (a rule is
// about what the agent may run: reload on a router is as dangerous as
// mkfs on a server).
func TestRulesDeviceCLI(t *testing.T) {
	const pass = "Rules-Device-Pass-5"
	_, port := startDevsim(t, devsim.Config{Personality: "cisco_ios", Username: "admin", Password: pass, NoColor: true})
	b64 := base64.StdEncoding.EncodeToString
	h, _ := startRulesHost(t, kindRules, []map[string]any{
		{"id": "r1", "host": "127.0.0.1", "port": port, "username": "admin", "password": b64([]byte(pass))},
	})
	id := h.connectDevice(t, "r1")
	for _, args := range []map[string]any{
		{"tool": "run_command", "sessionId": id, "command": "reload"},
		{"tool": "telnet_send", "sessionId": id, "command": "reload"},
		{"tool": "send_keys", "session_id": id, "text": "reload\r"},
	} {
		tool := args["tool"].(string)
		delete(args, "tool")
		if r := h.call(20*time.Second, tool, args); !blocked(r) {
			t.Errorf("%s reload on a device was not refused: %+v", tool, r)
		}
		h.call(10*time.Second, "send_keys", map[string]any{"session_id": id, "keys": []any{"C-u"}})
	}
	res := h.must("run_command", map[string]any{"sessionId": id, "command": "show version", "timeoutMs": 15000})
	if res["reason"] != "done" || res["output"] == "" {
		t.Errorf("show version after the refusals: %v", res)
	}
}

// TestRulesKindsScope: a rule may name the kinds of session it is for;
// without "kinds" it is for every kind.
func TestRulesKindsScope(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	f := newSSHFixture(t)
	h := &hostProc{t: t, cs: f.cs}
	reloads := strings.Count(f.logs.String(), "rules reloaded")
	os.WriteFile(f.rules, []byte(`{"deny": [{"pattern": "^touch\\b", "kinds": ["pty"]}, {"pattern": "^mkdir\\b", "kinds": ["ssh", "telnet"]}, "^mkfs"]}`), 0o644)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Count(f.logs.String(), "rules reloaded") > reloads }) {
		t.Fatalf("the scoped rules were not loaded:\n%s", f.logs.String())
	}
	dir := denyTarget(t)
	// On a local shell touch is refused, mkdir and mkfs's absence are not.
	id := h.must("launch_app", map[string]any{"command": "bash"})["session_id"].(string)
	if r := h.call(20*time.Second, "run_command", map[string]any{"sessionId": id, "command": "touch " + filepath.Join(dir, "pty-touch"), "timeoutMs": 10000}); !blocked(r) {
		t.Errorf("touch on a PTY with a rule for pty: %+v", r)
	}
	if r := h.call(20*time.Second, "run_command", map[string]any{"sessionId": id, "command": "mkfs.ext4 -V", "timeoutMs": 10000}); !blocked(r) {
		t.Errorf("mkfs on a PTY with a rule for every kind: %+v", r)
	}
	h.must("run_command", map[string]any{"sessionId": id, "command": "mkdir " + filepath.Join(dir, "pty-mkdir"), "timeoutMs": 10000})
	if _, err := os.Stat(filepath.Join(dir, "pty-mkdir")); err != nil {
		t.Errorf("mkdir on a PTY (its rule is for ssh and telnet): %v", err)
	}
	// Over SSH the other way round.
	if _, err := f.call(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "mkdir " + filepath.Join(dir, "ssh-mkdir")}); err == nil || err.Code != -32003 {
		t.Errorf("mkdir over ssh_execute with a rule for ssh: %v", err)
	}
	if _, err := f.call(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "mkfs.ext4 -V"}); err == nil || err.Code != -32003 {
		t.Errorf("mkfs over ssh_execute with a rule for every kind: %v", err)
	}
	res := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "touch " + filepath.Join(dir, "ssh-touch")})
	if res["exitCode"] != 0.0 {
		t.Errorf("touch over ssh_execute (its rule is for pty): %v", res)
	}
	// A kind that does not exist is a mistake in the file, named.
	warns := strings.Count(f.logs.String(), "rules not reloaded")
	os.WriteFile(f.rules, []byte(`{"deny": [{"pattern": "^x", "kinds": ["serial"]}]}`), 0o644)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Count(f.logs.String(), "rules not reloaded") > warns }) {
		t.Errorf("a rule for an unknown kind was accepted:\n%s", f.logs.String())
	} else if !strings.Contains(f.logs.String(), "serial") {
		t.Errorf("the warning does not name the unknown kind:\n%s", f.logs.String())
	}
}

// TestRulesRestart: restart_app starts its program again only if the
// rules in force then allow it.
func TestRulesRestart(t *testing.T) {
	h, rules := startRulesHost(t, `{}`, nil)
	id := h.must("launch_app", map[string]any{"command": "sleep", "args": []string{"1000"}})["session_id"].(string)
	reloads := strings.Count(h.logs.String(), "rules reloaded")
	os.WriteFile(rules, []byte(`{"deny": ["^sleep\\b"]}`), 0o644)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Count(h.logs.String(), "rules reloaded") > reloads }) {
		t.Fatal("the rules were not reloaded")
	}
	if r := h.call(20*time.Second, "restart_app", map[string]any{"session_id": id}); !blocked(r) {
		t.Errorf("restart_app of a program the rules now deny: %+v", r)
	}
	if r := h.call(20*time.Second, "launch_app", map[string]any{"command": "sleep", "args": []string{"1"}}); !blocked(r) {
		t.Errorf("launch_app of a denied program: %+v", r)
	}
}

// TestRulesSecretIsOneLine: a secret that holds a line end would type a
// command behind it that no rule checked; with rules in force it is
// refused, and nothing runs (issue 33 items 2 and 4: the ask page's
// secret reaches the session as send_secret's does).
func TestRulesSecretIsOneLine(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	requireTool(t, "/bin/busybox", "--list")
	port := busyboxTelnetd(t, "/bin/bash", "HOME="+t.TempDir(), "PS1=tb$ ")
	dir := denyTarget(t)
	b64 := base64.StdEncoding.EncodeToString
	h, _ := startRulesHost(t, kindRules, []map[string]any{
		{"id": "two-lines", "host": "127.0.0.1", "port": port, "username": "u", "password": b64([]byte("pw\rtouch " + filepath.Join(dir, "secret")))},
	})
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	h.must("run_command", map[string]any{"sessionId": id, "command": "echo ready", "timeoutMs": 15000})
	h.must("send_keys", map[string]any{"session_id": id, "text": "read -rs P; echo got-it\r"})
	time.Sleep(300 * time.Millisecond)
	r := h.call(20*time.Second, "send_secret", map[string]any{"sessionId": id, "credentialId": "two-lines", "field": "password"})
	if !r.isErr || !strings.Contains(r.msg, "one line") {
		t.Errorf("a secret with a line end was typed: %+v", r)
	}
	if strings.Contains(r.msg, "touch") {
		t.Errorf("the refusal shows the secret: %s", r.msg)
	}
	h.call(10*time.Second, "send_keys", map[string]any{"session_id": id, "keys": []any{"C-c"}})
	h.must("run_command", map[string]any{"sessionId": id, "command": "echo after", "timeoutMs": 15000})
	noFilesIn(t, dir)
}

// loginPeer is a fake Telnet login service that remembers what it was
// sent.
func loginPeer(t *testing.T) *fakePeer {
	return startFakePeer(t, func(f *fakePeer, c net.Conn, r *telnetLines) {
		io.WriteString(c, "login: ")
		if _, err := r.line(); err != nil {
			return
		}
		io.WriteString(c, "Password: ")
		if _, err := r.line(); err != nil {
			return
		}
		io.WriteString(c, "\r\nwelcome\r\nfake$ ")
		io.Copy(io.Discard, c)
	})
}

// TestCredentialKinds: an SSH credential is never typed into Telnet (an
// SSH credential without a port went to Telnet's port 23 of its host, in
// clear), and a device credential is not used for SSH, unless the
// credential's "kinds" says it is for both; refused before anything is
// dialled or typed, naming the field.
func TestCredentialKinds(t *testing.T) {
	const pass = "Kinds-Pass-7"
	peer := loginPeer(t)
	b64 := base64.StdEncoding.EncodeToString([]byte(pass))
	sshCred := func(id string, port int) map[string]any {
		m := map[string]any{"id": id, "host": "127.0.0.1", "username": "u", "authType": "password", "password": b64}
		if port != 0 {
			m["port"] = port
		}
		return m
	}
	h, _ := startRulesHost(t, `{}`, []map[string]any{
		sshCred("ssh-noport", 0),
		sshCred("ssh-port", peer.port),
		{"id": "dev", "host": "127.0.0.1", "port": peer.port, "username": "u", "password": b64},
	})
	for _, id := range []string{"ssh-noport", "ssh-port"} {
		r := h.call(20*time.Second, "telnet_connect", map[string]any{"credentialId": id})
		if !r.isErr || !strings.Contains(r.msg, `"kinds"`) {
			t.Errorf("telnet_connect with SSH credential %s: %+v (want a refusal naming \"kinds\")", id, r)
		}
	}
	if n := peer.conns.Load(); n != 0 {
		t.Errorf("the Telnet service got %d connections from SSH credentials", n)
	}
	// send_secret and set_mode into a Telnet session to the credential's
	// own host and port.
	tid := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": peer.port})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": tid, "until": "login: ", "timeoutMs": 5000})
	h.must("telnet_send", map[string]any{"sessionId": tid, "command": "u"})
	h.must("telnet_read", map[string]any{"sessionId": tid, "until": "Password: ", "timeoutMs": 5000})
	for _, tool := range []string{"send_secret", "set_mode"} {
		args := map[string]any{"sessionId": tid, "credentialId": "ssh-port", "field": "password"}
		if tool == "set_mode" {
			args = map[string]any{"sessionId": tid, "credentialId": "ssh-port", "mode": "privileged", "timeoutMs": 3000}
		}
		if r := h.call(20*time.Second, tool, args); !r.isErr || !strings.Contains(r.msg, `"kinds"`) {
			t.Errorf("%s of an SSH credential into Telnet: %+v", tool, r)
		}
	}
	if strings.Contains(peer.received(), pass) {
		t.Fatalf("the Telnet service got the SSH credential's password")
	}
	// A device credential logs in over Telnet, not over SSH.
	if r := h.call(20*time.Second, "telnet_connect", map[string]any{"credentialId": "dev"}); r.isErr || r.res["loggedIn"] != true {
		t.Errorf("telnet_connect with a device credential: %+v", r)
	}
	conns := peer.conns.Load()
	for tool, args := range map[string]map[string]any{
		"ssh_execute": {"credentialId": "dev", "command": "true"},
		"ssh_shell":   {"credentialId": "dev"},
	} {
		if r := h.call(20*time.Second, tool, args); !r.isErr || !strings.Contains(r.msg, `"kinds"`) {
			t.Errorf("%s with a device credential: %+v", tool, r)
		}
	}
	if n := peer.conns.Load(); n != conns {
		t.Errorf("SSH dialled a device credential's target (%d connections)", n-conns)
	}
	// The list shows each credential's kinds.
	list := h.must("ssh_list_credentials", map[string]any{})
	lb, _ := json.Marshal(list)
	for _, want := range []string{`"id":"ssh-port"`, `"kinds":["ssh"]`, `"kinds":["telnet"]`} {
		if !strings.Contains(string(lb), want) {
			t.Errorf("ssh_list_credentials lacks %s: %s", want, lb)
		}
	}
}

// TestCredentialKindsBoth: "kinds": ["ssh", "telnet"] lets an SSH-style
// credential log in over Telnet.
func TestCredentialKindsBoth(t *testing.T) {
	const pass = "Kinds-Both-Pass-8"
	peer := loginPeer(t)
	h, _ := startRulesHost(t, `{}`, []map[string]any{
		{"id": "both", "host": "127.0.0.1", "port": peer.port, "username": "u", "authType": "password",
			"password": base64.StdEncoding.EncodeToString([]byte(pass)), "kinds": []string{"ssh", "telnet"}},
	})
	if r := h.call(20*time.Second, "telnet_connect", map[string]any{"credentialId": "both"}); r.isErr || r.res["loggedIn"] != true {
		t.Errorf("telnet_connect with a credential for both: %+v", r)
	}
	if !strings.Contains(peer.received(), pass) {
		t.Errorf("the password was not typed: %q", peer.received())
	}
}
