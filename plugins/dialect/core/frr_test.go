package core

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FRR's vty pager as a real zebra (FRRouting 8.4.4) sends it: testdata/frr
// holds `list` at 40, 80, 120 and 250 columns (24 rows), captured with a
// small Telnet client that logged in, sent the command and answered each
// pager with a space; list-ref.txt is the same command after `terminal
// length 0`. The vty counts wrapped rows, so its pager may cut a long line:
//
//	…"    show interface vrf NAME [brief] [jso --More-- \x00"   (40 columns)
//	"\b\b\b\b\b\b\b\b\b\b          \b\b\b\b\b\b\b\b\b\bn]\r\n    show interface …"
//
// the prompt " --More-- " right after the cut, then a NUL; after the
// answer, ten backspaces, ten blanks and ten backspaces, then the rest of
// the line. At 80 columns one page ends inside "[prefix] [json]"; at 120
// and 250 every pager starts a line.

// frrTrace reads a capture: "< q" is a read from the device, "> q" what
// the client sent (q quoted as Go does). The client's pager answers (a
// lone " " or "q") are left out: the scanner sends its own; n counts them.
func frrTrace(t testing.TB, name string) (steps []step, answers string) {
	t.Helper()
	f, err := os.Open("testdata/frr/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		dir, q, _ := strings.Cut(sc.Text(), " ")
		s, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("%s: %q: %v", name, sc.Text(), err)
		}
		switch {
		case dir == "<":
			steps = append(steps, in(s))
		case s == " " || s == "q":
			answers += s
		default:
			steps = append(steps, out(s))
		}
	}
	return steps, answers
}

// frrRef: the lines of the unpaged list.
func frrRef(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/frr/list-ref.txt")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// frrListOutput cuts the list's output out of what was passed on: after
// the command's echo, before the prompt after it.
func frrListOutput(user string) (string, bool) {
	_, rest, ok := strings.Cut(user, "frr-test> list\r\n")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "frr-test> ")
	if i < 0 {
		return "", false
	}
	return rest[:i], true
}

func TestFRRPagerCutsLines(t *testing.T) {
	ref := frrRef(t)
	for _, w := range []int{40, 80, 120, 250} {
		t.Run(fmt.Sprintf("cols-%d", w), func(t *testing.T) {
			steps, answers := frrTrace(t, fmt.Sprintf("list-%d.trace", w))
			want := run(New(), steps, nil)
			checkFRRList(t, "as read", want, answers, ref)
			// Every read cut at each point, and byte by byte: the same.
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
			got := run(New(), steps, func(s string) []string {
				ps := make([]string, len(s))
				for i := range len(s) {
					ps[i] = s[i : i+1]
				}
				return ps
			})
			compare(t, "byte by byte", want, got)
		})
	}
}

func checkFRRList(t *testing.T, label string, r result, answers string, ref []string) {
	t.Helper()
	if r.peer != answers {
		t.Fatalf("%s: answered %q, the capture %q", label, r.peer, answers)
	}
	var pagers []string
	for _, e := range r.events {
		if strings.HasPrefix(e, "pager") {
			pagers = append(pagers, e)
		}
	}
	for i, e := range pagers {
		if want := fmt.Sprintf("pager text=--More-- pages=%d", i+1); e != want {
			t.Errorf("%s: pager event %q, want %q", label, e, want)
		}
	}
	if len(pagers) != len(answers) || !hasEvent(r, "dialect name=frr confident=true") {
		t.Errorf("%s: events\n%s", label, strings.Join(r.events, "\n"))
	}
	if n := len(r.events); n < 2 || r.events[n-2] != "prompt dialect=frr hostname=frr-test mode=user submode= prompt=frr-test>" || r.events[n-1] != "done" {
		t.Errorf("%s: the list does not end at its prompt: %q", label, r.events[max(0, n-2):])
	}
	out, ok := frrListOutput(r.user)
	if !ok {
		t.Fatalf("%s: no list in %q", label, r.user)
	}
	if strings.ContainsAny(out, "\b\x00") || strings.Contains(out, "More") {
		t.Errorf("%s: the pager left a trace: %q", label, out)
	}
	// Every line whole, as unpaged: the cut lines joined.
	if got := strings.Split(strings.TrimSuffix(out, "\r\n"), "\r\n"); strings.Join(got, "\n") != strings.Join(ref, "\n") {
		for i := range max(len(got), len(ref)) {
			if i >= len(got) || i >= len(ref) || got[i] != ref[i] {
				t.Fatalf("%s: %d lines (unpaged %d); line %d:\n%q\nwant\n%q", label, len(got), len(ref), i, got[min(i, len(got)-1)], ref[min(i, len(ref)-1)])
			}
		}
	}
}

