package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// step is one piece of a transcript: bytes from the device (In) or a line
// the user sends (Out).
type step struct{ In, Out string }

func in(s string) step  { return step{In: s} }
func out(s string) step { return step{Out: s} }

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
	var r result
	var user strings.Builder
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
			b, evs, changed := sc.Inbound([]byte(p))
			if !changed && len(evs) == 0 {
				if string(b) != p {
					panic(fmt.Sprintf("unchanged chunk %q came out as %q", p, b))
				}
			}
			at := 0
			for _, e := range evs {
				user.Write(b[at:e.At])
				at = e.At
				r.peer += string(e.Peer)
				if e.JSON != nil {
					r.events = append(r.events, evString(e.JSON))
					r.at = append(r.at, user.Len())
				}
			}
			user.Write(b[at:])
		}
	}
	r.user = user.String()
	return r
}

func evString(b []byte) string {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	s := m["type"].(string)
	for _, k := range []string{"name", "dialect", "hostname", "mode", "submode", "prompt", "field", "text", "pages", "answered", "confident"} {
		if v, ok := m[k]; ok {
			s += fmt.Sprintf(" %s=%v", k, v)
		}
	}
	return s
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
