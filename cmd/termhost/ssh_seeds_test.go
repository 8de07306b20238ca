package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termhost/termhost/internal/testutil"
)

// Seeds 001/002 to the letter: their environment variables, the limits
// under load, pooled ephemeral connections and timed-out commands that
// are stopped even when sshd ignores signal requests.

// rawSSHCall runs a tool from any goroutine: no t.Fatal, no shared state.
func rawSSHCall(cs *sdk.ClientSession, tool string, args map[string]any) (string, *jsonrpc.Error, error) {
	r := testutil.CallTool(cs, 60*time.Second, tool, args)
	switch {
	case r.RPC != nil:
		return "", r.RPC, nil
	case r.Err != nil:
		return "", nil, r.Err
	case r.IsError:
		return "", nil, fmt.Errorf("tool error: %s", r.Text)
	}
	return r.Text, nil, nil
}

// waitCred waits until the server's credentials hold id (after writeCreds).
func (f *sshFixture) waitCred(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list := f.mustCall(t, "ssh_list_credentials", nil)
		for _, c := range list["credentials"].([]any) {
			if c.(map[string]any)["id"] == id {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("credential %q never loaded", id)
		}
	}
}

// SESSION_TIMEOUT (ms), MAX_COMMANDS_PER_SESSION and SSH_CONNECTION_TIMEOUT
// (ms) of seeds 001/002 are honoured.
func TestSSHSeedEnvironment(t *testing.T) {
	t.Setenv("MAX_COMMANDS_PER_SESSION", "2")
	t.Setenv("SESSION_TIMEOUT", "1500")
	t.Setenv("SSH_CONNECTION_TIMEOUT", "700")
	f := newSSHFixture(t)
	run := func(cmd string) map[string]any {
		return f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": cmd, "sessionMode": "persistent"})
	}
	r1 := run("cd /tmp")
	if r1["maxCommands"] != 2.0 || r1["commandCount"] != 1.0 {
		t.Fatalf("MAX_COMMANDS_PER_SESSION=2: %v", r1)
	}
	r2 := run("pwd")
	if r2["sessionId"] != r1["sessionId"] || r2["commandCount"] != 2.0 {
		t.Fatalf("second command: %v", r2)
	}
	r3 := run("pwd")
	if r3["sessionId"] == r1["sessionId"] || r3["replacedSessionId"] != r1["sessionId"] || r3["commandCount"] != 1.0 || r3["stdout"] != "/tmp\n" {
		t.Fatalf("third command must run on a fresh connection: %v", r3)
	}
	// SESSION_TIMEOUT=1500 ms: the idle persistent session is closed soon
	// after 1.5 s (the default is 5 minutes).
	idleFrom := time.Now()
	for {
		info := f.mustCall(t, "ssh_session_info", map[string]any{})
		if len(info["sessions"].([]any)) == 0 {
			break
		}
		if time.Since(idleFrom) > 8*time.Second {
			t.Fatalf("SESSION_TIMEOUT=1500: the persistent session is still open after %v: %v", time.Since(idleFrom).Round(time.Millisecond), info)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if took := time.Since(idleFrom); took < 1400*time.Millisecond {
		t.Errorf("the session was closed after %v idle, before SESSION_TIMEOUT", took)
	}
	// SSH_CONNECTION_TIMEOUT=700 ms: a server that accepts and never
	// answers fails the call within about that long, not the default 10 s.
	hole := testutil.SilentListener(t)
	f.writeCreds(t, []map[string]any{
		{"id": "key", "host": f.srv.Host, "port": f.srv.Port, "username": f.srv.User, "authType": "key", "privateKeyPath": filepath.Join(f.srv.Dir, "id_plain")},
		{"id": "hole", "host": "127.0.0.1", "port": hole, "username": "nobody", "authType": "key", "privateKeyPath": filepath.Join(f.srv.Dir, "id_plain")},
	})
	f.waitCred(t, "hole")
	start := time.Now()
	e := f.wantErr(t, "ssh_execute", map[string]any{"credentialId": "hole", "command": "true"}, -32000, "")
	if took := time.Since(start); took > 3*time.Second || !strings.Contains(e.Message, "700ms") {
		t.Errorf("SSH_CONNECTION_TIMEOUT=700: failed after %v with %q", took.Round(time.Millisecond), e.Message)
	}
}

// Flags win over the variables; a variable that is not a number or a
// duration is refused at start, naming it.
func TestSSHSeedFlagsAndBadValues(t *testing.T) {
	for _, c := range []struct {
		env, want string
	}{
		{"SESSION_TIMEOUT=soon", "SESSION_TIMEOUT"},
		{"MAX_COMMANDS_PER_SESSION=0", "ssh-max-commands"},
		{"SSH_CONNECTION_TIMEOUT=-5", "ssh-connect-timeout"},
	} {
		cmd := exec.Command(binary, "serve", "--cache-dir", cacheDir())
		cmd.Env = append(os.Environ(), c.env)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: exit %v, output %q; want exit 2 naming %s", c.env, err, out, c.want)
		}
	}
	var o serveOptions
	fs := newFlags("serve")
	o.register(fs)
	t.Setenv("SESSION_TIMEOUT", "1500")
	t.Setenv("MAX_COMMANDS_PER_SESSION", "7")
	t.Setenv("SSH_CONNECTION_TIMEOUT", "2500")
	if err := fs.parse([]string{"--ssh-max-commands", "9"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.SSHLimits; l.MaxCommands != 9 || l.IdleTimeout != 1500*time.Millisecond || l.ConnectTimeout != 2500*time.Millisecond {
		t.Errorf("limits from flags and environment: %+v", l)
	}
}

// Six concurrent persistent calls on one credential open at most three
// sessions (seed 001: maxSessionsPerCredential 3); the others are told
// -32002 at once, as one call at the limit is.
func TestSSHSeedCredentialLimitUnderLoad(t *testing.T) {
	f := newSSHFixture(t)
	type out struct {
		text string
		je   *jsonrpc.Error
		err  error
	}
	outs := make([]out, 6)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			o := &outs[i]
			o.text, o.je, o.err = rawSSHCall(f.cs, "ssh_execute", map[string]any{"credentialId": "key", "command": "sleep 2; echo ok", "sessionMode": "persistent"})
		})
	}
	wg.Wait()
	ok, limited := 0, 0
	ids := map[string]bool{}
	for _, o := range outs {
		switch {
		case o.err != nil:
			t.Errorf("call failed: %v", o.err)
		case o.je != nil:
			if o.je.Code != -32002 || !strings.Contains(o.je.Message, "at most 3") {
				t.Errorf("error %d %q, want -32002 at the limit", o.je.Code, o.je.Message)
			}
			limited++
		default:
			ok++
			var m map[string]any
			if err := json.Unmarshal([]byte(o.text), &m); err != nil || m["stdout"] != "ok\n" {
				t.Errorf("result %q", o.text)
			}
			ids[fmt.Sprint(m["sessionId"])] = true
		}
	}
	if ok != 3 || limited != 3 || len(ids) != 3 {
		t.Errorf("6 concurrent persistent calls: %d succeeded on %d sessions, %d limited; want 3 on 3, 3 limited", ok, len(ids), limited)
	}
	if info := f.mustCall(t, "ssh_session_info", map[string]any{"credentialId": "key"}); len(info["sessions"].([]any)) != 3 {
		t.Errorf("ssh_session_info lists %d sessions, want 3", len(info["sessions"].([]any)))
	}
	// The connections of one client are bounded the same way (5): seven
	// concurrent ephemeral calls, two of them told -32002.
	outs = make([]out, 7)
	f.mustCall(t, "ssh_session_info", nil)
	for i := range outs {
		wg.Go(func() {
			o := &outs[i]
			o.text, o.je, o.err = rawSSHCall(f.cs, "ssh_execute", map[string]any{"credentialId": "key", "command": "sleep 2; echo ok"})
		})
	}
	wg.Wait()
	ok, limited = 0, 0
	for _, o := range outs {
		switch {
		case o.err != nil:
			t.Errorf("ephemeral call failed: %v", o.err)
		case o.je != nil && o.je.Code == -32002:
			limited++
		case o.je != nil:
			t.Errorf("ephemeral: error %d %q", o.je.Code, o.je.Message)
		default:
			ok++
		}
	}
	// Three persistent sessions are open (idle): they count, so two
	// ephemeral calls may run at once; idle pooled connections never
	// stand in the way.
	if ok != 2 || limited != 5 {
		t.Errorf("7 concurrent ephemeral calls beside 3 persistent sessions: %d ran, %d limited; want 2 and 5", ok, limited)
	}
}

