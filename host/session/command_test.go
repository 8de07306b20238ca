package session

import "testing"

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

func TestMaskerSplitEcho(t *testing.T) {
	m := &masker{secret: []byte("hunter2")}
	var out []byte
	for _, c := range []string{"Pass", "word: h", "u", "nt", "er", "2\r\nhun", "gry\r\n"} {
		out = append(out, m.filter([]byte(c))...)
	}
	out = append(out, m.held...)
	if string(out) != "Password: *******\r\nhungry\r\n" {
		t.Errorf("masked stream = %q", out)
	}
}
