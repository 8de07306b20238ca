package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/frrtest"
)

// devCred is one credential of a test, its secrets in the clear (written
// base64, as credentials.json wants them).
type devCred struct {
	ID, Host           string // Host: 127.0.0.1 when empty
	Port               int
	User, Pass, Enable string // Enable: the enableSecret, left out when empty
}

// startHostWithCreds writes creds to a credentials.json of the test's own
// (mode 0600), with rules.json and known_hosts beside it, and starts
// termhost on them with the extra flags.
func startHostWithCreds(t testing.TB, creds []devCred, extra ...string) *hostProc {
	t.Helper()
	dir := t.TempDir()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	list := []map[string]any{}
	for _, c := range creds {
		if c.Host == "" {
			c.Host = "127.0.0.1"
		}
		m := map[string]any{"id": c.ID, "host": c.Host, "port": c.Port, "username": c.User, "password": b64(c.Pass)}
		if c.Enable != "" {
			m["enableSecret"] = b64(c.Enable)
		}
		list = append(list, m)
	}
	b, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": list})
	path := filepath.Join(dir, "credentials.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "rules.json") // an explicit rules file must exist
	if err := os.WriteFile(rules, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startHost(t, append(extra, "--credentials", path, "--rules", rules, "--known-hosts", filepath.Join(dir, "kh"))...)
}

// frrCred is the credential of a test's FRR vty: its password and its
// enable password.
func frrCred(r *frrtest.Router) devCred {
	return devCred{ID: "frr", Port: r.Port, User: "unused", Pass: r.Password, Enable: r.EnablePassword}
}

// connectDevice opens a Telnet session with credential id (the host logs
// in) and the dialect detected, and returns its id.
func (h *hostProc) connectDevice(t testing.TB, id string) string {
	t.Helper()
	c := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": id, "dialect": "auto"})
	if c.isErr {
		t.Fatalf("connect: %+v", c)
	}
	return c.res["sessionId"].(string)
}
