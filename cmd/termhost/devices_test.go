package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/testapps"
	"github.com/termhost/termhost/internal/testutil"
)

// run_command on shells with integration: the output alone, the exit
// code, no echo and no prompt.
func TestRunCommandOnShells(t *testing.T) {
	for _, sh := range []string{"bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			testutil.NeedProgram(t, sh)
			h := startHost(t)
			id := h.must("launch_app", map[string]any{"command": sh, "env": map[string]string{"HOME": t.TempDir()}})["session_id"].(string)
			h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000})
			r := h.must("run_command", map[string]any{"sessionId": id, "command": "printf 'one\\ntwo\\n'; echo three >&2; (exit 4)"})
			if r["output"] != "one\ntwo\nthree\n" || r["exitCode"] != 4.0 || r["reason"] != "prompt" {
				t.Fatalf("run_command: %v", r)
			}
			r = h.must("run_command", map[string]any{"sessionId": id, "command": "echo $((6*7))"})
			if r["output"] != "42\n" || r["exitCode"] != 0.0 {
				t.Fatalf("second run_command: %v", r)
			}
			r = h.must("run_command", map[string]any{"sessionId": id, "command": "sleep 30", "timeoutMs": 500})
			if r["reason"] != "timeout" {
				t.Fatalf("timeout: %v", r)
			}
			h.must("send_keys", map[string]any{"session_id": id, "keys": "C-c", "prompt": true, "timeoutMs": 5000})
			if res := h.call(10*time.Second, "run_command", map[string]any{"sessionId": id, "command": "echo a\necho b"}); !res.isErr || !strings.Contains(res.msg, "command") {
				t.Errorf("a two-line command: %+v", res)
			}
		})
	}
}

// run_command against a Telnet device without a dialect (dialect none:
// detection is the default), with expect.
func TestRunCommandWithExpect(t *testing.T) {
	_, port := startDevsim(t, devsim.Config{NoLogin: true, PageLines: -1, NoColor: true})
	h := startHost(t)
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "none"})["sessionId"].(string)
	h.must("telnet_read", map[string]any{"sessionId": id, "until": `edge-r1>\s*$`, "timeoutMs": 5000})
	r := h.must("run_command", map[string]any{"sessionId": id, "command": "show version", "expect": `edge-r1>\s*$`})
	out, _ := r["output"].(string)
	if r["reason"] != "matched" || !strings.Contains(out, "Configuration register") || strings.Contains(out, "show version") || strings.Contains(out, "edge-r1>") {
		t.Fatalf("run_command with expect: %v", r)
	}
}

// send_secret: typed at a password prompt of a program the credential
// names (TRUST-1: a shell's own `read -s` is not one), masked where the
// program shows it back, refused where the terminal echoes, never in a
// result or log.
func TestSendSecret(t *testing.T) {
	const secret = "s3cr3t-Typed-By-Host"
	gp, echo := testapps.Build(t, "getpass"), testapps.Build(t, "echo")
	h := startTrustHost(t, trustCred{ID: "dev", Port: 23, User: "admin", Pass: secret, Enable: "en-" + secret, Programs: []string{gp, echo}})
	// At a normal prompt the terminal echoes: refused.
	eid := h.must("launch_app", map[string]any{"command": echo})["session_id"].(string)
	h.screenHas(eid, "echo>")
	if r := h.call(10*time.Second, "send_secret", map[string]any{"sessionId": eid, "credentialId": "dev", "field": "password"}); !r.isErr || !strings.Contains(r.msg, "echoes") {
		t.Fatalf("send_secret with echo on: %+v", r)
	}
	var seen []string
	for _, f := range []struct{ field, value string }{{"password", secret}, {"enableSecret", "en-" + secret}} {
		id := h.must("launch_app", map[string]any{"command": gp, "args": []string{"-split", "100ms"}})["session_id"].(string)
		h.screenHas(id, "Password:")
		h.must("send_secret", map[string]any{"sessionId": id, "credentialId": "dev", "field": f.field})
		r := h.must("wait_for", map[string]any{"session_id": id, "until": `done`, "onScreen": true, "timeoutMs": 15000, "view": "plain"})
		screen := screenOf(t, r)
		if !strings.Contains(screen, "split:"+strings.Repeat("*", len(f.value))+":") || !strings.Contains(screen, fmt.Sprintf("read %d bytes", len(f.value))) {
			t.Errorf("%s was not typed or not masked:\n%s", f.field, screen)
		}
		for _, v := range []string{"plain", "ansi", "raw", "scrollback"} {
			seen = append(seen, h.must("view_screen", map[string]any{"session_id": id, "format": v})["content"].(string))
		}
	}
	if r := h.call(10*time.Second, "send_secret", map[string]any{"sessionId": eid, "credentialId": "dev", "field": "token"}); !r.isErr || !strings.Contains(r.msg, "field") {
		t.Errorf("unknown field: %+v", r)
	}
	seen = append(seen, h.logs.String())
	for _, s := range seen {
		if strings.Contains(s, secret) {
			t.Fatalf("the secret appears in a result or the log: %q", s)
		}
	}
}

