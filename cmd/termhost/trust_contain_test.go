package main

// Issue 16, items 4, 5 and 8 (SPEC TRUST-2, TRUST-3): what programs
// started by termhost inherit, what they can read, and that nothing they
// start outlives their session, their client or termhost itself.

import (
	"context"
	"encoding/base64"
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

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termhost/termhost/internal/testutil"
)

// TestOwnEnvListed: every environment variable a flag falls back to is on
// ownEnv, the list of what programs never inherit.
func TestOwnEnvListed(t *testing.T) {
	for _, c := range commands {
		fs := newFlags(c.name)
		c.flags(fs)
		for _, fb := range fs.fallbacks {
			if !ownEnvHas(fb.variable) {
				t.Errorf("%s: flag --%s falls back to %s, which is not on ownEnv", c.name, fb.flag, fb.variable)
			}
		}
	}
}

func ownEnvHas(name string) bool {
	for _, v := range ownEnv {
		if p, ok := strings.CutSuffix(v.Name, "*"); ok && strings.HasPrefix(name, p) || v.Name == name {
			return true
		}
	}
	return false
}

// runToEnd launches a program and returns everything it printed (the
// screen is tall enough for all of it).
func (h *hostProc) runToEnd(args map[string]any) string {
	h.t.Helper()
	args["rows"], args["cols"] = 400, 80
	id := h.must("launch_app", args)["session_id"].(string)
	r := h.must("wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 15000})
	if r["reason"] != "exit" {
		h.t.Fatalf("%v did not exit: %v", args, r)
	}
	return h.view(id)
}

// TestProgramsGetNoSecrets (issue 16 item 4): with SSH_PASSPHRASE and
// termhost's configuration variables set, `launch_app env` shows none of
// them; a caller's env still applies, but cannot hand a program
// termhost's secret.
func TestProgramsGetNoSecrets(t *testing.T) {
	const pass = "pp-7f3a-SECRET"
	h := startHostEnv(t, []string{
		"SSH_PASSPHRASE=" + pass, "SSH_KEY_PATH=/nonexistent/key", "SESSION_TIMEOUT=5m",
		"MAX_COMMANDS_PER_SESSION=7", "MCP_PROTOCOL_VERSION=2025-06-18", "PORT=4999",
		"TERMHOST_SOMETHING=x1", "LOG_FORMAT=text", "KEEP_ME=yes",
	})
	out := h.runToEnd(map[string]any{"command": "env"})
	if !strings.Contains(out, "KEEP_ME=yes") {
		t.Fatalf("the ordinary environment is missing: %q", out)
	}
	for _, bad := range []string{pass, "SSH_PASSPHRASE", "SSH_KEY_PATH", "SESSION_TIMEOUT", "MAX_COMMANDS_PER_SESSION", "MCP_PROTOCOL_VERSION", "PORT=4999", "TERMHOST_", "LOG_FORMAT"} {
		if strings.Contains(out, bad) {
			t.Errorf("launch_app env shows %q:\n%s", bad, out)
		}
	}
	// The caller's own variables apply, one of termhost's names included.
	out = h.runToEnd(map[string]any{"command": "env", "env": map[string]any{"PORT": "8080"}})
	if !strings.Contains(out, "PORT=8080") {
		t.Errorf("the caller's PORT did not apply: %q", out)
	}
	// termhost's secret value is refused, whatever the variable is called.
	for _, v := range []string{pass, "x" + pass + "y"} {
		r := h.call(10*time.Second, "launch_app", map[string]any{"command": "env", "env": map[string]any{"SNEAKY": v}})
		if !r.isErr || !strings.Contains(r.msg, "env") || !strings.Contains(r.msg, `"SNEAKY"`) || strings.Contains(r.msg, pass) {
			t.Errorf("env SNEAKY=<termhost's passphrase>: %v", r)
		}
	}
	// A shell does not see them either.
	out = h.runToEnd(map[string]any{"command": "sh", "args": []string{"-c", `echo "p=[$SSH_PASSPHRASE]"`}})
	if !strings.Contains(out, "p=[]") {
		t.Errorf("sh sees SSH_PASSPHRASE: %q", out)
	}
}

// TestProgramsCannotReadCredentials (issue 16 item 5): `launch_app cat
// credentials.json` (absolute path) shows no secret, nor the key a
// credential names, nor a key named after a reload; bash still runs with
// shell integration.
func TestProgramsCannotReadCredentials(t *testing.T) {
	dir := t.TempDir()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	key := filepath.Join(dir, "id_test")
	os.WriteFile(key, []byte("KEY-MATERIAL-1"), 0o600)
	credFile := filepath.Join(dir, "credentials.json")
	write := func(keyPath string) {
		b, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": []map[string]any{
			{"id": "dev", "host": "127.0.0.1", "port": 23, "username": "admin", "password": b64("pw-SECRET-42")},
			{"id": "k", "host": "127.0.0.1", "port": 22, "username": "u", "authType": "key", "privateKeyPath": keyPath},
		}})
		if err := os.WriteFile(credFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(key)
	h := startHost(t, "--credentials", credFile, "--rules", emptyRules(t, dir), "--known-hosts", filepath.Join(dir, "kh"))
	if !testutil.Poll(10*time.Second, func() bool { return strings.Contains(h.logs.String(), "sandbox:") }) {
		t.Fatalf("no sandbox line in the log")
	}
	if strings.Contains(h.logs.String(), "level=WARN msg=\"sandbox:") {
		t.Skipf("no sandbox on this machine: %s", h.logs.String())
	}
	if !strings.Contains(h.logs.String(), "sandbox: credentials file and keys hidden from programs (mount namespace") {
		t.Fatalf("the start-up log does not say the files are hidden")
	}
	out := h.runToEnd(map[string]any{"command": "cat", "args": []string{credFile, key}})
	for _, bad := range []string{b64("pw-SECRET-42"), "KEY-MATERIAL", "credentials"} {
		if strings.Contains(out, bad) {
			t.Fatalf("cat credentials.json and the key shows %q:\n%s", bad, out)
		}
	}
	// A reload names another key: programs started afterwards cannot read it.
	key2 := filepath.Join(dir, "id_other")
	os.WriteFile(key2, []byte("KEY-MATERIAL-2"), 0o600)
	n := strings.Count(h.logs.String(), "credentials reloaded")
	write(key2)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Count(h.logs.String(), "credentials reloaded") > n }) {
		t.Fatal("the credentials file was not reloaded")
	}
	if out := h.runToEnd(map[string]any{"command": "cat", "args": []string{key2}}); strings.Contains(out, "KEY-MATERIAL") {
		t.Fatalf("the reloaded credential's key was readable: %q", out)
	}
	// Nor the compiled-plugin cache: its files are the code trusted
	// plugins run.
	if entries, _ := os.ReadDir(cacheDir()); len(entries) > 0 {
		if out := h.runToEnd(map[string]any{"command": "ls", "args": []string{"-A", cacheDir()}}); strings.TrimSpace(out) != "" {
			t.Fatalf("a program lists the plugin cache: %q", out)
		}
	}
	// The files are intact for termhost, and a shell works with its
	// integration (a prompt wait sees the exit code).
	if b, _ := os.ReadFile(key); string(b) != "KEY-MATERIAL-1" {
		t.Fatalf("the key changed: %q", b)
	}
	id := h.must("launch_app", map[string]any{"command": "bash", "env": map[string]string{"HOME": t.TempDir()}})["session_id"].(string)
	if r := h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000}); r["reason"] != "prompt" {
		t.Fatalf("bash under the sandbox, first prompt: %v\n%s", r, h.view(id))
	}
	r := h.must("send_keys", map[string]any{"session_id": id, "text": "(exit 3)", "keys": "Enter", "prompt": true, "timeoutMs": 15000})
	if r["reason"] != "prompt" || r["exit_code"] != 3.0 {
		t.Fatalf("bash under the sandbox: %v\n%s", r, h.view(id))
	}
}

