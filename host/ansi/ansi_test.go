package ansi

import "testing"

func TestStrip(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[32mup\x1b[0m", "up"},
		{"a\x1b[2J\x1b[Hb", "ab"},
		{"\x1b]0;title\x07$ ", "$ "},
		{"\x1b]133;A\x1b\\$ ", "$ "},
		{"\x1b(Bx", "x"},
		{"x\x1b=y", "xy"},
		{"\x1b[?2004hprompt", "prompt"},
		{"cut\x1b[3", "cut"},
		{"é\x1b[1m€", "é€"},
		{"ě", "ě"}, // C4 9B: a continuation byte, not an 8-bit CSI
	} {
		if got := string(Strip([]byte(c.in))); got != c.want {
			t.Errorf("Strip(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzStrip(f *testing.F) {
	f.Add([]byte("\x1b[31mred\x1b[0m"))
	f.Fuzz(func(t *testing.T, p []byte) {
		out := Strip(p)
		if len(out) > len(p) {
			t.Fatalf("output longer than input")
		}
	})
}

func TestSeqLen(t *testing.T) {
	for in, want := range map[string]int{
		"\x1b[31mx": 5, "\x1b[31m": 5, "\x1b[31": 0, "\x1b[": 0, "\x1b": 0,
		"\x1b]0;t\x07": 6, "\x1b]0;t": 0, "\x1b]0;t\x1b\\": 7, "\x1b(B": 3, "\x1b(": 0, "\x1b7": 2,
	} {
		if got := SeqLen([]byte(in)); got != want {
			t.Errorf("SeqLen(%q) = %d, want %d", in, got, want)
		}
	}
}
