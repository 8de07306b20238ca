package core

import (
	"encoding/json"
	"strings"
	"testing"
)

// Before a dialect is known, nothing that looks like a pager is held back
// or answered: a service that is no device (a BBS, a menu) gets its
// stream as it is. Once a dialect's prompt was seen, its pagers are.
func TestNoPagerBeforeDialect(t *testing.T) {
	for _, banner := range []string{
		"Welcome to the Board\r\n--More--",
		"Linux fan club BBS\r\n--More--(12%)", // a weak banner hint is not enough
		"menu\r\n ---- More ----",
	} {
		sc := New()
		r := run(sc, []step{in(banner)}, nil)
		var q recorder
		sc.Quiet(&q)
		if r.peer != "" || r.user != banner || sc.Held() || q.user.Len() != 0 || len(q.events) != 0 {
			t.Errorf("%q: passed on %q, answered %q, held %v, quiet %q %d events", banner, r.user, r.peer, sc.Held(), q.user.String(), len(q.events))
		}
		for _, e := range r.events {
			if strings.HasPrefix(e, "pager") {
				t.Errorf("%q: %s", banner, e)
			}
		}
	}
	sc := New()
	r := run(sc, []step{in("R1>"), out("show log\r"), in("show log\r\nline\r\n --More-- ")}, nil)
	if r.peer != " " || !hasEvent(r, "pager") || !hasEvent(r, "dialect name=cisco_ios") {
		t.Fatalf("after a Cisco prompt: %+v", r)
	}
}

// A state exported by a version whose tables lacked the device's dialect
// (simulated: linux confident from a BusyBox line, though the banner also
// names FRRouting) is detected again on import, and its last prompt read
// again; not once a command was answered, nor when the dialect was named.
func TestImportDetectsAgain(t *testing.T) {
	old := func(answered, forced bool) []byte {
		st := State{
			Dialect: "linux", Level: levelConfident, Forced: forced, Prompt: "frr-test>", MaxPages: DefaultMaxPages, Auto: true,
			Banner:       []byte("BusyBox v1.36.1 built-in shell\nHello, this is FRRouting (version 9.1).\n\nUser Access Verification\n"),
			DetectBudget: detectStart, Answered: answered,
		}
		b, err := json.Marshal(&st)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sc := New()
	if err := sc.Import(old(false, false)); err != nil {
		t.Fatal(err)
	}
	if in := sc.Info(); in.Dialect != "frr" || in.Mode != "user" || in.Hostname != "frr-test" || in.Modes == nil {
		t.Fatalf("detected again: %+v", in)
	}
	r := run(sc, []step{out("show interface\r"), in("show interface\r\nx\r\n--More--")}, nil)
	if r.peer != " " {
		t.Fatalf("frr's pager after the import: %+v", r)
	}
	for _, c := range []struct {
		name             string
		answered, forced bool
	}{{"answered", true, false}, {"forced", false, true}} {
		sc := New()
		if err := sc.Import(old(c.answered, c.forced)); err != nil {
			t.Fatal(err)
		}
		if in := sc.Info(); in.Dialect != "linux" {
			t.Errorf("%s: dialect %s, want linux kept", c.name, in.Dialect)
		}
	}
}

// The session's start is kept until a command (not an empty line, not a
// login answer) reaches its prompt, and never beyond maxBanner.
func TestBannerKept(t *testing.T) {
	sc := New()
	run(sc, []step{in("Acme OS\r\nlogin: "), out("admin\r"), in("admin\r\nPassword: "), out("pw\r"), in("\r\nR1>"), out("\r"), in("\r\nR1>")}, nil)
	if !strings.Contains(string(sc.st.Banner), "Acme OS") || sc.st.Answered {
		t.Fatalf("after the login and an empty line: banner %q, answered %v", sc.st.Banner, sc.st.Answered)
	}
	run(sc, []step{out("show clock\r"), in("show clock\r\n12:00\r\nR1>")}, nil)
	if len(sc.st.Banner) != 0 || !sc.st.Answered {
		t.Fatalf("after a command: banner %q, answered %v", sc.st.Banner, sc.st.Answered)
	}
	sc = New()
	run(sc, []step{in(strings.Repeat("motd line of the day\r\n", 2000))}, nil)
	if len(sc.st.Banner) != maxBanner {
		t.Fatalf("banner kept: %d bytes, want %d", len(sc.st.Banner), maxBanner)
	}
	st, _ := sc.Export()
	if err := New().Import(st); err != nil {
		t.Fatal(err)
	}
}

// A daemon's own vty (zebra's, not vtysh) names itself in its errors.
func TestFRRDaemonVtyErrors(t *testing.T) {
	for _, line := range []string{"% [ZEBRA] Unknown command: bogus-thing", "% [BGP] Command incomplete: router bgp"} {
		sc := forced(t, "frr")
		r := run(sc, []step{in("frr-test> "), out("bogus-thing\r"), in("bogus-thing\r\n" + line + "\r\nfrr-test> ")}, nil)
		if !hasEvent(r, "error text="+line) {
			t.Errorf("%q not flagged: %v", line, r.events)
		}
	}
}

// With CommandPagers, only an armed command's pagers are answered (or
// held): a line the user sends itself sees the device's pager as sent.
func TestCommandPagers(t *testing.T) {
	sc := New()
	sc.CommandPagers(true)
	run(sc, []step{in("R1>")}, nil)
	raw := run(sc, []step{out("show log\r"), in("show log\r\nline\r\n --More-- ")}, nil)
	if raw.peer != "" || !strings.HasSuffix(raw.user, " --More-- ") || sc.Held() {
		t.Fatalf("a raw command's pager: %+v", raw)
	}
	run(sc, []step{out("q"), in("\r\nR1>")}, nil)
	sc.ArmCommand()
	r := run(sc, []step{out("show log\r"), in("show log\r\nline\r\n --More-- ")}, nil)
	if r.peer != " " || strings.Contains(r.user, "More") {
		t.Fatalf("an armed command's pager: %+v", r)
	}
	r = run(sc, []step{in("\r\nR1>"), out("show log\r"), in("show log\r\nline\r\n --More-- ")}, nil)
	if r.peer != "" {
		t.Fatalf("the next, raw, command's pager: %+v", r)
	}
}
