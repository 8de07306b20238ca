package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/host/plugin"
	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/internal/sshtest"
	"github.com/termhost/termhost/internal/testutil"
	"github.com/termhost/termhost/sdk/abi"
)

const password = "pool-Test-pw-77"

// fixture: the real ssh plugin in a registry, an in-repo SSH server, and
// a pool with small limits.
type fixture struct {
	srv   *sshtest.Server
	pool  *Pool
	reg   *session.Registry
	rules *policy.Store
	dir   string
}

// newFixture makes the fixture; slow, if given, is how long attaching the
// ssh plugin takes (a compile on a cold cache, a loaded machine).
func newFixture(t *testing.T, l Limits, slow ...time.Duration) *fixture {
	t.Helper()
	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	srv := sshtest.Start(t, sshtest.Options{
		Passwords:      map[string]string{"alice": password},
		AuthorizedKeys: map[string][]ssh.PublicKey{"alice": {signer.PublicKey()}},
	})
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "id")
	os.WriteFile(keyPath, pem.EncodeToMemory(blk), 0o600)
	stall := testutil.SilentListener(t)
	creds := fmt.Sprintf(`{"version":"1.0","credentials":[
	 {"id":"pw","host":"127.0.0.1","port":%d,"username":"alice","authType":"password","password":%q},
	 {"id":"key","host":"127.0.0.1","port":%d,"username":"alice","authType":"key","privateKeyPath":%q},
	 {"id":"bad","host":"127.0.0.1","port":%d,"username":"alice","authType":"password","password":%q},
	 {"id":"stall","host":"127.0.0.1","port":%d,"username":"alice","authType":"password","password":%q}]}`,
		srv.Port, base64.StdEncoding.EncodeToString([]byte(password)), srv.Port, keyPath,
		srv.Port, base64.StdEncoding.EncodeToString([]byte("wrong")),
		stall, base64.StdEncoding.EncodeToString([]byte(password)))
	credFile := filepath.Join(dir, "credentials.json")
	os.WriteFile(credFile, []byte(creds), 0o600)
	store, err := secrets.NewStore(credFile, secrets.Defaults{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "rules.json")
	os.WriteFile(rulesFile, []byte(`{"deny":["^reboot"]}`), 0o644)
	rules, err := policy.NewStore(rulesFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plugins, err := plugin.Open(ctx, plugin.Config{Embedded: os.DirFS("../../plugins/ssh"), CacheDir: cacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := session.NewRegistry(session.Limits{}, session.Config{Logger: testLogger()})
	attach := func(name string, kind abi.Kind, opts []byte) (session.Binding, error) {
		if len(slow) > 0 && name == Plugin {
			time.Sleep(slow[0])
		}
		return plugins.Attach(name, kind, opts)
	}
	d := &Dialer{Sessions: reg, Attach: attach, Creds: store, HostKeys: secrets.NewHostKeys(filepath.Join(dir, "known_hosts"), nil, nil), Rules: rules}
	pool := NewPool(d, l)
	t.Cleanup(func() {
		pool.Close()
		reg.Close()
		plugins.Close()
	})
	return &fixture{srv: srv, pool: pool, reg: reg, rules: rules, dir: dir}
}

// TestConnectionInHandshakeCountsOnce: a connection still in its SSH
// handshake counts once against its owner's limit — not as a slot being
// opened and as a live session both — so with a limit of two, a second
// call runs beside it (CI saw seven concurrent calls beside three
// sessions let only one run where two may).
func TestConnectionInHandshakeCountsOnce(t *testing.T) {
	f := newFixture(t, Limits{PerOwner: 2, ConnectTimeout: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	stalled := make(chan error, 1)
	go func() {
		_, err := f.pool.Execute(ctx, ExecRequest{Owner: "o1", CredID: "stall", Command: "true"})
		stalled <- err
	}()
	if !testutil.Poll(10*time.Second, func() bool { return len(f.reg.Owned("o1", session.KindSSH)) > 0 }) {
		t.Fatal("the connection to the silent host is not in the registry")
	}
	if r := f.exec(t, ExecRequest{CredID: "key", Command: "echo beside"}); r.Stdout != "beside\n" {
		t.Errorf("the call beside the handshake: %+v", r)
	}
	cancel()
	select {
	case err := <-stalled:
		if err == nil {
			t.Error("the call to the silent host succeeded")
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the call to the silent host did not end when cancelled")
	}
}

// TestPluginStartIsNotConnectTime (issue 34): the connect timeout bounds
// the dial, handshake and authentication, not the plugin's compile or
// start before them: a plugin that takes longer than the timeout to attach
// still connects, where the call said "no time was left to connect".
func TestPluginStartIsNotConnectTime(t *testing.T) {
	f := newFixture(t, Limits{ConnectTimeout: 2 * time.Second}, 2500*time.Millisecond)
	if r := f.exec(t, ExecRequest{CredID: "key", Command: "echo connected"}); r.Stdout != "connected\n" {
		t.Errorf("after a slow plugin start: %+v", r)
	}
}

func cacheDir() string {
	if d := os.Getenv("TERMHOST_CACHE_DIR"); d != "" {
		return filepath.Join(d, "sshpool")
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "off"
	}
	return filepath.Join(d, "termhost", "wazero-test-sshpool")
}

func (f *fixture) exec(t *testing.T, r ExecRequest) ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.Owner == "" {
		r.Owner = "o1"
	}
	res, err := f.pool.Execute(ctx, r)
	if err != nil {
		t.Fatalf("Execute %q: %v", r.Command, err)
	}
	return res
}

func TestExecStreamsAndAuth(t *testing.T) {
	f := newFixture(t, Limits{})
	for _, id := range []string{"pw", "key"} {
		res := f.exec(t, ExecRequest{CredID: id, Command: "printf out; printf err >&2; exit 4"})
		if res.Stdout != "out" || res.Stderr != "err" || res.ExitCode == nil || *res.ExitCode != 4 {
			t.Errorf("%s: %+v", id, res.Result)
		}
	}
	res := f.exec(t, ExecRequest{CredID: "pw", Command: "kill -TERM $$"})
	if res.Signal != "TERM" || res.ExitCode != nil {
		t.Errorf("killed by a signal: %+v", res.Result)
	}
	res = f.exec(t, ExecRequest{CredID: "pw", Command: "head -c 100000 /dev/zero | tr '\\0' x", MaxBytes: 1000})
	if len(res.Stdout) != 1000 || !res.StdoutTruncated || res.StdoutBytes != 100000 {
		t.Errorf("bounded stdout: %d bytes, truncated %v, total %d", len(res.Stdout), res.StdoutTruncated, res.StdoutBytes)
	}
	_, err := f.pool.Execute(context.Background(), ExecRequest{Owner: "o1", CredID: "bad", Command: "true"})
	var ce *ConnectError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "authentication failed") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: %v", err)
	}
	_, err = f.pool.Execute(context.Background(), ExecRequest{Owner: "o1", CredID: "nope", Command: "true"})
	var cre *CredentialError
	if !errors.As(err, &cre) {
		t.Errorf("unknown credential: %v", err)
	}
	before := len(f.srv.Commands())
	_, err = f.pool.Execute(context.Background(), ExecRequest{Owner: "o1", CredID: "pw", Command: "reboot now"})
	var be *policy.BlockedError
	if !errors.As(err, &be) || len(f.srv.Commands()) != before {
		t.Errorf("blocked: %v; server got %q", err, f.srv.Commands()[before:])
	}
	// What stays is the warm connection of each credential used (pw,
	// key), nothing else.
	f.pool.mu.Lock()
	warm := len(f.pool.warm)
	f.pool.mu.Unlock()
	if n := len(f.reg.List(session.KindSSH)); n != warm || warm > 2 {
		t.Errorf("%d ephemeral sessions left behind, %d of them warm", n, warm)
	}
}

// sshdPid is the server-side connection an ephemeral command ran on.
func (f *fixture) connOf(t *testing.T, owner, cred string) string {
	t.Helper()
	f.exec(t, ExecRequest{Owner: owner, CredID: cred, Command: "true"})
	f.pool.mu.Lock()
	defer f.pool.mu.Unlock()
	w := f.pool.warm[warmKey{owner, cred}]
	if w == nil {
		t.Fatalf("no warm connection for %s/%s", owner, cred)
	}
	return w.c.s.ID
}

// Consecutive ephemeral calls reuse a warm connection; a changed
// credential, a changed host key, a timed-out command, the idle timeout
// and an owner at its limit each end it.
func TestWarmConnections(t *testing.T) {
	f := newFixture(t, Limits{PerOwner: 2, IdleTimeout: 2 * time.Second})
	a := f.connOf(t, "o1", "pw")
	if b := f.connOf(t, "o1", "pw"); b != a {
		t.Fatalf("the second call opened %s instead of reusing %s", b, a)
	}
	if b := f.connOf(t, "o2", "pw"); b == a {
		t.Fatal("another owner got o1's warm connection")
	}
	// The owner's limit: two shells need both slots, so the warm
	// connections give way.
	s1, err := f.pool.Shell(context.Background(), "key", ShellOptions{Owner: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := f.pool.Shell(context.Background(), "key", ShellOptions{Owner: "o1"})
	if err != nil {
		t.Fatalf("a warm connection stood in the way of the limit: %v", err)
	}
	if s, err := f.reg.Get("o1", a); err == nil && s.Alive() {
		t.Error("the evicted warm connection is still open")
	}
	f.reg.Remove(s1.ID)
	f.reg.Remove(s2.ID)
	// A changed known_hosts (the server's key no longer accepted).
	a = f.connOf(t, "o1", "pw")
	os.WriteFile(filepath.Join(f.dir, "known_hosts"), []byte(fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFmGsXtnR3l0fhtfbK4ZdqvHbAOuNH1fSekw9Gm7bJ5c\n", f.srv.Port)), 0o600)
	_, err = f.pool.Execute(context.Background(), ExecRequest{Owner: "o1", CredID: "pw", Command: "true"})
	if err == nil || !strings.Contains(err.Error(), "HOST KEY CHANGED") {
		t.Errorf("a warm connection to a server whose recorded key changed: %v", err)
	}
	if s, err := f.reg.Get("o1", a); err == nil && s.Alive() {
		t.Error("the warm connection to a distrusted server is still open")
	}
	os.Remove(filepath.Join(f.dir, "known_hosts"))
	// A timed-out command's connection is not kept.
	r := f.exec(t, ExecRequest{Owner: "o1", CredID: "pw", Command: "sleep 5", Timeout: 300 * time.Millisecond})
	if !r.TimedOut || !r.Killed {
		t.Errorf("timed out: %+v", r.Result)
	}
	a = f.connOf(t, "o1", "pw")
	// The idle timeout closes it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.pool.mu.Lock()
		w := f.pool.warm[warmKey{"o1", "pw"}]
		f.pool.mu.Unlock()
		if w == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle warm connection was not closed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s, err := f.reg.Get("o1", a); err == nil && s.Alive() {
		t.Error("the idle warm connection is still open")
	}
}

func TestPersistentCwdAndBudget(t *testing.T) {
	f := newFixture(t, Limits{MaxCommands: 3})
	r := f.exec(t, ExecRequest{CredID: "pw", Mode: Persistent, Command: "cd /tmp && mkdir -p pool-$$ && cd pool-$$"})
	id, cwd := r.SessionID, r.Cwd
	if !strings.HasPrefix(cwd, "/tmp/pool-") {
		t.Fatalf("cwd %q", cwd)
	}
	defer os.RemoveAll(cwd)
	r = f.exec(t, ExecRequest{CredID: "pw", Mode: Persistent, Command: "pwd"})
	if r.SessionID != id || r.Stdout != cwd+"\n" || r.Stderr != "" {
		t.Fatalf("second: %+v", r)
	}
	f.exec(t, ExecRequest{CredID: "pw", Mode: Persistent, Command: "true"})
	r = f.exec(t, ExecRequest{CredID: "pw", Mode: Persistent, Command: "pwd"})
	if r.SessionID == id || r.Replaced != id || r.Stdout != cwd+"\n" || r.CommandCount != 1 {
		t.Fatalf("after the budget: %+v", r)
	}
	if info := f.pool.Info("o1", ""); len(info) != 1 || info[0].ID != r.SessionID {
		t.Errorf("Info: %+v", info)
	}
	if info := f.pool.Info("someone else", ""); len(info) != 0 {
		t.Errorf("another owner sees %+v", info)
	}
	_, err := f.pool.Execute(context.Background(), ExecRequest{Owner: "o2", CredID: "pw", Mode: Persistent, SessionID: r.SessionID, Command: "true"})
	var se *SessionError
	if !errors.As(err, &se) {
		t.Errorf("another owner's session: %v", err)
	}
	// Handed over (claim_session), it is o2's alone, by id and as the
	// session picked for the credential.
	sess, err := f.reg.Get("o1", r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	code, _, err := f.reg.Share("o1", sess)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Claim("o2", code); err != nil {
		t.Fatal(err)
	}
	if got := f.exec(t, ExecRequest{Owner: "o2", CredID: "pw", Mode: Persistent, SessionID: r.SessionID, Command: "pwd"}); got.Stdout != cwd+"\n" {
		t.Errorf("o2 in the session it claimed: %+v", got)
	}
	if info := f.pool.Info("o1", ""); len(info) != 0 {
		t.Errorf("o1 still sees the session it handed over: %+v", info)
	}
	if got := f.exec(t, ExecRequest{Owner: "o1", CredID: "pw", Mode: Persistent, Command: "true"}); got.SessionID == r.SessionID {
		t.Error("o1 was given the session it handed over")
	}
}

func TestLimitsAndIdle(t *testing.T) {
	f := newFixture(t, Limits{PerOwner: 2, PerCredential: 1, IdleTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	s1, err := f.pool.Shell(ctx, "pw", ShellOptions{Owner: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	r := f.exec(t, ExecRequest{CredID: "key", Mode: Persistent, Command: "true"})
	_, err = f.pool.Shell(ctx, "pw", ShellOptions{Owner: "o1"})
	var se *SessionError
	if !errors.As(err, &se) || !errors.Is(err, session.ErrLimit) || !strings.Contains(err.Error(), "at most 2") {
		t.Fatalf("third connection: %v", err)
	}
	// Another owner has its own budget, but the credential's persistent
	// sessions are shared.
	if _, err := f.pool.Shell(ctx, "pw", ShellOptions{Owner: "o2"}); err != nil {
		t.Fatalf("another owner: %v", err)
	}
	_, err = f.pool.Execute(ctx, ExecRequest{Owner: "o2", CredID: "key", Mode: Persistent, Command: "true"})
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "credential") {
		t.Fatalf("second persistent session of a credential: %v", err)
	}
	// The idle persistent session is closed.
	deadline := time.Now().Add(10 * time.Second)
	for len(f.pool.Info("o1", "")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle persistent session not closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s, err := f.reg.Get("o1", r.SessionID); err == nil && s.Alive() {
		t.Error("the idle session's connection is still open")
	}
	f.reg.Remove(s1.ID)
}

func TestTimeoutKillsOnTheServer(t *testing.T) {
	f := newFixture(t, Limits{})
	for _, mode := range []string{Ephemeral, Persistent} {
		marker := fmt.Sprintf("sleep 3%d", time.Now().UnixNano()%1000)
		start := time.Now()
		r := f.exec(t, ExecRequest{CredID: "pw", Mode: mode, Command: "echo go; " + marker, Timeout: 500 * time.Millisecond})
		if !r.TimedOut || r.Stdout != "go\n" || time.Since(start) > 10*time.Second {
			t.Errorf("%s: %+v after %v", mode, r.Result, time.Since(start))
		}
		deadline := time.Now().Add(5 * time.Second)
		for procs(marker) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %q still runs", mode, marker)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Cancelling the call does the same.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // once the server runs it
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !procs("sleep 41"); {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	r, err := f.pool.Execute(ctx, ExecRequest{Owner: "o1", CredID: "pw", Command: "sleep 41", Timeout: time.Minute})
	if err != nil || !r.Cancelled {
		t.Errorf("cancelled: %+v %v", r, err)
	}
	for deadline := time.Now().Add(5 * time.Second); procs("sleep 41"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled command still runs")
		}
	}
}

// procs reports whether a process runs with exactly this command line.
func procs(cmdline string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") == cmdline {
			return true
		}
	}
	return false
}

func TestShellTypedRules(t *testing.T) {
	f := newFixture(t, Limits{})
	s, err := f.pool.Shell(context.Background(), "key", ShellOptions{Owner: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Send(ctx, []byte("echo fine\r")); err != nil {
		t.Fatal(err)
	}
	err = s.Send(ctx, []byte("reboot\r"))
	var be *policy.BlockedError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "C-u") {
		t.Errorf("blocked typed line: %v", err)
	}
	if err := s.Send(ctx, []byte("\x15echo still-fine\r")); err != nil {
		t.Errorf("after C-u: %v", err)
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("SSHPOOL_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

// A plugin that traps in the middle of a connection (here: the host's
// answer to its password request panics inside the host call) ends the
// session closed, with an error that says so; nothing reaches the buffer.
func TestPluginTrapFailsClosed(t *testing.T) {
	f := newFixture(t, Limits{})
	ctx := context.Background()
	_, err := Open(ctx, f.reg, f.pool.d.Attach, Options{
		Host: "127.0.0.1", Port: f.srv.Port,
		Start: map[string]any{"user": "alice", "auth": []map[string]any{{"method": "password"}}},
		HostCall: func(req []byte) ([]byte, error) {
			if strings.Contains(string(req), `"password"`) {
				panic("the host's answer panics")
			}
			return []byte(`{"ok":true}`), nil
		},
	})
	if err == nil || !errors.Is(err, ErrSSH) {
		t.Fatalf("OpenSSH after a trap: %v", err)
	}
	if !strings.Contains(err.Error(), "plugin") {
		t.Errorf("the error does not say the plugin failed: %v", err)
	}
	for _, s := range f.reg.List(session.KindSSH) {
		if s.Alive() {
			t.Errorf("session %s still alive after its plugin trapped", s.ID)
		}
	}
}

// Warm connections of all MCP sessions together stay within maxWarm: the
// longest unused gives way.
func TestWarmConnectionsBounded(t *testing.T) {
	f := newFixture(t, Limits{})
	for i := range maxWarm + 3 {
		f.exec(t, ExecRequest{Owner: fmt.Sprintf("o%d", i), CredID: "pw", Command: "true"})
	}
	f.pool.mu.Lock()
	warm := len(f.pool.warm)
	_, first := f.pool.warm[warmKey{"o0", "pw"}]
	_, last := f.pool.warm[warmKey{fmt.Sprintf("o%d", maxWarm+2), "pw"}]
	f.pool.mu.Unlock()
	live := 0
	for _, s := range f.reg.List(session.KindSSH) {
		if s.Alive() {
			live++
		}
	}
	if warm != maxWarm || live != maxWarm || first || !last {
		t.Errorf("%d warm, %d live connections (oldest kept %v, newest %v); want %d, the newest", warm, live, first, last, maxWarm)
	}
}