// emptyRules writes an empty rules file in dir (an explicit --rules must
// name one that exists) and returns its path.
func emptyRules(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// daemonLine starts a grandchild that leaves the session (setsid), ignores
// TERM and HUP and writes its pid to file, then waits.
func daemonLine(file string) string {
	return fmt.Sprintf(`setsid sh -c 'trap "" TERM HUP; echo $$ > %s; exec sleep 1000' </dev/null >/dev/null 2>&1 & echo started; wait`, file)
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	if !testutil.Poll(15*time.Second, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("the grandchild never wrote its pid to %s", file)
	}
	return pid
}

// mustEnd waits (bounded) for pid to be gone; the test kills it if not.
func mustEnd(t *testing.T, pid int, what string) {
	t.Helper()
	if !testutil.Poll(8*time.Second, func() bool { return len(alive([]int{pid})) == 0 }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("%s: the setsid'd grandchild %d is still running", what, pid)
	}
}

// containments are the --containment values tested: both paths.
var containments = []string{"cgroup", "subreaper"}

func startContained(t *testing.T, mech string) *hostProc {
	t.Helper()
	h := startHost(t, "--containment", mech)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Contains(h.logs.String(), "containment:") }) {
		t.Fatalf("no containment line in the log")
	}
	return h
}

// TestDaemonGoneAfterStopApp (issue 16 item 8): a setsid'd grandchild that
// ignores TERM and HUP is gone after stop_app, on both paths.
func TestDaemonGoneAfterStopApp(t *testing.T) {
	for _, mech := range containments {
		t.Run(mech, func(t *testing.T) {
			h := startContained(t, mech)
			file := filepath.Join(t.TempDir(), "pid")
			id := h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", daemonLine(file)}})["session_id"].(string)
			pid := readPid(t, file)
			h.must("stop_app", map[string]any{"session_id": id})
			mustEnd(t, pid, "after stop_app")
		})
	}
}

