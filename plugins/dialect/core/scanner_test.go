package core

import (
	"fmt"
	"strings"
	"testing"

	"github.com/termhost/termhost/plugins/dialect/core/coretest"
)

type step = coretest.Step

func in(s string) step  { return step{In: s} }
func out(s string) step { return step{Out: s} }

var transcripts = coretest.Transcripts

// run feeds a transcript and returns the bytes passed on, the events as
// "type:field=value,..." strings with their offsets, and what was sent to
// the peer.
type result struct {
	user   string
	events []string
	at     []int
	peer   string
}

func run(sc *Scanner, steps []step, split func(string) []string) result {
	var rec recorder
	for _, st := range steps {
		if st.Out != "" {
			sc.Outbound([]byte(st.Out))
			continue
		}
		pieces := []string{st.In}
		if split != nil {
			pieces = split(st.In)
		}
		for _, p := range pieces {
			before, calls, evs := rec.user.Len(), rec.calls, len(rec.events)
			if sc.Inbound([]byte(p), &rec) {
				if rec.user.String()[before:] != p || rec.calls-calls > 1 || len(rec.events) != evs {
					panic(fmt.Sprintf("plain chunk %q came out as %q", p, rec.user.String()[before:]))
				}
			}
		}
	}
	return result{user: rec.user.String(), events: rec.events, at: rec.at, peer: rec.peer.String()}
}

func hasEvent(r result, want string) bool {
	for _, e := range r.events {
		if e == want || strings.HasPrefix(e, want+" ") {
			return true
		}
	}
	return false
}

