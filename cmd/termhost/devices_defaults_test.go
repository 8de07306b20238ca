package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/frrtest"
)

// Devices with no options named (issue 17): a real FRRouting vty, logged
// in by a credential that has no username (FRR's vty asks for a password
// only), driven with run_command without a dialect: FRR is detected from
// its banner, every command ends at its prompt (not at the timeout),
// enable takes the enable secret by send_secret, configure terminal
// enters configuration mode, an unknown command is flagged.
func TestDeviceDefaultsFRR(t *testing.T) {
	r := frrtest.Start(t)
	h := startHostWithCreds(t, []devCred{
		{ID: "frr", Port: r.Port, Pass: r.Password, Enable: r.EnablePassword},                      // password only
		{ID: "frr-user", Port: r.Port, User: "unused", Pass: r.Password, Enable: r.EnablePassword}, // a username FRR never asks for
	})
	for _, cred := range []string{"frr", "frr-user"} {
		t.Run(cred, func(t *testing.T) {
			c := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": cred})
			if c.isErr || c.res["loggedIn"] != true || c.res["prompt"] != "frr-test>" || c.res["dialect"] != "frr" {
				t.Fatalf("telnet_connect {credentialId: %s}: %+v", cred, c)
			}
			id := c.res["sessionId"]
			// Each call gets 10 s, but must end at the device's prompt, not
			// at its timeout.
			run := func(cmd string) map[string]any {
				t.Helper()
				res := h.must("run_command", map[string]any{"sessionId": id, "command": cmd, "timeoutMs": 10000})
				if res["reason"] == "timeout" {
					t.Fatalf("run_command %q ended at its timeout: %v", cmd, res)
				}
				return res
			}
			v := run("show version")
			if out, _ := v["output"].(string); v["reason"] != "done" || v["dialect"] != "frr" || v["mode"] != "user" ||
				!strings.Contains(out, "FRRouting") || strings.Contains(out, "show version") || strings.Contains(out, "frr-test>") {
				t.Fatalf("show version: %v", v)
			}
			en := run("enable")
			if en["reason"] != "login" || en["field"] != "enable" {
				t.Fatalf("enable: %v", en)
			}
			h.must("send_secret", map[string]any{"sessionId": id, "credentialId": cred, "field": "enableSecret"})
			cf := run("configure terminal")
			if cf["reason"] != "done" || cf["mode"] != "config" || cf["prompt"] != "frr-test(config)#" {
				t.Fatalf("configure terminal after enable: %v", cf)
			}
			bad := run("bogus-thing")
			if e, _ := bad["error"].(string); bad["reason"] != "done" || !strings.Contains(e, "Unknown command") {
				t.Fatalf("an unknown command: %v", bad)
			}
			// set_mode with the dialect detected, not named.
			down := h.must("set_mode", map[string]any{"sessionId": id, "mode": "user", "timeoutMs": 10000})
			if down["reason"] != "done" || down["mode"] != "user" || down["dialect"] != "frr" {
				t.Fatalf("set_mode user: %v", down)
			}
			up := h.must("set_mode", map[string]any{"sessionId": id, "mode": "privileged", "credentialId": cred, "timeoutMs": 10000})
			if up["reason"] != "done" || up["mode"] != "privileged" {
				t.Fatalf("set_mode privileged: %v", up)
			}
			for _, s := range []string{fmt.Sprint(c.res), fmt.Sprint(v), fmt.Sprint(cf), h.logs.String(), h.view(id.(string))} {
				for _, secret := range []string{r.Password, r.EnablePassword} {
					if strings.Contains(s, secret) {
						t.Fatalf("a secret shows: %q", s)
					}
				}
			}
		})
	}
}

