package main

// Issue 33 item 6: the sandbox hides paths, not files. A second name (a
// hard link) of the credentials file made before termhost started read
// the secrets from a program; a key named by a reload after a session
// started stayed readable from that session.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// writeCreds writes a credentials file at path: a device credential, and
// an SSH key credential for each key given.
func writeCreds(t *testing.T, path string, keys ...string) {
	t.Helper()
	creds := []map[string]any{{"id": "dev", "host": "127.0.0.1", "port": 23, "username": "admin",
		"password": base64.StdEncoding.EncodeToString([]byte("pw-SECRET-33"))}}
	for i, k := range keys {
		creds = append(creds, map[string]any{"id": fmt.Sprintf("k%d", i), "host": "127.0.0.1", "port": 22, "username": "u", "authType": "key", "privateKeyPath": k})
	}
	b, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": creds})
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// requireSandbox skips the test when this machine cannot hide files.
func requireSandbox(t *testing.T, h *hostProc) {
	t.Helper()
	if !testutil.Poll(10*time.Second, func() bool { return strings.Contains(h.logs.String(), "sandbox:") }) {
		t.Fatalf("no sandbox line in the log")
	}
	if strings.Contains(h.logs.String(), "level=WARN msg=\"sandbox: the credentials file and keys cannot be hidden") {
		t.Skipf("no sandbox on this machine: %s", h.logs.String())
	}
}

// refusedStart runs `termhost serve args` (stdin held open: a server
// that starts waits on it) and checks that it stops at once, naming file
// and its 2 names, without showing secret.
func refusedStart(t *testing.T, file, secret string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--cache-dir", cacheDir()}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("termhost started while %s has another name: programs can read it through that name\n%s", file, stderr.String())
	}
	if err == nil || !strings.Contains(stderr.String(), file) || !strings.Contains(stderr.String(), "2 names (hard links)") {
		t.Fatalf("termhost while %s has another name: %v; want a refusal naming the file and its 2 names:\n%s", file, err, stderr.String())
	}
	if strings.Contains(stderr.String(), secret) {
		t.Fatalf("the refusal shows the secret:\n%s", stderr.String())
	}
}

// TestCredentialsHardLinkRefused: a credentials file with a second name
// made before the start stops termhost, saying which file and why, as
// does an HTTP token file with one; with --sandbox=off (nothing is
// hidden, nothing promised) it starts.
func TestCredentialsHardLinkRefused(t *testing.T) {
	dir := t.TempDir()
	credFile := filepath.Join(dir, "credentials.json")
	writeCreds(t, credFile)
	other := filepath.Join(t.TempDir(), "innocent.txt")
	if err := os.Link(credFile, other); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	args := []string{"--credentials", credFile, "--rules", emptyRules(t, dir), "--known-hosts", filepath.Join(dir, "kh")}
	refusedStart(t, credFile, base64.StdEncoding.EncodeToString([]byte("pw-SECRET-33")), args...)
	h := startHost(t, append(args, "--sandbox=off")...)
	h.must("plugins_list", map[string]any{})
	h.stop()

	// The HTTP token file: whoever reads it has every session.
	os.Remove(other)
	token := filepath.Join(dir, "token")
	const tok = "tok-SECRET-0123456789abcdefghij"
	if err := os.WriteFile(token, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(token, other); err != nil {
		t.Fatal(err)
	}
	refusedStart(t, token, tok, append(args, "--http", "127.0.0.1:0", "--token-file", token)...)
}

// TestKeyHardLinkWarned: a key file with a second name is said in the log
// (a warning naming the file): a key is the user's own, may be named by a
// reload when termhost can no longer refuse to start, and other tools may
// keep it under two names.
func TestKeyHardLinkWarned(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "id_linked")
	os.WriteFile(key, []byte("KEY-MATERIAL-LINKED"), 0o600)
	if err := os.Link(key, filepath.Join(t.TempDir(), "copy")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	credFile := filepath.Join(dir, "credentials.json")
	writeCreds(t, credFile, key)
	h := startHost(t, "--credentials", credFile, "--rules", emptyRules(t, dir), "--known-hosts", filepath.Join(dir, "kh"))
	h.runToEnd(map[string]any{"command": "true"})
	requireSandbox(t, h)
	if !testutil.Poll(10*time.Second, func() bool {
		logs := h.logs.String()
		i := strings.Index(logs, "has other names (hard links)")
		return i >= 0 && strings.Contains(logs[i:], key)
	}) {
		t.Fatalf("no warning names the key file %s, which has another name", key)
	}
}

// TestRunningProgramLosesKeyNamedLater: a program started before a reload
// that names a new key cannot read that key once the reload is done (it
// could before: the key was nobody's secret then).
func TestRunningProgramLosesKeyNamedLater(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "id_later")
	os.WriteFile(key, []byte("KEY-MATERIAL-LATER"), 0o600)
	credFile := filepath.Join(dir, "credentials.json")
	writeCreds(t, credFile)
	h := startHost(t, "--credentials", credFile, "--rules", emptyRules(t, dir), "--known-hosts", filepath.Join(dir, "kh"))
	requireSandbox(t, h)
	id := h.must("launch_app", map[string]any{"command": "sh", "rows": 200, "cols": 80,
		"args": []string{"-c", fmt.Sprintf(`while read -r n; do echo "B$n:"; cat %s; echo ":E$n"; done`, key)}})["session_id"].(string)
	// read asks the program to print the key and returns what it printed.
	read := func(n int) string {
		t.Helper()
		h.must("send_keys", map[string]any{"session_id": id, "text": fmt.Sprint(n), "keys": "Enter", "until": fmt.Sprintf(":E%d", n), "timeoutMs": 10000})
		screen := h.view(id)
		i := strings.LastIndex(screen, fmt.Sprintf("B%d:", n))
		j := strings.LastIndex(screen, fmt.Sprintf(":E%d", n))
		if i < 0 || j < i {
			t.Fatalf("round %d not on the screen:\n%s", n, screen)
		}
		return screen[i:j]
	}
	if got := read(1); !strings.Contains(got, "KEY-MATERIAL-LATER") {
		t.Fatalf("before it was named, the key read %q; want its content (the test's premise)", got)
	}
	n := strings.Count(h.logs.String(), "credentials reloaded")
	writeCreds(t, credFile, key)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Count(h.logs.String(), "credentials reloaded") > n }) {
		t.Fatal("the credentials file was not reloaded")
	}
	// The running programs are told within a second of the reload.
	round := 2
	if !testutil.Poll(5*time.Second, func() bool {
		got := read(round)
		round++
		return !strings.Contains(got, "KEY-MATERIAL")
	}) {
		t.Fatalf("5 s after a reload named it, the key is still readable from a program started before:\n%s", h.view(id))
	}
	// For good: a second later too.
	time.Sleep(1500 * time.Millisecond)
	if got := read(round); strings.Contains(got, "KEY-MATERIAL") {
		t.Fatalf("the key became readable again: %q", got)
	}
	if b, _ := os.ReadFile(key); string(b) != "KEY-MATERIAL-LATER" {
		t.Fatalf("the key changed: %q", b)
	}
}
