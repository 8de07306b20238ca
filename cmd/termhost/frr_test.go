package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/frrtest"
)

// A real FRRouting vty over Telnet: the password login by credential, a
// command, enable with the enable secret typed by the host, an unknown
// command, and no secret in anything the client sees.
func TestFRRouting(t *testing.T) {
	r := frrtest.Start(t)
	dir := t.TempDir()
	b64 := base64.StdEncoding.EncodeToString
	creds := filepath.Join(dir, "credentials.json")
	os.WriteFile(creds, []byte(fmt.Sprintf(`{"version":"1.0","credentials":[{"id":"frr","host":"127.0.0.1","port":%d,"username":"unused","password":%q,"enableSecret":%q}]}`,
		r.Port, b64([]byte(r.Password)), b64([]byte(r.EnablePassword)))), 0o600)
	h := startHost(t, "--credentials", creds, "--rules", filepath.Join(dir, "rules.json"), "--known-hosts", filepath.Join(dir, "kh"))
	c := h.must("telnet_connect", map[string]any{"credentialId": "frr"})
	id := c["sessionId"].(string)
	if c["loggedIn"] != true || !strings.Contains(fmt.Sprint(c["prompt"]), "frr-test>") {
		t.Fatalf("login: %v", c)
	}
	prompt := `frr-test(\(config[^)]*\))?[>#]\s*$`
	res := h.must("run_command", map[string]any{"sessionId": id, "command": "show version", "expect": prompt})
	if !strings.Contains(res["output"].(string), "FRRouting") || strings.Contains(res["output"].(string), "frr-test>") {
		t.Errorf("show version: %v", res)
	}
	h.must("telnet_send", map[string]any{"sessionId": id, "command": "enable"})
	h.must("telnet_read", map[string]any{"sessionId": id, "until": `Password:\s*$`, "timeoutMs": 5000})
	h.must("send_secret", map[string]any{"sessionId": id, "credentialId": "frr", "field": "enableSecret"})
	out := h.must("telnet_read", map[string]any{"sessionId": id, "until": `frr-test#\s*$`, "timeoutMs": 5000})
	if out["reason"] != "matched" {
		t.Fatalf("enable: %v", out)
	}
	res = h.must("run_command", map[string]any{"sessionId": id, "command": "show bogus-thing", "expect": prompt})
	if !strings.Contains(res["output"].(string), "Unknown command") {
		t.Errorf("unknown command: %v", res)
	}
	// With the dialect: FRR detected from its banner, the command ends at
	// the prompt, pagers answered.
	d := h.must("telnet_connect", map[string]any{"credentialId": "frr", "dialect": "auto"})
	dres := h.must("run_command", map[string]any{"sessionId": d["sessionId"], "command": "show interface", "timeoutMs": 15000})
	if dres["reason"] != "done" || dres["dialect"] != "frr" || !strings.Contains(dres["output"].(string), "Interface lo is up") || strings.Contains(dres["output"].(string), "More") {
		t.Errorf("show interface with the dialect: %v", dres)
	}
	time.Sleep(100 * time.Millisecond)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprint(res), fmt.Sprint(out), h.logs.String(), h.view(id)} {
		for _, secret := range []string{r.Password, r.EnablePassword} {
			if strings.Contains(s, secret) {
				t.Fatalf("a secret shows: %q", s)
			}
		}
	}
}

// set_mode on a real FRRouting vty: user to configuration mode with the
// enable password typed from the credential, and back down, with FRR's own
// commands; no secret in any result.
func TestFRRSetMode(t *testing.T) {
	r := frrtest.Start(t)
	dir := t.TempDir()
	b64 := base64.StdEncoding.EncodeToString
	creds := filepath.Join(dir, "credentials.json")
	os.WriteFile(creds, []byte(fmt.Sprintf(`{"version":"1.0","credentials":[{"id":"frr","host":"127.0.0.1","port":%d,"username":"unused","password":%q,"enableSecret":%q}]}`,
		r.Port, b64([]byte(r.Password)), b64([]byte(r.EnablePassword)))), 0o600)
	h := startHost(t, "--credentials", creds, "--rules", filepath.Join(dir, "rules.json"), "--known-hosts", filepath.Join(dir, "kh"))
	id := h.must("telnet_connect", map[string]any{"credentialId": "frr", "dialect": "auto"})["sessionId"]
	up := h.must("set_mode", map[string]any{"sessionId": id, "mode": "config", "credentialId": "frr", "timeoutMs": 15000})
	if up["reason"] != "done" || up["mode"] != "config" || up["dialect"] != "frr" || up["prompt"] != "frr-test(config)#" ||
		fmt.Sprint(up["steps"]) != "[enable configure terminal]" {
		t.Fatalf("user to config: %v", up)
	}
	down := h.must("set_mode", map[string]any{"sessionId": id, "mode": "user", "timeoutMs": 15000})
	if down["reason"] != "done" || down["mode"] != "user" || down["prompt"] != "frr-test>" || fmt.Sprint(down["steps"]) != "[end disable]" {
		t.Fatalf("config to user: %v", down)
	}
	for _, s := range []string{fmt.Sprint(up), fmt.Sprint(down), h.logs.String(), h.view(id.(string))} {
		for _, secret := range []string{r.Password, r.EnablePassword} {
			if strings.Contains(s, secret) {
				t.Fatalf("a secret shows: %q", s)
			}
		}
	}
}