// telnet_connect with a credential: host and port from it, the login
// dialogue answered by the host, the password nowhere in what the client
// sees or the log.
func TestTelnetLoginWithCredential(t *testing.T) {
	const pass = "Dev-Pass-4-Login"
	_, port := startDevsim(t, devsim.Config{Username: "netops", Password: pass, NoColor: true})
	h := startHostWithCreds(t, []devCred{{ID: "r1", Port: port, User: "netops", Pass: pass}, {ID: "bad", Port: port, User: "netops", Pass: "nope"}})
	r := h.must("telnet_connect", map[string]any{"credentialId": "r1"})
	id, _ := r["sessionId"].(string)
	if r["loggedIn"] != true || !strings.Contains(fmt.Sprint(r["prompt"]), "edge-r1>") {
		t.Fatalf("login: %v", r)
	}
	out := h.must("telnet_read", map[string]any{"sessionId": id})
	res := h.call(20*time.Second, "telnet_connect", map[string]any{"credentialId": "bad"})
	if !res.isErr || !strings.Contains(res.msg, "login failed") {
		t.Errorf("wrong password: %+v", res)
	}
	for _, s := range []string{fmt.Sprint(out), fmt.Sprint(r), res.msg, h.logs.String(), h.view(id)} {
		if strings.Contains(s, pass) {
			t.Fatalf("the password shows: %q", s)
		}
	}
}

// Logins with a credential on every simulated device.
func TestTelnetLoginEveryPersonality(t *testing.T) {
	const pass = "Per-Device-Pass-9"
	var creds []devCred
	for _, p := range devsim.Personalities {
		_, port := startDevsim(t, devsim.Config{Personality: p, Username: "admin", Password: pass, NoColor: true})
		creds = append(creds, devCred{ID: p, Port: port, User: "admin", Pass: pass}, devCred{ID: "bad-" + p, Port: port, User: "admin", Pass: "wrong"})
	}
	h := startHostWithCreds(t, creds)
	for _, p := range devsim.Personalities {
		r := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": p})
		if r.isErr || r.res["loggedIn"] != true || !strings.Contains(fmt.Sprint(r.res["prompt"]), "edge-r1") {
			t.Errorf("%s: %+v", p, r)
			continue
		}
		raw := h.must("telnet_read", map[string]any{"sessionId": r.res["sessionId"]})
		if strings.Contains(fmt.Sprint(raw), pass) {
			t.Errorf("%s: the password shows in the output", p)
		}
		if r := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": "bad-" + p}); !r.isErr || !strings.Contains(r.msg, "login failed") {
			t.Errorf("%s, wrong password: %+v", p, r)
		}
	}
	if strings.Contains(h.logs.String(), pass) {
		t.Error("the password shows in the log")
	}
}

