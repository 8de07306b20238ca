package core

import "testing"

func screenText(t *Terminal) string {
	var b []byte
	_, rows := t.Size()
	for r := 0; r < rows; r++ {
		b = t.AppendRowText(b, r)
		b = append(b, '\n')
	}
	return string(b)
}

func TestSmoke(t *testing.T) {
	term := New(Options{Cols: 10, Rows: 3})
	term.Write([]byte("hello\r\nworld\x1b[1;31mred\x1b[0m\r\n"))
	got := screenText(term)
	if got != "hello\nworldred\n\n" {
		t.Fatalf("got %q", got)
	}
	if a := string(term.AppendRowANSI(nil, 1)); a != "world\x1b[0;31;1mred\x1b[0m" && a != "world\x1b[0;1;31mred\x1b[0m" {
		t.Fatalf("ansi %q", a)
	}
}
