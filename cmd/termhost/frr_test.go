package main

import (
	"fmt"
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
	h := startHostWithCreds(t, []devCred{frrCred(r)})
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
	// A paged output: five lines a page, each --More-- answered and gone,
	// the same text as unpaged.
	h.must("run_command", map[string]any{"sessionId": d["sessionId"], "command": "terminal length 5", "timeoutMs": 15000})
	paged := h.must("run_command", map[string]any{"sessionId": d["sessionId"], "command": "show interface", "timeoutMs": 15000})
	if paged["reason"] != "done" || paged["pages"].(float64) < 2 || strings.Contains(paged["output"].(string), "More") ||
		strings.Count(paged["output"].(string), "\n") != strings.Count(dres["output"].(string), "\n") {
		t.Errorf("paged show interface: %v pages, reason %v, %d lines (unpaged %d)\n%s", paged["pages"], paged["reason"],
			strings.Count(paged["output"].(string), "\n"), strings.Count(dres["output"].(string), "\n"), paged["output"])
	}
	// No secret shows anywhere. What is checked must be complete first:
	// the screen once it shows the last command's answer (a secret echoed
	// at enable would be above it), the log once the server has exited.
	h.screenHas(id, "Unknown command")
	view := h.view(id)
	h.stop()
	for _, s := range []string{fmt.Sprint(c), fmt.Sprint(res), fmt.Sprint(out), h.logs.String(), view} {
		for _, secret := range []string{r.Password, r.EnablePassword} {
			if strings.Contains(s, secret) {
				t.Fatalf("a secret shows: %q", s)
			}
		}
	}
}

// vtysh under a PTY with the frr dialect: the integrated shell of a real
// FRRouting, talking to the test's zebra over its vty socket. run_command
// returns a show's output alone, moves into configuration mode and back,
// and reports an unknown command.
func TestVtyshUnderPTY(t *testing.T) {
	r := frrtest.Start(t)
	h := startHost(t)
	l := h.must("launch_app", map[string]any{"command": "vtysh", "args": []string{"--vty_socket", r.Dir}, "dialect": "frr", "cols": 120})
	id := l["session_id"].(string)
	w := h.call(20*time.Second, "wait_for", map[string]any{"session_id": id, "until": `#\s*$`, "onScreen": true, "timeoutMs": 15000})
	if w.isErr || w.res["reason"] != "matched" {
		t.Fatalf("no vtysh prompt: %v\n%s", w, h.view(id))
	}
	res := h.must("run_command", map[string]any{"sessionId": id, "command": "show interface", "timeoutMs": 15000})
	out, _ := res["output"].(string)
	if res["reason"] != "done" || res["dialect"] != "frr" || res["mode"] != "privileged" ||
		!strings.Contains(out, "Interface lo is up") || strings.Contains(out, "show interface") || strings.HasSuffix(strings.TrimSpace(out), "#") {
		t.Fatalf("show interface: %v\nraw:\n%q", res, h.must("view_screen", map[string]any{"session_id": id, "format": "raw"})["content"])
	}
	res = h.must("run_command", map[string]any{"sessionId": id, "command": "configure terminal", "timeoutMs": 15000})
	if res["mode"] != "config" {
		t.Fatalf("configure terminal: %v", res)
	}
	res = h.must("run_command", map[string]any{"sessionId": id, "command": "interface lo", "timeoutMs": 15000})
	if res["mode"] != "config" || res["submode"] != "config-if" {
		t.Errorf("interface lo: %v", res)
	}
	res = h.must("run_command", map[string]any{"sessionId": id, "command": "bogus-thing", "timeoutMs": 15000})
	if e, _ := res["error"].(string); !strings.Contains(e, "Unknown command") {
		t.Errorf("an unknown command: %v", res)
	}
	res = h.must("run_command", map[string]any{"sessionId": id, "command": "end", "timeoutMs": 15000})
	if res["mode"] != "privileged" || res["reason"] != "done" {
		t.Errorf("end: %v", res)
	}
	// set_mode works under a PTY as over Telnet.
	res = h.must("set_mode", map[string]any{"sessionId": id, "mode": "config", "timeoutMs": 15000})
	if res["mode"] != "config" || res["reason"] != "done" || fmt.Sprint(res["steps"]) != "[configure terminal]" {
		t.Errorf("set_mode config: %v", res)
	}
	res = h.must("set_mode", map[string]any{"sessionId": id, "mode": "privileged", "timeoutMs": 15000})
	if res["mode"] != "privileged" || res["reason"] != "done" || fmt.Sprint(res["steps"]) != "[end]" {
		t.Errorf("set_mode privileged: %v", res)
	}
}

