package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
)

// set_mode on every simulated device, through the dialect detected from
// the session: up to configuration mode and back down with the dialect's
// own commands, the enable secret typed from the credential; without a
// credential the move stops at the enable password for send_secret; a
// question on the way is returned; devices without modes, modes a dialect
// has not, and bad arguments are errors naming the field.
func TestSetModeEveryDialect(t *testing.T) {
	const pass, enable = "Mode-Pass-3", "Mode-Enable-8"
	type plan struct {
		start, low string // the mode after login, the lowest set_mode reaches
		up, down   []string
		noMode     string // a mode the dialect has not
	}
	ios := plan{"user", "user", []string{"enable", "configure terminal"}, []string{"end", "disable"}, ""}
	plans := map[string]plan{
		"cisco_ios": ios, "arista_eos": ios, "frr": ios,
		"cisco_nxos":    {"privileged", "privileged", []string{"configure terminal"}, []string{"end"}, "user"},
		"juniper_junos": {"user", "user", []string{"configure"}, []string{"exit configuration-mode"}, "privileged"},
		"huawei":        {"user", "user", []string{"system-view"}, []string{"return"}, "privileged"},
	}
	var creds []devCred
	for _, p := range devsim.Personalities {
		_, port := startDevsim(t, devsim.Config{Personality: p, Username: "admin", Password: pass, EnableSecret: enable, NoColor: true})
		creds = append(creds, devCred{ID: p, Port: port, User: "admin", Pass: pass, Enable: enable})
	}
	h := startHostWithCreds(t, creds)
	var seen []string
	for _, p := range devsim.Personalities {
		t.Run(p, func(t *testing.T) {
			id := h.connectDevice(t, p)
			setMode := func(mode string, cred bool) callResult {
				args := map[string]any{"sessionId": id, "mode": mode, "timeoutMs": 15000}
				if cred {
					args["credentialId"] = p
				}
				r := h.call(30*time.Second, "set_mode", args)
				seen = append(seen, r.msg)
				return r
			}
			pl, ok := plans[p]
			if !ok {
				// RouterOS and Linux: no modes, said with the dialect's name.
				r := setMode("config", true)
				if !r.isErr || !strings.Contains(r.msg, "mode") || !strings.Contains(r.msg, p+" has no modes") {
					t.Fatalf("set_mode on %s: %v", p, r)
				}
				return
			}
			steps := func(r callResult) string { return fmt.Sprint(r.res["steps"]) }
			is := func(r callResult, reason, mode string, want []string) {
				t.Helper()
				if r.isErr || r.res["reason"] != reason || r.res["mode"] != mode || steps(r) != fmt.Sprint(want) ||
					!strings.Contains(fmt.Sprint(r.res["prompt"]), "edge-r1") {
					t.Fatalf("want reason %s, mode %s, steps %v: %v", reason, mode, want, r)
				}
			}
			is(setMode(pl.start, false), "done", pl.start, []string{})
			up := setMode("config", true)
			is(up, "done", "config", pl.up)
			if d := up.res["dialect"]; d != p && !(p == "arista_eos" && d == "cisco_ios") {
				t.Errorf("dialect %v", d)
			}
			is(setMode(pl.low, false), "done", pl.low, pl.down)
			if pl.noMode != "" {
				if r := setMode(pl.noMode, true); !r.isErr || !strings.Contains(r.msg, "mode") || !strings.Contains(r.msg, "no "+pl.noMode+" mode") {
					t.Errorf("set_mode %s: %v", pl.noMode, r)
				}
			}
			if pl.up[0] == "enable" {
				// No credential: stopped at the enable password, typed by
				// send_secret; set_mode then finds the device there.
				is(setMode("privileged", false), "login", "user", []string{"enable"})
				if r := setMode("privileged", false); r.res["field"] != "enable" || r.res["reason"] != "login" {
					t.Fatalf("enable password: %v", r)
				}
				h.must("send_secret", map[string]any{"sessionId": id, "credentialId": p, "field": "enableSecret"})
				h.must("run_command", map[string]any{"sessionId": id, "command": "show clock", "timeoutMs": 10000})
				is(setMode("privileged", false), "done", "privileged", []string{})
			}
			if p == "juniper_junos" {
				// Uncommitted changes: the question comes back, unanswered.
				is(setMode("config", false), "done", "config", pl.up)
				h.must("run_command", map[string]any{"sessionId": id, "command": "set system host-name edge-r2", "timeoutMs": 10000})
				r := setMode("user", false)
				if r.isErr || r.res["reason"] != "question" || !strings.Contains(fmt.Sprint(r.res["question"]), "[yes,no]") || steps(r) != fmt.Sprint(pl.down) {
					t.Fatalf("uncommitted changes: %v", r)
				}
			}
			seen = append(seen, h.view(id), fmt.Sprint(h.must("telnet_read", map[string]any{"sessionId": id})))
		})
	}
	// Bad arguments name the field.
	id := h.must("telnet_list", map[string]any{})["sessions"].([]any)[0].(map[string]any)["sessionId"]
	for _, c := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"sessionId": id, "mode": "enable"}, "mode"},
		{map[string]any{"sessionId": id}, "mode"},
		{map[string]any{"mode": "user"}, "sessionId"},
		{map[string]any{"sessionId": id, "mode": "user", "credentialId": "nope"}, "credentialId"},
		{map[string]any{"sessionId": id, "mode": "user", "timeoutMs": 0}, "timeoutMs"},
	} {
		if r := h.call(10*time.Second, "set_mode", c.args); !r.isErr || !strings.Contains(r.msg, c.field) {
			t.Errorf("set_mode %v: %v", c.args, r)
		}
	}
	seen = append(seen, h.logs.String())
	for _, s := range seen {
		if strings.Contains(s, enable) || strings.Contains(s, pass) {
			t.Fatalf("a secret shows: %q", s)
		}
	}
}