// TestDaemonGoneAfterClientLeaves: the stdio client's exit ends it.
func TestDaemonGoneAfterClientLeaves(t *testing.T) {
	for _, mech := range containments {
		t.Run(mech, func(t *testing.T) {
			h := startContained(t, mech)
			file := filepath.Join(t.TempDir(), "pid")
			h.must("start_pty", map[string]any{"command": daemonLine(file)})
			pid := readPid(t, file)
			h.stdin.Close()
			done := make(chan error, 1)
			go func() { done <- h.cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("termhost did not exit after its client left")
			}
			mustEnd(t, pid, "after the client left")
		})
	}
}

// TestDaemonGoneAfterTermhostKilled: after kill -9 of termhost no program
// it started keeps running.
func TestDaemonGoneAfterTermhostKilled(t *testing.T) {
	for _, mech := range containments {
		t.Run(mech, func(t *testing.T) {
			h := startContained(t, mech)
			file := filepath.Join(t.TempDir(), "pid")
			h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-c", daemonLine(file)}})
			pid := readPid(t, file)
			syscall.Kill(h.pid, syscall.SIGKILL)
			mustEnd(t, pid, "after termhost was SIGKILLed")
		})
	}
}

// TestUnprivilegedTermhost: termhost run as an ordinary user (nobody):
// it is not dumpable, so a program it starts cannot read its environment
// through /proc; the credentials file is hidden through a user namespace
// and the start-up log says what that costs (setuid programs).
func TestUnprivilegedTermhost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to become nobody")
	}
	for _, sandbox := range []string{"off", "auto"} {
		t.Run("sandbox="+sandbox, func(t *testing.T) { unprivileged(t, sandbox) })
	}
}