// A timed-out ephemeral command is stopped even when sshd ignores the
// signal request (a root login: OpenSSH logs "session signalling requires
// privilege separation"), and the result says killed truthfully.
func TestSSHSeedTimeoutStopsWithoutSignals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the root login is where sshd ignores signal requests")
	}
	f := newSSHFixture(t)
	key := filepath.Join(f.srv.Dir, "id_plain")
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.srv.Dir, "authorized", "root"), pub, 0o644); err != nil {
		t.Fatal(err)
	}
	f.writeCreds(t, []map[string]any{
		{"id": "key", "host": f.srv.Host, "port": f.srv.Port, "username": f.srv.User, "authType": "key", "privateKeyPath": key},
		{"id": "root", "host": f.srv.Host, "port": f.srv.Port, "username": "root", "authType": "key", "privateKeyPath": key},
	})
	f.waitCred(t, "root")
	if r := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "root", "command": "id -u"}); r["stdout"] != "0\n" {
		t.Fatalf("root login: %v", r)
	}
	for i, c := range []struct{ cred, cmd, mode string }{
		{"root", "sleep 600.%d", ""},                   // sh execs sleep: the process sshd started
		{"root", "sleep 600.%d; echo after", ""},       // a shell waiting for it
		{"root", "sleep 600.%d & sleep 600.%[1]d", ""}, // a background job too
		{"key", "sleep 600.%d", ""},                    // where signals work
		{"root", "sleep 600.%d", "persistent"},         // a persistent session's shell
	} {
		n := time.Now().UnixNano()%900000 + 100000
		marker := fmt.Sprintf("600.%d", n)
		cmd := fmt.Sprintf(c.cmd, n)
		start := time.Now()
		args := map[string]any{"credentialId": c.cred, "command": cmd, "timeoutMs": 1500}
		if c.mode != "" {
			args["sessionMode"] = c.mode
		}
		r := f.mustCall(t, "ssh_execute", args)
		if r["timedOut"] != true || r["killed"] != true || time.Since(start) > 15*time.Second {
			t.Errorf("%d %s %q: want timedOut and killed true: %v after %v", i, c.cred, cmd, r, time.Since(start).Round(time.Millisecond))
		}
		var left string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			out, _ := exec.Command("pgrep", "-af", marker).Output()
			if left = strings.TrimSpace(string(out)); left == "" {
				break
			}
		}
		if left != "" {
			t.Errorf("%d %s %q: still running after the timeout: %s", i, c.cred, cmd, left)
			exec.Command("pkill", "-f", marker).Run()
		}
		// The credential still works afterwards.
		if r := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": c.cred, "command": "echo fine"}); r["stdout"] != "fine\n" || r["killed"] != false {
			t.Errorf("after the timeout: %v", r)
		}
	}
	if !strings.Contains(f.srv.Log(), "requires privilege separation") {
		t.Log("sshd did not log that it ignored the signal request: the root case may not have exercised the fallback")
	}
}