// run_command through the dialect plugin on every simulated device: a
// ten-page output in one call, pagers answered and gone, no echo, no
// prompt; an error recognised; a question returned, not answered; the
// enable password typed by send_secret; the same device read raw
// (telnet_send, wait_for, telnet_read) and on the screen. Twice: with
// whole writes, and with every write the devices make cut at random points
// (TERMHOST_FRAGMENT_SEED repeats a run's cuts).
func TestRunCommandEveryDialect(t *testing.T) {
	seed := time.Now().UnixNano()
	if v := os.Getenv("TERMHOST_FRAGMENT_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("fragment seed %d", seed)
	for _, mode := range []string{"whole", "fragmented"} {
		t.Run(mode, func(t *testing.T) {
			cfg := devsim.Config{Username: "admin", NoColor: true}
			if mode == "fragmented" {
				cfg.Fragment, cfg.FragmentDelay = devsim.RandomFragmenter(seed, 24), 20*time.Microsecond
			}
			deviceTour(t, cfg)
		})
	}
}

func deviceTour(t *testing.T, cfg devsim.Config) {
	long := map[string]string{
		"cisco_ios": "show logging", "cisco_nxos": "show interface", "arista_eos": "show interfaces",
		"frr": "show interface", "juniper_junos": "show interfaces", "huawei": "display interface",
		"mikrotik_routeros": "/log print", "linux": "seq 1 200",
	}
	question := map[string]string{
		"cisco_ios": "reload", "arista_eos": "reload", "cisco_nxos": "reload", "huawei": "save",
		"juniper_junos": "request system reboot", "mikrotik_routeros": "/system reboot",
	}
	const pass = "Dialect-Pass-5"
	var creds []devCred
	for _, p := range devsim.Personalities {
		c := cfg
		c.Personality, c.Password = p, pass
		_, port := startDevsim(t, c)
		creds = append(creds, devCred{ID: p, Port: port, User: "admin", Pass: pass})
	}
	h := startHostWithCreds(t, creds)
	for _, p := range devsim.Personalities {
		t.Run(p, func(t *testing.T) {
			id := h.connectDevice(t, p)
			r := h.must("run_command", map[string]any{"sessionId": id, "command": long[p], "timeoutMs": 20000})
			out, _ := r["output"].(string)
			minPages := 5.0
			if p == "linux" {
				minPages = 0 // no pager
			}
			if r["reason"] != "done" || r["pages"].(float64) < minPages || strings.Count(out, "\n") < 100 {
				t.Fatalf("%s: reason %v, %v pages, %d lines\n%.600s", long[p], r["reason"], r["pages"], strings.Count(out, "\n"), out)
			}
			for _, bad := range []string{"More", "---(more", "-- [Q quit", long[p] + "\n", "edge-r1#", "edge-r1>"} {
				if strings.Contains(out, bad) {
					t.Errorf("%s: output holds %q", long[p], bad)
				}
			}
			if r["dialect"] != p && !(p == "arista_eos" || p == "frr") {
				t.Errorf("detected dialect %v, want %s", r["dialect"], p)
			}
			r = h.must("run_command", map[string]any{"sessionId": id, "command": "bogus-command-x", "timeoutMs": 10000})
			if r["error"] == nil || r["error"] == "" {
				t.Errorf("an unknown command: no error in %v", r)
			}
			if p == "cisco_ios" || p == "arista_eos" {
				// enable: the dialect reports the password field; the host types it.
				r = h.must("run_command", map[string]any{"sessionId": id, "command": "enable", "timeoutMs": 10000})
				if r["reason"] != "login" || r["field"] != "enable" && r["field"] != "password" {
					t.Fatalf("enable: %v", r)
				}
				h.must("send_secret", map[string]any{"sessionId": id, "credentialId": p, "field": "password"})
				r = h.must("run_command", map[string]any{"sessionId": id, "command": "show clock", "timeoutMs": 10000})
				if r["mode"] != "privileged" || !strings.Contains(fmt.Sprint(r["output"]), "2025") {
					t.Fatalf("after enable: %v", r)
				}
			}
			if q, ok := question[p]; ok {
				r = h.must("run_command", map[string]any{"sessionId": id, "command": q, "timeoutMs": 10000})
				if r["reason"] != "question" || r["question"] == "" {
					t.Errorf("%s: %v", q, r)
				}
				// Not answered: the agent declines, and the device is back at its prompt.
				h.must("telnet_send", map[string]any{"sessionId": id, "command": "n"})
			}
			// The raw path: send, wait for the prompt after the echo, read.
			h.must("telnet_send", map[string]any{"sessionId": id, "command": "bogus-raw-y"})
			w := h.call(20*time.Second, "wait_for", map[string]any{"session_id": id, "until": `bogus-raw-y[\s\S]*edge-r1[^\r\n]*[>#$\]]\s*$`, "timeoutMs": 15000})
			if w.isErr || w.res["reason"] != "matched" {
				t.Fatalf("wait_for the prompt after a raw command: %+v\nscreen:\n%s", w, h.view(id))
			}
			if raw := h.must("telnet_read", map[string]any{"sessionId": id}); !strings.Contains(fmt.Sprint(raw["data"]), "bogus-raw-y") {
				t.Errorf("telnet_read after wait_for: %v", raw)
			}
			screen := h.view(id)
			if strings.Contains(screen, "More --") || strings.Contains(screen, "--More--") || !strings.Contains(screen, "bogus-raw-y") {
				t.Errorf("screen:\n%s", screen)
			}
		})
	}
}

// A device that pages without end: run_command answers the pager up to its
// bound (1000 pages), then leaves the pager with the dialect's quit key
// and returns reason pager_limit with the output so far; the device is
// back at its prompt and the next command runs normally.
func TestRunCommandPagerBound(t *testing.T) {
	const pass = "Endless-Pager-1"
	_, port := startDevsim(t, devsim.Config{Username: "admin", Password: pass, NoColor: true, LogBuffer: 50_000_000})
	h := startHostWithCreds(t, []devCred{{ID: "r1", Port: port, User: "admin", Pass: pass}})
	id := h.must("telnet_connect", map[string]any{"credentialId": "r1", "dialect": "cisco_ios"})["sessionId"].(string)
	r := h.call(150*time.Second, "run_command", map[string]any{"sessionId": id, "command": "show logging", "timeoutMs": 120000, "maxBytes": 1 << 20})
	if r.isErr {
		t.Fatal(r)
	}
	out, _ := r.res["output"].(string)
	if r.res["reason"] != "pager_limit" || r.res["pages"] != 1000.0 || r.res["mode"] != "user" || r.res["truncated"] != true {
		t.Fatalf("reason %v, pages %v, mode %v, truncated %v, bytes %v, %d bytes returned: …%.300q", r.res["reason"], r.res["pages"], r.res["mode"], r.res["truncated"], r.res["bytes"], len(out), out[max(0, len(out)-300):])
	}
	// 1000 pages of 20 lines were shown and answered; the output keeps the
	// first MiB of them, without a pager prompt.
	if n := r.res["bytes"].(float64); n < 1000*20*80 {
		t.Errorf("the whole output was %v bytes, want at least 1000 pages of 20 lines", n)
	}
	if strings.Contains(out, "More") || !strings.HasPrefix(out, "Syslog logging") {
		t.Errorf("output: %.300q", out)
	}
	r2 := h.must("run_command", map[string]any{"sessionId": id, "command": "show clock", "timeoutMs": 10000})
	if r2["reason"] != "done" || !strings.Contains(r2["output"].(string), "2025") {
		t.Fatalf("the next command: %v", r2)
	}
}

// A command sent raw, its output still coming (slowly, in small pieces)
// when run_command starts: run_command returns its own command's output,
// not the tail and the prompt of the earlier one.
func TestRunCommandAfterRawSend(t *testing.T) {
	_, port := startDevsim(t, devsim.Config{NoLogin: true, NoColor: true, PageLines: -1,
		Fragment: devsim.RandomFragmenter(1, 8), FragmentDelay: time.Millisecond})
	h := startHost(t)
	id := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "cisco_ios"})["sessionId"].(string)
	h.must("wait_for", map[string]any{"session_id": id, "until": `edge-r1>\s*$`, "timeoutMs": 15000})
	h.must("telnet_send", map[string]any{"sessionId": id, "command": "show version"})
	r := h.must("run_command", map[string]any{"sessionId": id, "command": "show clock", "timeoutMs": 20000})
	if out := r["output"].(string); r["reason"] != "done" || strings.Count(out, "\n") != 1 || !strings.Contains(out, "2025") {
		t.Fatalf("run_command after a raw send: %v", r)
	}
}

// An unknown dialect is the caller's mistake, said as such, with the names
// that exist.
func TestUnknownDialect(t *testing.T) {
	h := startHost(t)
	r := h.call(20*time.Second, "launch_app", map[string]any{"command": "cat", "dialect": "no_such_os"})
	if !r.isErr || !strings.HasPrefix(r.msg, "INVALID_INPUT") || !strings.Contains(r.msg, `unknown dialect "no_such_os"`) || !strings.Contains(r.msg, "cisco_ios") {
		t.Errorf("launch_app with an unknown dialect: %+v", r)
	}
	_, port := startDevsim(t, devsim.Config{NoLogin: true})
	r = h.call(20*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "no_such_os"})
	if !r.isErr || !strings.Contains(r.msg, `unknown dialect "no_such_os"`) {
		t.Errorf("telnet_connect with an unknown dialect: %+v", r)
	}
}
