package core

import "testing"

// TestAtRest: the terminal is at rest between sequences and not inside
// one, whatever the chunk boundaries; text in the ground state never makes
// it answer.
func TestAtRest(t *testing.T) {
	term := New(Options{Cols: 80, Rows: 24})
	steps := []struct {
		in   string
		rest bool
	}{
		{"plain text\r\n", true},
		{"\x1b", false},
		{"[", false},
		{"6", false},
		{"n", true}, // DSR completed by a "text" byte: not at rest before it
		{"\x1b]0;tit", false},
		{"le\x07", true},
		{"\x1bP", false},
		{"q\x1b\\", true},
		{"h\xc3", true}, // half a UTF-8 character is still text
		{"\xa9 \t\b", true},
	}
	for _, s := range steps {
		term.Write([]byte(s.in))
		if got := term.AtRest(); got != s.rest {
			t.Fatalf("after %q: AtRest %v, want %v", s.in, got, s.rest)
		}
	}
	term.Replies() // the DSR's answer
	term.Write([]byte("more text, CR LF\r\n\t\b"))
	if r := term.Replies(); len(r) != 0 {
		t.Fatalf("text at rest made the terminal answer %q", r)
	}
}
