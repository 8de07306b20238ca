package marks

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

func scanAll(chunks [][]byte) ([]byte, []Mark) {
	var s Scanner
	var out []byte
	var ms []Mark
	for _, c := range chunks {
		out, ms = s.Scan(out, ms, c)
	}
	return s.Flush(out), ms
}

func TestScan(t *testing.T) {
	cases := []struct {
		in    string
		out   string
		marks string // kind:at[:code] list
	}{
		{"plain", "plain", ""},
		{"\x1b]133;A\x1b\\$ \x1b]133;B\x1b\\", "$ ", "A:0 B:2"},
		{"out\r\n\x1b]133;D;1\x07\x1b]133;A\x07", "out\r\n", "D:5:1 A:5"},
		{"\x1b]133;D;-2\x1b\\", "", "D:0:-2"},
		{"\x1b]133;D\x1b\\", "", "D:0"},
		{"\x1b]133;S;127\x07\x1b]133;A\x07# \x1b]133;B\x07", "# ", "S:0:127 A:0 B:2"},
		{"\x1b]133;S\x07", "", "S:0"},
		{"\x1b]133;C;cmdline=ls\x1b\\x", "x", "C:0"},
		{"\x1b]0;title\x07", "\x1b]0;title\x07", ""},     // other OSC untouched
		{"\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m", ""}, // CSI untouched
		{"\x1b]133;A\x1b[1m", "\x1b]133;A\x1b[1m", ""},   // interrupted: not a mark
		{"\x1b]133;A\x18x", "\x1b]133;A\x18x", ""},       // CAN: not a mark
		{"\x1b]133", "\x1b]133", ""},                     // cut off at the end: given back
		{"\x1b\x1b]133;B\x07", "\x1b", "B:1"},
	}
	for _, c := range cases {
		out, ms := scanAll([][]byte{[]byte(c.in)})
		if string(out) != c.out || fmtMarks(ms) != c.marks {
			t.Errorf("Scan(%q) = %q, %q; want %q, %q", c.in, out, fmtMarks(ms), c.out, c.marks)
		}
	}
}

func TestLongStringIsNotAMark(t *testing.T) {
	in := "\x1b]133;A" + string(bytes.Repeat([]byte("x"), 200)) + "\x07"
	out, ms := scanAll([][]byte{[]byte(in)})
	if string(out) != in || len(ms) != 0 {
		t.Fatalf("got %q %v", out, ms)
	}
	// Held bytes are bounded whatever arrives.
	var s Scanner
	var dst []byte
	for i := 0; i < 100; i++ {
		dst, _ = s.Scan(dst[:0], nil, []byte("\x1b]133;"+string(bytes.Repeat([]byte("y"), 50))))
		if s.Held() > MaxMark {
			t.Fatalf("held %d bytes", s.Held())
		}
	}
}

func fmtMarks(ms []Mark) string {
	var b bytes.Buffer
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%c:%d", m.Kind, m.At)
		if m.HasCode {
			fmt.Fprintf(&b, ":%d", m.Code)
		}
	}
	return b.String()
}

// TestSplitAnywhere: however a stream is cut into chunks, the output and
// the marks are those of the whole stream.
func TestSplitAnywhere(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var stream, want []byte
		var wantMarks []Mark
		n := rapid.IntRange(0, 20).Draw(t, "pieces")
		for i := 0; i < n; i++ {
			switch rapid.IntRange(0, 4).Draw(t, "piece") {
			case 0:
				// Text never holds ']', so it cannot spell a mark, but it
				// has ESC, digits and terminators to confuse the scanner.
				text := rapid.SliceOfN(rapid.SampledFrom([]byte("ab\x1b[13;\x07\\\r\n")), 0, 20).Draw(t, "text")
				stream = append(stream, text...)
				want = append(want, text...)
			default:
				kind := rapid.SampledFrom([]byte("ABCDS")).Draw(t, "kind")
				st := rapid.SampledFrom([]string{"\x07", "\x1b\\"}).Draw(t, "st")
				m := Mark{Kind: kind, At: len(want)}
				body := string(kind)
				if kind == 'D' || kind == 'S' {
					m.Code, m.HasCode = rapid.IntRange(0, 255).Draw(t, "code"), true
					body += fmt.Sprintf(";%d", m.Code)
				}
				stream = append(stream, "\x1b]133;"+body+st...)
				wantMarks = append(wantMarks, m)
			}
		}
		var chunks [][]byte
		rest := stream
		for len(rest) > 0 {
			k := rapid.IntRange(1, len(rest)).Draw(t, "cut")
			chunks = append(chunks, rest[:k])
			rest = rest[k:]
		}
		out, ms := scanAll(chunks)
		if !bytes.Equal(out, want) || fmtMarks(ms) != fmtMarks(wantMarks) {
			t.Fatalf("stream %q in %d chunks:\n got %q %s\nwant %q %s", stream, len(chunks), out, fmtMarks(ms), want, fmtMarks(wantMarks))
		}
	})
}

func FuzzScan(f *testing.F) {
	f.Add([]byte("\x1b]133;A\x07$ \x1b]133;B\x07"), 3)
	f.Fuzz(func(t *testing.T, p []byte, cut int) {
		whole, wm := scanAll([][]byte{p})
		if cut < 0 || cut > len(p) {
			cut = len(p) / 2
		}
		split, sm := scanAll([][]byte{p[:cut], p[cut:]})
		if !bytes.Equal(whole, split) || fmtMarks(wm) != fmtMarks(sm) {
			t.Fatalf("split at %d differs: %q %s vs %q %s", cut, whole, fmtMarks(wm), split, fmtMarks(sm))
		}
		if len(whole) > len(p) {
			t.Fatalf("output longer than input")
		}
	})
}
