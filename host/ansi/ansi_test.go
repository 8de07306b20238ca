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
