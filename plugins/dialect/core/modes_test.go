package core

import (
	"strings"
	"testing"
)

// Every table's mode commands: known modes, and each mode a prompt of the
// dialect reports is connected to every other mode the table names; a
// command that moves up from user mode is one the table lists under
// "enable" (its password is the enable secret).
func TestModeTables(t *testing.T) {
	specs, err := Specs()
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, sp := range specs {
		has[sp.Name] = len(sp.Modes) > 0
		if err := checkModes(sp.Modes); err != nil {
			t.Errorf("%s: %v", sp.Name, err)
		}
		d, _ := Lookup(sp.Name)
		if up, ok := sp.Modes["user"]["privileged"]; ok && !isEnable(d, up) {
			t.Errorf("%s: %q moves to privileged mode but is not listed under enable", sp.Name, up)
		}
		for from := range sp.Modes {
			for to := range sp.Modes {
				if from != to && !reaches(sp.Modes, from, to) {
					t.Errorf("%s: no way from %s to %s", sp.Name, from, to)
				}
			}
		}
	}
	for _, n := range []string{"cisco_ios", "cisco_nxos", "arista_eos", "juniper_junos", "huawei", "frr"} {
		if !has[n] {
			t.Errorf("%s has no mode commands", n)
		}
	}
	for _, n := range []string{"mikrotik_routeros", "linux"} {
		if has[n] {
			t.Errorf("%s has mode commands; it has no modes", n)
		}
	}
}

func reaches(m map[string]map[string]string, from, to string) bool {
	seen := map[string]bool{from: true}
	next := []string{from}
	for len(next) > 0 {
		cur := next[0]
		next = next[1:]
		for n := range m[cur] {
			if n == to {
				return true
			}
			if !seen[n] {
				seen[n] = true
				next = append(next, n)
			}
		}
	}
	return false
}

func TestCheckModesRejects(t *testing.T) {
	for _, c := range []struct {
		m    map[string]map[string]string
		want string
	}{
		{map[string]map[string]string{"exec": {"config": "conf t"}}, `"exec" is not`},
		{map[string]map[string]string{"user": {"root": "su"}}, `"root" is not`},
		{map[string]map[string]string{"user": {"user": "enable"}}, "must change the mode"},
		{map[string]map[string]string{"user": {"privileged": "  "}}, "one non-blank line"},
		{map[string]map[string]string{"user": {"privileged": "enable\rsecret"}}, "one non-blank line"},
	} {
		err := checkModes(c.m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.m, err, c.want)
		}
	}
	if err := checkModes(nil); err != nil {
		t.Errorf("no modes: %v", err)
	}
}

// Info says where the device waits: the mode of the last prompt, a login
// field or a question pending since, and the dialect's mode commands.
func TestInfoPendingAndModes(t *testing.T) {
	sc := New()
	if sc.Info().Modes != nil {
		t.Error("modes before any dialect is known")
	}
	if err := sc.Force("cisco_ios"); err != nil {
		t.Fatal(err)
	}
	feed := func(s string) { sc.Inbound([]byte(s), discard{}) }
	feed("\r\nR1>")
	in := sc.Info()
	if in.Mode != "user" || in.Login != "" || in.Question != "" || in.Modes["user"]["privileged"] != "enable" {
		t.Fatalf("at the user prompt: %+v", in)
	}
	sc.Outbound([]byte("enable\r"))
	feed("enable\r\nPassword: ")
	if in := sc.Info(); in.Login != "enable" || in.Mode != "user" {
		t.Fatalf("at the enable password: %+v", in)
	}
	sc.Outbound([]byte("x\r"))
	if in := sc.Info(); in.Login != "" {
		t.Fatalf("after typing it: %+v", in)
	}
	feed("\r\nR1#")
	sc.Outbound([]byte("reload\r"))
	feed("reload\r\nProceed with reload? [confirm]")
	if in := sc.Info(); in.Question != "Proceed with reload? [confirm]" || in.Mode != "privileged" {
		t.Fatalf("at a question: %+v", in)
	}
	feed("\r\nR1#")
	if in := sc.Info(); in.Question != "" || in.Login != "" || in.Mode != "privileged" {
		t.Fatalf("back at a prompt: %+v", in)
	}
	sc.Outbound([]byte("reload\r"))
	feed("reload\r\nProceed with reload? [confirm]")
	b, err := sc.Export()
	if err != nil {
		t.Fatal(err)
	}
	sc2 := New()
	if err := sc2.Import(b); err != nil {
		t.Fatal(err)
	}
	if in := sc2.Info(); in.Question == "" || in.Modes == nil {
		t.Fatalf("after a state move: %+v", in)
	}
}

// Leaving the system view with uncommitted changes (two-stage commit):
// VRP asks, and the question is reported, not taken for a prompt.
func TestHuaweiUncommittedQuestion(t *testing.T) {
	sc := forced(t, "huawei")
	sc.Inbound([]byte("\r\n[*DC-LEAF-01]"), discard{})
	sc.Outbound([]byte("return\r"))
	var r recorder
	sc.Inbound([]byte("return\r\nWarning: Uncommitted configurations found. Are you sure to commit them before exiting? [Y(yes)/N(no)/C(cancel)]:"), &r)
	if in := sc.Info(); !strings.HasSuffix(in.Question, "[Y(yes)/N(no)/C(cancel)]:") || in.Mode != "config" || len(r.events) != 1 {
		t.Fatalf("%+v %d events", in, len(r.events))
	}
}