// The simulated router of every personality, with no dialect named: the
// dialect is detected and reported, a command ends at the prompt. The
// FRR personality asks for a password only, and the credential has no
// username.
func TestDeviceDefaultsDevsim(t *testing.T) {
	const pass = "No-Options-Pass-2"
	var creds []devCred
	for _, p := range devsim.Personalities {
		_, port := startDevsim(t, devsim.Config{Personality: p, Username: "admin", Password: pass, NoColor: true})
		user := "admin"
		if p == "frr" {
			user = ""
		}
		creds = append(creds, devCred{ID: p, Port: port, User: user, Pass: pass})
	}
	h := startHostWithCreds(t, creds)
	for _, p := range devsim.Personalities {
		t.Run(p, func(t *testing.T) {
			c := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": p})
			if c.isErr || c.res["loggedIn"] != true {
				t.Fatalf("telnet_connect: %+v", c)
			}
			want := p
			// The simulated EOS names itself only in show version's output:
			// until then its prompt reads as Cisco IOS.
			if c.res["dialect"] != want && !(p == "arista_eos" && c.res["dialect"] == "cisco_ios") {
				t.Errorf("telnet_connect reports dialect %v, want %s: %v", c.res["dialect"], want, c.res)
			}
			cmd := map[string]string{"juniper_junos": "show version", "huawei": "display version", "mikrotik_routeros": "/system resource print", "linux": "uname -a"}[p]
			if cmd == "" {
				cmd = "show version"
			}
			res := h.must("run_command", map[string]any{"sessionId": c.res["sessionId"], "command": cmd, "timeoutMs": 10000})
			if res["reason"] != "done" || res["dialect"] != want || res["output"] == "" {
				t.Fatalf("%s: %v", cmd, res)
			}
		})
	}
}

// A device credential may leave out the username (password-only lines);
// a device that asks for one anyway is a clear login error naming the
// credential; an SSH login refuses such a credential before dialing; the
// credential list shows it without an empty username.
func TestPasswordOnlyCredential(t *testing.T) {
	const pass = "Only-A-Pass-8"
	_, port := startDevsim(t, devsim.Config{Username: "admin", Password: pass, NoColor: true})
	h := startHostWithCreds(t, []devCred{{ID: "pw-only", Port: port, Pass: pass}})
	list := h.must("ssh_list_credentials", map[string]any{})
	b, _ := json.Marshal(list)
	if !strings.Contains(string(b), `"id":"pw-only"`) || strings.Contains(string(b), `"username":""`) {
		t.Errorf("ssh_list_credentials: %s", b)
	}
	r := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": "pw-only"})
	if !r.isErr || !strings.Contains(r.msg, `the device asked for a username, and credential "pw-only" has none`) {
		t.Errorf("a username prompt with a password-only credential: %+v", r)
	}
	if strings.Contains(r.msg, pass) {
		t.Fatal("the password shows")
	}
	for tool, args := range map[string]map[string]any{
		"ssh_execute": {"credentialId": "pw-only", "command": "true"},
		"ssh_shell":   {"credentialId": "pw-only"},
	} {
		r = h.call(30*time.Second, tool, args)
		if !r.isErr || !strings.Contains(r.msg, "no username") {
			t.Errorf("%s with a password-only credential: %+v", tool, r)
		}
	}
}

// A device no dialect knows, no options (a plain connection detects on
// use, at the first run_command): pagers are not answered (no dialect was detected), and a command ends at the prompt
// the device printed last before it went quiet, not at the timeout.
func TestDeviceDefaultsUnknownDevice(t *testing.T) {
	port := acmeDevice(t)
	h := startHost(t)
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	h.must("wait_for", map[string]any{"session_id": id, "until": `::>\s*$`, "timeoutMs": 10000})
	r := h.must("run_command", map[string]any{"sessionId": id, "command": "frobnicate now", "timeoutMs": 10000})
	if out, _ := r["output"].(string); r["reason"] != "prompt" || r["prompt"] != "edge-r1::>" || out != "?? unknown verb 'frobnicate'\n" {
		t.Fatalf("frobnicate now: %v", r)
	}
	r = h.must("run_command", map[string]any{"sessionId": id, "command": "bogus", "timeoutMs": 10000})
	if out, _ := r["output"].(string); r["reason"] != "prompt" || out != "?? unknown verb 'bogus'\n" {
		t.Fatalf("a second command: %v", r)
	}
	// The pager is the device's own: left for the agent.
	r = h.must("run_command", map[string]any{"sessionId": id, "command": "show status", "timeoutMs": 1500})
	if out, _ := r["output"].(string); r["reason"] != "timeout" || r["pages"] != 0.0 || strings.Count(out, "\n") != 10 {
		t.Fatalf("show status: %v", r)
	}
	h.must("telnet_send", map[string]any{"sessionId": id, "command": "q", "noNewline": true})
}

