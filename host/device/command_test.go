package device

import (
	"strings"
	"testing"
)

func TestCleanDropEchoDropPrompt(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\r\nb\r\n", "a\nb\n"},
		{"\x1b[1mbold\x1b[0m\r\n", "bold\n"},
		{"12345\rab\n", "ab345\n"},
		{"abc\b\bX\n", "aXc\n"},
		{"three\n#      \r \r", "three\n"},
		{"tail  \t\nlast", "tail\nlast"},
		{" --More-- \b\b\b\b\b\b\b\b\b\b          \b\b\b\b\b\b\b\b\b\bnext\n", "next\n"},
	} {
		if got := clean([]byte(c.in)); got != c.want {
			t.Errorf("clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := dropEcho("R1#show ver\nout\n", "show ver"); got != "out\n" {
		t.Errorf("dropEcho = %q", got)
	}
	if got := dropEcho("out\n", "show ver"); got != "out\n" {
		t.Errorf("dropEcho without an echo = %q", got)
	}
	if got := dropPrompt("out\nR1#", "R1#"); got != "out\n" {
		t.Errorf("dropPrompt = %q", got)
	}
	if got := dropPrompt("out\nmore", "R1#"); got != "out\nmore" {
		t.Errorf("dropPrompt of a line that is not the prompt = %q", got)
	}
}

// The echo anchor: the end of the line that echoes the command, found
// through a line editor's colours and across the pieces the output comes
// in; output before it (an earlier exchange's tail and prompt) is not the
// command's.
func TestEchoAnchor(t *testing.T) {
	stream := "Jun  2 2025\r\nR1#\x1b[1ms\x1b[0mhow\x1b[32m clock\x1b[0m\r\n*09:30 UTC\r\nR1#"
	want := uint64(100 + strings.Index(stream, "*09:30"))
	for cut := 1; cut < len(stream); cut++ {
		a := echoAnchor{tail: echoTail("show clock"), on: true}
		c := &collector{off: 100}
		for _, piece := range []string{stream[:cut], stream[cut:]} {
			c.data = append(c.data, piece...)
			a.find(c)
		}
		if !a.found || a.end != want {
			t.Fatalf("cut at %d: found %v at %d, want %d", cut, a.found, a.end, want)
		}
		if a.after(want-1) || !a.after(want) {
			t.Fatalf("cut at %d: a prompt before the echo counts", cut)
		}
	}
	// A long line scrolled by the device: its last characters identify it.
	if got := echoTail("show interfaces GigabitEthernet0/0/1 counters "); len(got) != 16 || !strings.HasSuffix(string(got), "0/0/1 counters") {
		t.Errorf("echoTail = %q", got)
	}
	// No echo within the window: every prompt counts.
	a := echoAnchor{tail: echoTail("show clock"), on: true}
	a.find(&collector{data: make([]byte, echoWindow)})
	if a.found || !a.after(0) {
		t.Errorf("no echo: found %v, a prompt counts %v", a.found, a.after(0))
	}
}