func unprivileged(t *testing.T, sandbox string) {
	dir, err := os.MkdirTemp("", "termhost-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "termhost")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o700)
	os.Chown(home, 65534, 65534)
	creds := filepath.Join(home, "credentials.json")
	os.WriteFile(creds, []byte(`{"version":"1.0","credentials":[{"id":"d","host":"127.0.0.1","port":23,"username":"u","password":"Tk9CT0RZLVNFQ1JFVA=="}]}`), 0o600)
	os.Chown(creds, 65534, 65534)
	cmd := exec.Command(bin, "serve", "--cache-dir", "off", "--sandbox", sandbox, "--credentials", creds, "--rules", emptyRules(t, home), "--known-hosts", filepath.Join(home, "kh"))
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SSH_PASSPHRASE=nobody-pp-SECRET"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	logs := &lockedWriter{b: &strings.Builder{}}
	cmd.Stderr = logs
	client := sdk.NewClient(&sdk.Implementation{Name: "nobody", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs)
	}
	defer cs.Close()
	defer func() {
		if t.Failed() {
			t.Logf("termhost stderr:\n%s", logs)
		}
	}()
	run := func(args ...string) string {
		t.Helper()
		id := mustCall(t, cs, "launch_app", map[string]any{"command": args[0], "args": args[1:], "rows": 100, "cols": 200})["session_id"].(string)
		r := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 60000})
		if r["reason"] != "exit" {
			t.Fatalf("%v: %v", args, r)
		}
		return mustCall(t, cs, "view_screen", map[string]any{"session_id": id})["content"].(string)
	}
	out := run("sh", "-c", fmt.Sprintf(`id -u; cat /proc/%d/environ; echo; echo rc=$?`, cmd.Process.Pid))
	if !strings.Contains(out, "65534") || strings.Contains(out, "nobody-pp-SECRET") {
		t.Fatalf("a program read termhost's environment:\n%s", out)
	}
	if sandbox == "off" {
		return
	}
	if !strings.Contains(logs.String(), "sandbox: credentials file and keys hidden from programs") {
		if strings.Contains(logs.String(), "cannot be hidden") {
			t.Skipf("no user namespaces here: %s", logs)
		}
		t.Fatalf("no sandbox line")
	}
	if !strings.Contains(logs.String(), "setuid programs such as sudo do not gain privileges") {
		t.Errorf("the log does not say that setuid programs lose their privileges")
	}
	if out := run("cat", creds); strings.Contains(out, "Tk9CT0RZLVNFQ1JFVA") {
		t.Fatalf("nobody's program read the credentials file:\n%s", out)
	}
}

// TestAgentSocketWithheld: SSH_AUTH_SOCK reaches programs until a
// credential signs through the agent (decided at each start, so a reload
// counts).
func TestAgentSocketWithheld(t *testing.T) {
	dir := t.TempDir()
	credFile := filepath.Join(dir, "credentials.json")
	write := func(creds string) {
		if err := os.WriteFile(credFile, []byte(`{"version":"1.0","credentials":[`+creds+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"id":"p","host":"127.0.0.1","port":22,"username":"u","password":"cA=="}`)
	h := startHostEnv(t, []string{"SSH_AUTH_SOCK=/tmp/termhost-test-agent.sock"}, "--credentials", credFile,
		"--rules", emptyRules(t, dir), "--known-hosts", filepath.Join(dir, "kh"))
	if out := h.runToEnd(map[string]any{"command": "env"}); !strings.Contains(out, "SSH_AUTH_SOCK=/tmp/termhost-test-agent.sock") {
		t.Fatalf("without an agent credential the socket should pass: %q", out)
	}
	n := strings.Count(h.logs.String(), "credentials reloaded")
	write(`{"id":"a","host":"127.0.0.1","port":22,"username":"u","authType":"agent"}`)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Count(h.logs.String(), "credentials reloaded") > n }) {
		t.Fatal("the credentials file was not reloaded")
	}
	if out := h.runToEnd(map[string]any{"command": "env"}); strings.Contains(out, "SSH_AUTH_SOCK") {
		t.Fatalf("with an agent credential programs still get SSH_AUTH_SOCK: %q", out)
	}
}