// A plain Telnet service (a BBS) with no options: what telnet_read returns
// is what the service sent, and nothing is answered for the agent, not
// even what looks like a pager.
func TestPlainTelnetUntouched(t *testing.T) {
	const banner = "Welcome to the Board\r\nNews of the day:\r\n--More--"
	var mu sync.Mutex
	var got []byte
	peer := startPeer(t, 0, func(c net.Conn, done <-chan struct{}) {
		defer c.Close()
		c.Write([]byte(banner))
		buf := make([]byte, 256)
		for {
			n, err := c.Read(buf)
			mu.Lock()
			got = append(got, buf[:n]...)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	h := startHost(t)
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": peer.port})["sessionId"]
	r := h.must("telnet_read", map[string]any{"sessionId": id, "until": `--More--$`, "timeoutMs": 5000})
	if r["reason"] != "matched" || r["data"] != banner {
		t.Fatalf("telnet_read: %v", r)
	}
	time.Sleep(1500 * time.Millisecond) // a held pager would be answered after 300 ms of quiet
	mu.Lock()
	defer mu.Unlock()
	if strings.ContainsAny(string(got), " q\r\n") {
		t.Fatalf("the host answered for the agent: %q", got)
	}
}

// A dialect dropped in live re-runs detection on sessions that have not
// had a command answered yet: a device whose banner says BusyBox (so
// detected as linux) and Acme; after acme_os is dropped in, its pager is
// answered and its prompt ends the command.
func TestDialectDropInRedetects(t *testing.T) {
	port := startPeer(t, 0, func(c net.Conn, _ <-chan struct{}) { acmeBusyBoxServe(c) }).port
	dir := t.TempDir()
	table, _ := filepath.Abs("testdata/acme/acme_os.json")
	target, _ := filepath.Abs("../../plugins/dialect/core/dialects/acme_os.json")
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{target: table}})
	ovFile := filepath.Join(t.TempDir(), "overlay.json")
	os.WriteFile(ovFile, ov, 0o644)
	built := filepath.Join(t.TempDir(), "dialect.wasm")
	if o, err := exec.Command("go", "run", "../../sdk/cmd/wasmbuild", "-overlay", ovFile, "-version", "1.9.9-acme", "-o", built, "../../plugins/dialect").CombinedOutput(); err != nil {
		t.Fatalf("wasmbuild: %v\n%s", err, o)
	}
	wasm, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	h := startHost(t, append([]string{"--plugin-dir", dir}, pinArgs(t, wasm)...)...)
	// dialect auto, as before detection became the default: the old code
	// detects linux here too.
	old := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "auto"})["sessionId"].(string)
	h.must("wait_for", map[string]any{"session_id": old, "until": `::>\s*$`, "timeoutMs": 10000})
	place(t, dir, "dialect.wasm", wasm)
	// Wait until the new version is loaded; nothing is sent meanwhile, so
	// the session moves to it with the next call.
	deadline := time.Now().Add(60 * time.Second)
	for !pluginLoaded(t, h, "dialect", "1.9.9-acme") {
		if time.Now().After(deadline) {
			t.Fatalf("the dropped-in dialect plugin never loaded: %v", h.must("plugins_list", map[string]any{}))
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := h.must("run_command", map[string]any{"sessionId": old, "command": "show status", "timeoutMs": 10000})
	out, _ := r["output"].(string)
	if r["reason"] != "done" || r["dialect"] != "acme_os" || r["pages"] != 2.0 || strings.Count(out, "\n") != 30 || strings.Contains(out, "next") {
		delete(r, "output")
		t.Fatalf("show status after the drop-in: %v, %d lines:\n%s", r, strings.Count(out, "\n"), out)
	}
}

// pluginLoaded reports whether version v of plugin name is loaded.
func pluginLoaded(t testing.TB, h *hostProc, name, v string) bool {
	for _, raw := range h.must("plugins_list", map[string]any{})["plugins"].([]any) {
		pl := raw.(map[string]any)
		if pl["name"] == name && pl["version"] == v {
			return true
		}
	}
	return false
}

// acmeBusyBoxServe is the acme device with a banner that names BusyBox
// first (the built-in linux dialect is confident about it), then Acme.
func acmeBusyBoxServe(c net.Conn) {
	c.Write([]byte("BusyBox v1.36.1 (2024-05-01) built-in shell\r\n"))
	acmeServe(c)
}