// Consecutive ephemeral calls on one credential reuse one warm
// connection (seed 001 §4.2), each on a fresh channel with no shell
// state; a changed credential is not served by a connection authenticated
// with the old one.
func TestSSHSeedEphemeralPooling(t *testing.T) {
	f := newSSHFixture(t)
	first := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo $PPID; X=1; cd /tmp"})
	second := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo $PPID; echo x=$X; pwd"})
	ppid1 := strings.TrimSpace(first["stdout"].(string))
	lines := strings.Split(strings.TrimSpace(second["stdout"].(string)), "\n")
	if len(lines) != 3 || lines[0] != ppid1 {
		t.Fatalf("the second call did not run on the first one's connection (sshd %s, then %v)", ppid1, lines)
	}
	if lines[1] != "x=" || lines[2] == "/tmp" {
		t.Errorf("shell state carried over between ephemeral calls: %v", lines)
	}
	if c := f.srv.Log(); strings.Count(c, "Accepted publickey") > 1 && strings.Count(c, "Accepted publickey") != 1 {
		t.Logf("sshd log shows %d logins", strings.Count(c, "Accepted publickey"))
	}
	// The server drops the warm connection (its sshd is killed): the next
	// call still runs, on a new connection.
	if os.Geteuid() == 0 {
		exec.Command("kill", "-KILL", ppid1).Run()
		r := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo $PPID"})
		if p := strings.TrimSpace(r["stdout"].(string)); p == ppid1 || p == "" {
			t.Errorf("after the server dropped the warm connection: %v", r)
		}
		ppid1 = strings.TrimSpace(r["stdout"].(string))
	}
	// A reloaded credential (another key file) gets a new connection.
	other := f.srv.KeyPair("id_other", "ed25519", "")
	f.srv.AuthorizeKey(other)
	f.writeCreds(t, []map[string]any{
		{"id": "key", "host": f.srv.Host, "port": f.srv.Port, "username": f.srv.User, "authType": "key", "privateKeyPath": other},
		{"id": "marker", "host": f.srv.Host, "port": f.srv.Port, "username": f.srv.User, "authType": "key", "privateKeyPath": other},
	})
	f.waitCred(t, "marker")
	third := f.mustCall(t, "ssh_execute", map[string]any{"credentialId": "key", "command": "echo $PPID"})
	if strings.TrimSpace(third["stdout"].(string)) == ppid1 {
		t.Error("a reloaded credential reused the connection authenticated with the old one")
	}
}
