package marks

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func clock() func() int64 {
	var n int64
	return func() int64 { n++; return n }
}

func kinds(t *Typed) string {
	var b strings.Builder
	for _, l := range t.queue {
		b.WriteByte(" BTU"[l.Kind])
	}
	return b.String()
}

func typed(chunks ...string) *Typed {
	var t Typed
	now := clock()
	for _, c := range chunks {
		t.Feed([]byte(c), now)
	}
	return &t
}

// TestTypedLines: what each typed line is taken for (B blank, T text, U
// unknown).
func TestTypedLines(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{"false\r", "T"},
		{"\r", "B"},
		{"   \n", "B"},
		{"ls\r\n", "TB"}, // CR LF is two lines to the terminal
		{"ab\x7f\x7f\r", "B"},
		{"ab\x7f\r", "T"},
		{"abc\x15\r", "B"},             // Ctrl-U
		{"abc\x03\r", "B"},             // Ctrl-C drops the line
		{"echo hi \x17\x17\r", "B"},    // Ctrl-W twice
		{"echo hi \x17\r", "T"},        // one word left
		{"\x1b[A\r", "U"},              // history
		{"ls\x1b[D\x7f\r", "U"},        // cursor moved
		{"\x1bOA\r", "U"},              // history, application mode
		{"\x1bb\r", "U"},               // Alt-b
		{"\x1b\r", "U"},                // Escape, then Enter: still one line
		{"l\ts\r", "U"},                // completion
		{"a\x08\r", "U"},               // Ctrl-H: dash's character, BusyBox's erase
		{"a\x04\r", "U"},               // Ctrl-D
		{"\x1b[12;1R\r", "B"},          // a cursor position report is no typing
		{"\x1b[12;1Rls\r", "T"},        // …
		{"\x1b[?62;22c\x1b[0n\r", "B"}, // device attributes, status
		{"\x1b]11;rgb:0000/0000/0000\x1b\\\r", "B"},
		{"\x1b]11;rgb:0000/0000/0000\x07x\r", "T"},
		{"\x1bP1$r0m\x1b\\\r", "B"},         // DCS answer
		{"\x1b[200~ls\x1b[201~\r", "T"},     // bracketed paste
		{"\x1b[200~  \x1b[201~\r", "B"},     // …of blanks
		{"\x1b[I\x1b[O\r", "B"},             // focus
		{"\x1b[<0;3;4M\x1b[<0;3;4m\r", "B"}, // SGR mouse
		{"\x1b[1;5A\r", "U"},                // Ctrl-Up
		{"\x1b[3~\r", "U"},                  // Delete
		{"é\x7f\r", "B"},                    // one character of two bytes
		{"日本\x7f\r", "T"},
		{"\x1b]0;x\rls\r", "UT"}, // a "string" with a line end was typed
		{"\x1b[12\rls\r", "UT"},  // a sequence cut by Enter
		{"a\rb\r\r", "TTB"},
		{"partial", ""}, // no Enter: no line
	}
	for _, c := range cases {
		got := kinds(typed(c.in))
		if got != c.want {
			t.Errorf("%q: lines %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTypedLongLine(t *testing.T) {
	long := strings.Repeat("a", 3000)
	if got := kinds(typed(long + "\r")); got != "T" {
		t.Errorf("long line: %q", got)
	}
	if got := kinds(typed(strings.Repeat(" ", maxLine+10) + "\r")); got != "U" {
		t.Errorf("long blank line: %q (its end was not followed)", got)
	}
	// Erased back under the bound, what is left was followed.
	if got := kinds(typed(strings.Repeat(" ", maxLine+10) + strings.Repeat("\x7f", 20) + "\r")); got != "B" {
		t.Errorf("long blank line erased back: %q", got)
	}
	if got := kinds(typed("x" + strings.Repeat(" ", maxLine+10) + strings.Repeat("\x7f", maxLine+10) + "\r")); got != "T" {
		t.Errorf("x and blanks erased: %q", got)
	}
	if got := kinds(typed("x" + strings.Repeat(" ", maxLine+10) + "\x17\r")); got != "U" {
		t.Errorf("Ctrl-W past the bound: %q", got)
	}
	// A sequence too long to be a key or an answer.
	if got := kinds(typed("\x1b[" + strings.Repeat("1;", 40) + "R\r")); got != "U" {
		t.Errorf("long CSI: %q", got)
	}
}

// TestTypedPrompt: the line a prompt follows, and what waits after it.
func TestTypedPrompt(t *testing.T) {
	tp := typed("\r", "false\r")
	if l, ok := tp.Prompt(); !ok || l.Kind != Blank {
		t.Fatalf("first: %v %v", l, ok)
	}
	if l, ok := tp.Prompt(); !ok || l.Kind != Text || l.At != 2 {
		t.Fatalf("second: %+v %v", l, ok)
	}
	if _, ok := tp.Prompt(); ok {
		t.Fatal("a prompt drawn again found a line")
	}
	// A command's input: let go at its prompt.
	tp = typed("cat\r", "hello\r", "\r")
	if l, ok := tp.Prompt(); !ok || l.Kind != Text || tp.Queued() != 0 {
		t.Fatalf("cat: %v %v, %d queued", l, ok, tp.Queued())
	}
	// Blank lines typed ahead are read one a prompt.
	tp = typed("\r\r\rtrue\r")
	for i, want := range []LineKind{Blank, Blank, Blank, Text} {
		if l, ok := tp.Prompt(); !ok || l.Kind != want {
			t.Fatalf("prompt %d: %v %v", i, l, ok)
		}
	}
	// Unknown lines let the rest go too (they may have run a command).
	tp = typed("\x1b[A\r\r")
	if l, ok := tp.Prompt(); !ok || l.Kind != Unknown || tp.Queued() != 0 {
		t.Fatalf("unknown: %v %v, %d queued", l, ok, tp.Queued())
	}
	// The queue is bounded: more lines merge into the last as Unknown.
	tp = typed(strings.Repeat("\r", MaxQueued+5))
	if tp.Queued() != MaxQueued || tp.queue[MaxQueued-1].Kind != Unknown || tp.queue[MaxQueued-2].Kind != Blank {
		t.Fatalf("bounded: %d queued, last %v", tp.Queued(), tp.queue[len(tp.queue)-1])
	}
}

// TestTypedSplitAnywhere: however the input is cut, the lines are the same.
func TestTypedSplitAnywhere(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := rapid.SliceOfN(rapid.SampledFrom([]byte("a \x7f\x15\x17\x03\r\n\x1b[]O;1R~20\x07\\é\t")), 0, 80).Draw(t, "in")
		whole := kinds(typed(string(in)))
		var chunks []string
		rest := in
		for len(rest) > 0 {
			k := rapid.IntRange(1, len(rest)).Draw(t, "cut")
			chunks = append(chunks, string(rest[:k]))
			rest = rest[k:]
		}
		if got := kinds(typed(chunks...)); got != whole {
			t.Fatalf("%q in %d chunks: %q, whole %q", in, len(chunks), got, whole)
		}
	})
}