// At the bound a pager that cut a line is left with q; zebra then wipes
// it and shows its prompt right after the cut text: it starts a line of
// its own (the prompt is read, the command is done), the cut text stays.
func TestFRRPagerLimitMidLine(t *testing.T) {
	steps, answers := frrTrace(t, "quit-40.trace")
	if answers != "q" {
		t.Fatalf("the capture answered %q", answers)
	}
	want := result{}
	for i, split := range []func(string) []string{nil, func(s string) []string {
		ps := make([]string, len(s))
		for i := range len(s) {
			ps[i] = s[i : i+1]
		}
		return ps
	}} {
		sc := New()
		sc.SetPager(0, true)
		r := run(sc, steps, split)
		if i == 0 {
			want = r
		} else {
			compare(t, "byte by byte", want, r)
		}
		if r.peer != "q" || !hasEvent(r, "pager_limit pages=0") || r.events[len(r.events)-1] != "done" ||
			!strings.HasSuffix(r.user, "    show interface vrf NAME [brief] [jso\r\nfrr-test> ") || strings.ContainsAny(r.user, "\b\x00") {
			t.Fatalf("limit: %q\n%s", r.user, strings.Join(r.events, "\n"))
		}
	}
}

// Only a pager whose table gives its midLine is looked for after text on
// a line (FRR's: its vty counts wrapped rows). The other devices show
// theirs at the start of a line; the same text after other text, at the
// end of a read, is output like any other.
func TestMidLineOnlyWhereDeclared(t *testing.T) {
	prompts := map[string]string{
		"arista_eos": " --More-- ", "cisco_ios": " --More-- ", "cisco_nxos": "\x1b[7m--More--\x1b[m",
		"frr": " --More-- \x00", "huawei": "  ---- More ----", "juniper_junos": "---(more 42%)---",
		"linux": "--More--(42%)", "mikrotik_routeros": "-- [Q quit|D dump|down]",
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			pg, ok := prompts[name]
			if !ok {
				t.Fatalf("no pager sample for %s", name)
			}
			d, _ := Lookup(name)
			mid := false
			for _, p := range d.pagers {
				mid = mid || p.mid != nil
			}
			// At the start of a line: answered everywhere.
			r := run(forced(t, name), []step{out("show x\r"), in("show x\r\nabc\r\n" + pg)}, nil)
			if r.peer != " " || r.user != "show x\r\nabc\r\n" {
				t.Fatalf("at the start of a line: %+v", r)
			}
			r = run(forced(t, name), []step{out("show x\r"), in("show x\r\nabc" + pg)}, nil)
			if mid != (name == "frr") {
				t.Errorf("%s: midLine %v", name, mid)
			}
			if mid {
				if r.peer != " " || r.user != "show x\r\nabc" {
					t.Fatalf("after text: %+v", r)
				}
				return
			}
			if r.peer != "" || r.user != "show x\r\nabc"+pg || len(r.events) != 0 {
				t.Fatalf("after text: %+v", r)
			}
		})
	}
}

// A pager cutting a line longer than the scanner keeps (MaxLine), not
// answered automatically, the blanks at the end of a line held back, and
// none after a prompt.
func TestMidLinePagerEdges(t *testing.T) {
	erase := "\b\b\b\b\b\b\b\b\b\b          \b\b\b\b\b\b\b\b\b\b"
	long := strings.Repeat("x", 2*MaxLine+7)
	r := run(forced(t, "frr"), []step{out("show x\r"), in("show x\r\n" + long[:MaxLine]), in(long[MaxLine:] + " --More-- \x00"), in(erase + "yz\r\nfrr# ")}, nil)
	if r.peer != " " || r.user != "show x\r\n"+long+"yz\r\nfrr# " || !hasEvent(r, "pager text=--More-- pages=1") {
		t.Fatalf("a long line: %q %q %q", r.peer, r.user[max(0, len(r.user)-40):], r.events)
	}
	sc := forced(t, "frr")
	sc.SetPager(10, false)
	r = run(sc, []step{out("show x\r"), in("show x\r\nabc --More-- \x00")}, nil)
	if r.peer != "" || r.user != "show x\r\nabc --More-- \x00" || strings.Join(r.events, "|") != "pager text=--More-- pages=0 answered=false" {
		t.Fatalf("manual: %+v", r)
	}
	sc = forced(t, "frr")
	r = run(sc, []step{out("show x\r"), in("show x\r\nabc ")}, nil)
	if r.user != "show x\r\nabc" || !sc.Held() {
		t.Fatalf("a blank after text: %+v", r)
	}
	// Moved to another scanner while held.
	st, err := sc.Export()
	if err != nil {
		t.Fatal(err)
	}
	sc = New()
	if err := sc.Import(st); err != nil {
		t.Fatal(err)
	}
	var q recorder
	if sc.Quiet(&q); q.user.String() != " " || sc.Held() {
		t.Fatalf("quiet: %+v", q)
	}
	sc = forced(t, "frr")
	r = run(sc, []step{in("frr# "), out("x\r"), in("x\r\nPassword: ")}, nil)
	if r.user != "frr# x\r\nPassword: " || sc.Held() || r.at[len(r.at)-1] != len(r.user) {
		t.Fatalf("a prompt's blank: %+v", r)
	}
}