func forced(t *testing.T, name string) *Scanner {
	t.Helper()
	sc := New()
	if err := sc.Force(name); err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestCiscoIOSSession(t *testing.T) {
	steps := []step{
		in("\r\n\r\nUser Access Verification\r\n\r\nUsername: "),
		out("admin\r"),
		in("admin\r\nPassword: "),
		out("secret\r"),
		in("\r\nR1>"),
		out("enable\r"),
		in("enable\r\nPassword: "),
		out("s3cret\r"),
		in("\r\nR1#"),
		out("show running-config\r"),
		in("show running-config\r\nBuilding configuration...\r\n\r\nhostname R1\r\n --More-- "),
		in("\b\b\b\b\b\b\b\b\b        \b\b\b\b\b\b\b\b\b  ip address 10.0.0.1 255.255.255.0\r\nend\r\n\r\nR1#"),
		out("conf t\r"),
		in("conf t\r\nEnter configuration commands, one per line.  End with CNTL/Z.\r\nR1(config)#"),
		out("interface gi0/1\r"),
		in("interface gi0/1\r\nR1(config-if)#"),
		out("shw ip\r"),
		in("shw ip\r\n       ^\r\n% Invalid input detected at '^' marker.\r\n\r\nR1(config-if)#"),
		out("end\r"),
		in("end\r\nR1#"),
		out("copy run start\r"),
		in("copy run start\r\nDestination filename [startup-config]? "),
	}
	r := run(New(), steps, nil)
	for _, want := range []string{
		"dialect name=cisco_ios",
		"login field=username",
		"login field=password",
		"prompt dialect=cisco_ios hostname=R1 mode=user submode= prompt=R1>",
		"login field=enable",
		"prompt dialect=cisco_ios hostname=R1 mode=privileged submode= prompt=R1#",
		"pager text=--More-- pages=1",
		"prompt dialect=cisco_ios hostname=R1 mode=config submode= prompt=R1(config)#",
		"prompt dialect=cisco_ios hostname=R1 mode=config submode=config-if prompt=R1(config-if)#",
		"error text=% Invalid input detected at '^' marker.",
		"question text=Destination filename [startup-config]?",
		"done",
	} {
		if !hasEvent(r, want) {
			t.Errorf("no event %q in\n%s", want, strings.Join(r.events, "\n"))
		}
	}
	if strings.Contains(r.user, "More") || strings.Contains(r.user, "\b") {
		t.Errorf("pager left in output: %q", r.user)
	}
	if !strings.Contains(r.user, "hostname R1\r\n  ip address") {
		t.Errorf("output around the pager: %q", r.user)
	}
	if r.peer != " " {
		t.Errorf("peer = %q", r.peer)
	}
	if strings.Contains(fmt.Sprint(sc0(steps)), "secret") {
		t.Error("a secret was kept in the state")
	}
}

// sc0 runs steps and returns the exported state.
func sc0(steps []step) string {
	sc := New()
	run(sc, steps, nil)
	b, _ := sc.Export()
	return string(b)
}

func TestSplitAnywhere(t *testing.T) {
	for name, steps := range transcripts {
		t.Run(name, func(t *testing.T) {
			want := run(New(), steps, nil)
			if len(want.events) == 0 {
				t.Fatal("no events")
			}
			// Split every inbound step at each position in turn.
			maxLen := 0
			for _, st := range steps {
				maxLen = max(maxLen, len(st.In))
			}
			for cut := 1; cut < maxLen; cut++ {
				got := run(New(), steps, func(s string) []string {
					if cut >= len(s) {
						return []string{s}
					}
					return []string{s[:cut], s[cut:]}
				})
				compare(t, fmt.Sprintf("cut at %d", cut), want, got)
			}
			// And byte by byte.
			got := run(New(), steps, func(s string) []string {
				var ps []string
				for i := range len(s) {
					ps = append(ps, s[i:i+1])
				}
				return ps
			})
			compare(t, "byte by byte", want, got)
		})
	}
}

func compare(t *testing.T, label string, want, got result) {
	t.Helper()
	if got.user != want.user {
		t.Fatalf("%s: output\n%q\nwant\n%q", label, got.user, want.user)
	}
	if strings.Join(got.events, "\n") != strings.Join(want.events, "\n") {
		t.Fatalf("%s: events\n%s\nwant\n%s", label, strings.Join(got.events, "\n"), strings.Join(want.events, "\n"))
	}
	if got.peer != want.peer {
		t.Fatalf("%s: peer %q want %q", label, got.peer, want.peer)
	}
	// An event may come earlier only within trailing blanks of its line
	// (a prompt "Password:" is one before its space arrives).
	for i := range got.at {
		if got.at[i] != want.at[i] && strings.TrimRight(want.user[got.at[i]:want.at[i]], " ") != "" {
			t.Fatalf("%s: event %q at %d, want %d", label, got.events[i], got.at[i], want.at[i])
		}
	}
}

// TestTranscripts: each dialect's session, auto-detected, yields exactly
// the expected events; pagers are answered and leave no trace.
func TestTranscripts(t *testing.T) {
	for name, steps := range transcripts {
		t.Run(name, func(t *testing.T) {
			r := run(New(), steps, nil)
			if got, want := strings.Join(r.events, "\n"), strings.Join(coretest.Expect[name], "\n"); got != want {
				t.Errorf("events\n%s\nwant\n%s", got, want)
			}
			if r.peer != coretest.Peer[name] {
				t.Errorf("peer %q, want %q", r.peer, coretest.Peer[name])
			}
			for _, bad := range []string{"More", "more)", "(more", "[Q quit", "\b"} {
				if strings.Contains(r.user, bad) {
					t.Errorf("output holds %q: %q", bad, r.user)
				}
			}
			// Forced to the right dialect: the same prompts and pagers.
			f := run(forced(t, name), steps, nil)
			if f.user != r.user || f.peer != r.peer {
				t.Errorf("forced: output or peer differ")
			}
		})
	}
}

// A pager prompt that may still grow ("--More--", then "(12%)": the
// table's wait) is answered at once, not after the stream goes quiet (a
// device paging forever would wait that long every page); its rest, if it
// comes, is dropped, and the pager is reported whole once that is known.
func TestWaitingPagerAnsweredAtOnce(t *testing.T) {
	sc := forced(t, "linux")
	r := run(sc, []step{out("ls | more\r"), in("a\r\nb\r\n--More--")}, nil)
	if r.peer != " " || len(r.events) != 0 || r.user != "a\r\nb\r\n" || !sc.Held() {
		t.Fatalf("the lead alone: %+v", r)
	}
	var q recorder
	sc.Quiet(&q)
	if q.user.Len() != 0 || len(q.events) != 1 || q.events[0] != "pager text=--More-- pages=1" || q.peer.Len() != 0 || sc.Held() {
		t.Fatalf("quiet: %+v", q)
	}
	// The rest comes in pieces: dropped, the pager reported whole.
	sc = forced(t, "linux")
	r = run(sc, []step{out("more f\r"), in("a\r\n\x1b[7m--More--"), in("(1"), in("2%)\x1b[27m"), in("\r\x1b[Kb\r\n")}, nil)
	if r.peer != " " || strings.Join(r.events, "|") != "pager text=--More--(12%) pages=1" || r.user != "a\r\nb\r\n" || sc.Held() {
		t.Fatalf("the rest in pieces: %+v", r)
	}
	// No rest: the wipe and the next page come; nothing of them is lost.
	sc = forced(t, "linux")
	r = run(sc, []step{out("ls | more\r"), in("a\r\n--More--"), in("\r        \r(b)\r\n")}, nil)
	if r.peer != " " || strings.Join(r.events, "|") != "pager text=--More-- pages=1" || r.user != "a\r\n(b)\r\n" {
		t.Fatalf("no rest: %+v", r)
	}
	// Text that does not complete it goes on as it is.
	sc = forced(t, "linux")
	r = run(sc, []step{out("ls | more\r"), in("a\r\n--More--"), in("(x"), in("y)\r\n")}, nil)
	if r.peer != " " || strings.Join(r.events, "|") != "pager text=--More-- pages=1" || r.user != "a\r\n(xy)\r\n" {
		t.Fatalf("not its rest: %+v", r)
	}
	// A held "-" that never became a pager is released.
	sc = forced(t, "cisco_ios")
	run(sc, []step{in("x\r\n-")}, nil)
	q = recorder{}
	if sc.Quiet(&q); q.user.String() != "-" || len(q.events) != 0 {
		t.Fatalf("quiet: %+v", q)
	}
}

func TestPagerLimitAndManual(t *testing.T) {
	sc := forced(t, "cisco_ios")
	sc.SetPager(2, true)
	page := in("line\r\n --More-- ")
	erase := in("\b\b\b\b\b\b\b\b\b        \b\b\b\b\b\b\b\b\b")
	r := run(sc, []step{out("show log\r"), page, erase, page, erase, page}, nil)
	// At the bound the table's quit key leaves the pager, and the pager
	// prompt is removed like an answered one.
	if r.peer != "  q" || !hasEvent(r, "pager_limit pages=2") || strings.Contains(r.user, "More") {
		t.Fatalf("limit: %+v", r)
	}
	// A new command restarts the count.
	r = run(sc, []step{in("\r\nR1#"), out("show run\r"), page}, nil)
	if r.peer != " " {
		t.Fatalf("after a new command: %+v", r)
	}
	sc = forced(t, "cisco_ios")
	sc.SetPager(10, false)
	r = run(sc, []step{out("show log\r"), page}, nil)
	if r.peer != "" || !hasEvent(r, "pager text=--More-- pages=0 answered=false") || !strings.HasSuffix(r.user, " --More-- ") {
		t.Fatalf("manual: %+v", r)
	}
}

func TestStateRoundTrip(t *testing.T) {
	for name, steps := range transcripts {
		want := run(New(), steps, nil)
		for cut := 1; cut < len(steps); cut++ {
			a := New()
			r1 := run(a, steps[:cut], nil)
			st, err := a.Export()
			if err != nil {
				t.Fatal(err)
			}
			b := New()
			if err := b.Import(st); err != nil {
				t.Fatal(err)
			}
			r2 := run(b, steps[cut:], nil)
			if r1.user+r2.user != want.user || strings.Join(append(r1.events, r2.events...), "\n") != strings.Join(want.events, "\n") {
				t.Fatalf("%s: state moved after step %d changes the result", name, cut)
			}
		}
	}
}

func TestForceUnknown(t *testing.T) {
	err := New().Force("cisco_xr")
	if err == nil || !strings.Contains(err.Error(), "juniper_junos") {
		t.Fatalf("err = %v", err)
	}
	if err := New().Force("cisco_xe"); err != nil {
		t.Fatal(err)
	}
}

// TestBounded: a long line without a newline keeps the state bounded.
func TestBounded(t *testing.T) {
	sc := New()
	chunk := []byte(strings.Repeat("-", 1000))
	for range 100 {
		sc.Inbound(chunk, discard{})
	}
	st, _ := sc.Export()
	if len(st) > 3*MaxLine {
		t.Fatalf("state is %d bytes", len(st))
	}
}

func FuzzScanner(f *testing.F) {
	for _, steps := range transcripts {
		var b strings.Builder
		for _, s := range steps {
			b.WriteString(s.In)
		}
		f.Add([]byte(b.String()), uint8(7))
	}
	f.Add([]byte("\x1b[7m--More--\x1b\r\x1b[K\x1b]0;x"), uint8(3))
	f.Add([]byte("Hello, this is FRRouting (version 8.4.4).\r\nfrr> list\r\n a b [jso --More-- \x00\b\b\b\b\b\b\b\b\b\b          \b\b\b\b\b\b\b\b\b\bn] --Mo"), uint8(5))
	f.Fuzz(func(t *testing.T, p []byte, cut uint8) {
		sc := New()
		c := int(cut) + 1
		for off := 0; off < len(p); off += c {
			chunk := p[off:min(off+c, len(p))]
			if chunk[0]%7 == 0 {
				sc.Outbound(chunk[:1])
			}
			sc.Inbound(chunk, discard{})
		}
		sc.Quiet(discard{})
		st, err := sc.Export()
		if err != nil {
			t.Fatal(err)
		}
		if err := New().Import(st); err != nil {
			t.Fatal(err)
		}
	})
}

// A wrong enable secret: the password asked again is still the enable
// field; a command after it resets that.
func TestEnableAskedAgain(t *testing.T) {
	sc := forced(t, "cisco_ios")
	r := run(sc, []step{in("R1>"), out("enable\r"), in("enable\r\nPassword: "), out("wrong\r"), in("\r\n% Access denied\r\n\r\nPassword: ")}, nil)
	if n := strings.Count(strings.Join(r.events, "\n"), "login field=enable"); n != 2 {
		t.Fatalf("%d enable fields in\n%s", n, strings.Join(r.events, "\n"))
	}
	r = run(sc, []step{out("\r"), in("\r\nR1>"), out("telnet 10.0.0.9\r"), in("telnet 10.0.0.9\r\nPassword: ")}, nil)
	if !hasEvent(r, "login field=password") || hasEvent(r, "login field=enable") {
		t.Fatalf("after another command:\n%s", strings.Join(r.events, "\n"))
	}
}
