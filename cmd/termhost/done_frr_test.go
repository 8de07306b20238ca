package main

// DONE-5 on a real FRRouting zebra: its pager at 40, 80 and 250 columns
// (see done_test.go for what fails today).

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/frrtest"
)

// TestDoneFRRPager: telnet_connect with the vty's credential and no other
// option (the dialect detected), markers, then `list` (about a hundred
// lines, paged by FRR at the window's height): no --More-- left, the
// output every line of the unpaged list and ending with its last line,
// and the next commands clean.
func TestDoneFRRPager(t *testing.T) {
	r := frrtest.Start(t)
	ref := frrListReference(t, r)
	if len(ref) < 30 {
		t.Fatalf("the unpaged list has %d lines; want a paged output: %q", len(ref), ref)
	}
	h := startHostWithCreds(t, []devCred{frrCred(r)})
	for _, cols := range []int{40, 80, 250} {
		t.Run("cols-"+strconv.Itoa(cols), func(t *testing.T) {
			doneSlot(t)
			label := fmt.Sprintf("frr-%d", cols)
			c := h.call(30*time.Second, "telnet_connect", map[string]any{"credentialId": "frr", "cols": cols})
			if c.isErr {
				t.Fatalf("telnet_connect: %v", c)
			}
			s := &doneSess{h: h, id: c.res["sessionId"].(string), label: label}
			tag := newTag("frr")
			i := 1
			marker := func() {
				t.Helper()
				cmd, _ := markerCmd(langDevice, tag, i)
				checkMarker(t, fmt.Sprintf("%s %q", label, cmd), s.run(t, cmd, nil), tag, i)
				i++
				s.stopIfBroken(t)
			}
			marker()
			marker()
			l := s.run(t, "list", nil)
			out := l.output()
			switch {
			case l.isErr || !okEnd(l.reason()):
				t.Errorf("%s: list did not end at the prompt: %v", label, l)
			case strings.Contains(out, "More"):
				t.Errorf("%s: list: the pager prompt is left in the output: %v", label, l)
			}
			got := frrLines(out)
			if len(got) == 0 || got[len(got)-1] != ref[len(ref)-1] {
				last := ""
				if len(got) > 0 {
					last = got[len(got)-1]
				}
				t.Errorf("%s: list: output ends with %q, want its own last line %q (%d lines, %d unpaged)", label, last, ref[len(ref)-1], len(got), len(ref))
			}
			have := map[string]bool{}
			for _, g := range got {
				have[g] = true
			}
			var missing []string
			for _, w := range ref {
				if !have[w] {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%s: list: %d of its %d lines missing or cut (first: %q); output:\n%s", label, len(missing), len(ref), missing[0], clip(out))
			}
			if len(got) > 0 && (got[0] == "list" || strings.Contains(out, r.Hostname+">")) {
				t.Errorf("%s: list: echo or prompt in the output: %q", label, clip(out))
			}
			s.stopIfBroken(t)
			v := s.run(t, "show version", nil)
			if v.isErr || !okEnd(v.reason()) || !strings.Contains(v.output(), "FRRouting") ||
				strings.Contains(v.output(), ref[len(ref)-1]) || strings.Contains(v.output(), "More") {
				t.Errorf("%s: show version after list: want FRR's version alone (nothing of list): %v", label, v)
			}
			s.stopIfBroken(t)
			marker()
		})
	}
}

// frrLines is an output's non-empty lines, trailing blanks and CRs off.
func frrLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimRight(l, " \t\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// frrListReference is `list` read straight from the vty over TCP, with
// terminal length 0 (no pager), without termhost: its lines, without the
// echo and the prompt.
func frrListReference(t *testing.T, r *frrtest.Router) []string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	var tn telnetStrip
	var text strings.Builder
	until := func(suffix string) string {
		t.Helper()
		buf := make([]byte, 4096)
		for !strings.HasSuffix(text.String(), suffix) {
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("the FRR vty, waiting for %q: %v; read %q", suffix, err, text.String())
			}
			text.Write(tn.strip(buf[:n]))
		}
		s := text.String()
		text.Reset()
		return s
	}
	send := func(line string) {
		t.Helper()
		if _, err := conn.Write([]byte(line + "\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	prompt := r.Hostname + "> "
	until("Password: ")
	send(r.Password)
	until(prompt)
	send("terminal length 0")
	until(prompt)
	send("list")
	lines := frrLines(strings.TrimSuffix(until(prompt), prompt))
	if len(lines) > 0 && lines[0] == "list" {
		lines = lines[1:]
	}
	return lines
}

// telnetStrip removes Telnet commands (IAC …, subnegotiations) from a
// stream cut anywhere, answering nothing (the vty does not wait for
// answers).
type telnetStrip struct{ state int }

func (s *telnetStrip) strip(p []byte) []byte {
	const iac, sb, se = 255, 250, 240
	var out []byte
	for _, b := range p {
		switch s.state {
		case 0: // data
			if b == iac {
				s.state = 1
			} else {
				out = append(out, b)
			}
		case 1: // after IAC
			switch {
			case b == iac:
				out = append(out, b)
				s.state = 0
			case b == sb:
				s.state = 3
			case b >= 251: // WILL WONT DO DONT: an option follows
				s.state = 2
			default:
				s.state = 0
			}
		case 2: // the option
			s.state = 0
		case 3: // inside SB
			if b == iac {
				s.state = 4
			}
		case 4: // IAC inside SB
			if b == se {
				s.state = 0
			} else {
				s.state = 3
			}
		}
	}
	return out
}