// set_mode on a real FRRouting vty: user to configuration mode with the
// enable password typed from the credential, and back down, with FRR's own
// commands; no secret in any result.
func TestFRRSetMode(t *testing.T) {
	r := frrtest.Start(t)
	h := startHostWithCreds(t, []devCred{frrCred(r)})
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

// FRR's vty pages by rows of the window (NAWS) and counts wrapped rows, so
// its " --More-- " may cut a long line (SPEC DONE-5). telnet_connect with
// the vty's credential and a width (the dialect detected), then `list` at
// 40, 80, 120 and 250 columns: done, paged, no pager left, every line whole
// (the same lines as unpaged, first and last included), and the next
// command returns its own output only.
func TestFRRPagerCutLines(t *testing.T) {
	r := frrtest.Start(t)
	h := startHostWithCreds(t, []devCred{frrCred(r)})
	// The reference: unpaged.
	ref := h.must("telnet_connect", map[string]any{"credentialId": "frr"})["sessionId"]
	h.must("run_command", map[string]any{"sessionId": ref, "command": "terminal length 0", "timeoutMs": 15000})
	unpaged := h.must("run_command", map[string]any{"sessionId": ref, "command": "list", "timeoutMs": 15000})
	want := pagerLines(unpaged["output"].(string))
	if unpaged["reason"] != "done" || len(want) < 50 || want[0] != "show version" {
		t.Fatalf("unpaged list: %v", unpaged)
	}
	for _, cols := range []int{40, 80, 120, 250} {
		t.Run(fmt.Sprintf("cols-%d", cols), func(t *testing.T) {
			c := h.must("telnet_connect", map[string]any{"credentialId": "frr", "cols": cols})
			id := c["sessionId"]
			res := h.must("run_command", map[string]any{"sessionId": id, "command": "list", "timeoutMs": 15000})
			out, _ := res["output"].(string)
			got := pagerLines(out)
			if res["reason"] != "done" || res["dialect"] != "frr" || res["pages"].(float64) < 2 ||
				strings.Contains(out, "More") || strings.ContainsAny(out, "\b\x00") {
				t.Fatalf("list: reason %v, dialect %v, pages %v:\n%s", res["reason"], res["dialect"], res["pages"], out)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				for i := range max(len(got), len(want)) {
					if i >= len(got) || i >= len(want) || got[i] != want[i] {
						t.Fatalf("%d lines (unpaged %d); line %d is %q, want %q\n%s", len(got), len(want), i,
							got[min(i, len(got)-1)], want[min(i, len(want)-1)], out)
					}
				}
			}
			v := h.must("run_command", map[string]any{"sessionId": id, "command": "show version", "timeoutMs": 15000})
			vout, _ := v["output"].(string)
			if v["reason"] != "done" || !strings.Contains(vout, "FRRouting") || strings.Contains(vout, want[len(want)-1]) ||
				strings.Contains(vout, "show evpn") || strings.Contains(vout, "More") {
				t.Fatalf("show version after list: %v", v)
			}
		})
	}
}

// pagerLines: an output's lines, trimmed at the left and right, blank
// ones left out.
func pagerLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
