package core

import (
	"strings"
	"testing"
)

func screenText(t *Terminal) string {
	var b []byte
	_, rows := t.Size()
	for r := 0; r < rows; r++ {
		b = t.AppendRowText(b, r)
		b = append(b, '\n')
	}
	return strings.TrimRight(string(b), "\n")
}

func feed(cols, rows int, in string) *Terminal {
	t := New(Options{Cols: cols, Rows: rows})
	t.Write([]byte(in))
	return t
}

func TestScreenOps(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // rows joined by \n, trailing empty rows trimmed
		row, col int
	}{
		{"print", "abc", "abc", 0, 3},
		{"crlf", "ab\r\ncd", "ab\ncd", 1, 2},
		{"lf keeps column", "ab\ncd", "ab\n  cd", 1, 4},
		{"autowrap pending", "abcdefghij", "abcdefghij", 0, 9},
		{"autowrap wraps", "abcdefghijk", "abcdefghij\nk", 1, 1},
		{"nowrap", "\x1b[?7labcdefghijkl", "abcdefghil", 0, 9},
		{"cup", "\x1b[2;3Hx", "\n  x", 1, 3},
		{"cup clamps", "\x1b[99;99Hx", "\n\n\n         x", 3, 9},
		{"cuu cud cuf cub", "\x1b[3;3H\x1b[Aa\x1b[2Bb\x1b[3Cc\x1b[5Dd", "\n  a\n\n   d   c", 3, 4},
		{"cnl cpl", "\x1b[2;5H\x1b[Ex\x1b[2Fy", "y\n\nx", 0, 1},
		{"cha hpa vpa", "\x1b[5Gx\x1b[3`y\x1b[3dz", "  y x\n\n   z", 2, 4},
		{"hpr vpr", "\x1b[2ax\x1b[2ey", "  x\n\n   y", 2, 4},
		{"ed0", "abc\r\ndef\x1b[1;2H\x1b[J", "a", 0, 1},
		{"ed1", "abc\r\ndef\x1b[2;2H\x1b[1J", "\n  f", 1, 1},
		{"ed2", "abc\r\ndef\x1b[2J", "", 1, 3},
		{"el0", "abcdef\x1b[3G\x1b[K", "ab", 0, 2},
		{"el1", "abcdef\x1b[3G\x1b[1K", "   def", 0, 2},
		{"el2", "abcdef\x1b[2K", "", 0, 6},
		{"ech", "abcdef\x1b[2G\x1b[2X", "a  def", 0, 1},
		{"ich", "abcdef\x1b[2G\x1b[2@", "a  bcdef", 0, 1},
		{"dch", "abcdef\x1b[2G\x1b[2P", "adef", 0, 1},
		{"il", "a\r\nb\r\nc\x1b[2;1H\x1b[L", "a\n\nb\nc", 1, 0},
		{"dl", "a\r\nb\r\nc\x1b[1;1H\x1b[M", "b\nc", 0, 0},
		{"su", "a\r\nb\r\nc\x1b[S", "b\nc", 2, 1},
		{"sd", "a\r\nb\r\nc\x1b[T", "\na\nb\nc", 2, 1},
		{"rep", "ab\x1b[3b", "abbbb", 0, 5},
		{"rep after control does nothing", "a\r\x1b[3b", "a", 0, 0},
		{"decstbm scrolls region", "\x1b[2;3r\x1b[3;1Hx\r\ny\r\nz", "\ny\nz", 2, 1},
		{"ind nel ri", "a\x1bDb\x1bEc\x1bMd", "a\n d\nc", 1, 2},
		{"tabs", "a\tb\x1b[3g\r\x1b[4C\x1bH\r\tc", "a   c   b", 0, 5},
		{"cht cbt", "\x1b[Ia\x1b[Zb", "        b", 0, 9},
		{"decaln", "\x1b#8", "EEEEEEEEEE\nEEEEEEEEEE\nEEEEEEEEEE\nEEEEEEEEEE", 0, 0},
		{"insert mode", "abc\x1b[1G\x1b[4hXY", "XYabc", 0, 2},
		{"lnm", "\x1b[20hab\ncd", "ab\ncd", 1, 2},
		{"origin mode", "\x1b[2;3r\x1b[?6h\x1b[Hx\x1b[9;9Hy", "\nx\n        y", 2, 9},
		{"decsc decrc", "ab\x1b7\x1b[3;3Hx\x1b8y", "aby\n\n  x", 0, 3},
		{"csi s u", "ab\x1b[s\x1b[3;3Hx\x1b[uy", "aby\n\n  x", 0, 3},
		{"alt screen 1049", "main\x1b[?1049halt\x1b[?1049l", "main", 0, 4},
		{"alt screen 47 keeps", "\x1b[?47hx\x1b[?47l\x1b[?47h", "x", 0, 1},
		{"alt screen 1047 clears", "\x1b[?1047hx\x1b[?1047l\x1b[?1047h", "", 0, 1},
		{"dec graphics", "\x1b(0lqk\x1b(Bq", "┌─┐q", 0, 4},
		{"so si", "\x1b)0\x0eq\x0fq", "─q", 0, 2},
		{"wide", "漢字", "漢字", 0, 4},
		{"wide wraps whole", "abcdefghi漢", "abcdefghi\n漢", 1, 2},
		{"combining", "e\u0301x", "e\u0301x", 0, 2},
		{"overwrite half wide", "漢\x1b[2Gx", " x", 0, 2},
		{"invalid utf8", "a\xffb\xc3(", "a\uFFFDb\uFFFD(", 0, 5},
		{"can aborts", "\x1b[3\x18x", "x", 0, 1},
		{"c0 inside csi", "\x1b[2\r;3Hx", "\n  x", 1, 3},
		{"huge params", "\x1b[99999999999999;999999999999H\x1b[99999999@x", "\n\n\n         x", 3, 9},
		{"too many params", "\x1b[" + strings.Repeat("1;", 100) + "31mx", "x", 0, 1},
		{"long osc dropped", "\x1b]0;" + strings.Repeat("a", 10000) + "\x07x", "x", 0, 1},
		{"ris", "abc\x1b[31m\x1bcx", "x", 0, 1},
		{"decstr", "\x1b[4h\x1b[!pab\x1b[1Gx", "xb", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := feed(10, 4, tc.in)
			if got := screenText(term); got != tc.want {
				t.Errorf("screen\n%q\nwant\n%q", got, tc.want)
			}
			row, col, _ := term.Cursor()
			if row != tc.row || col != tc.col {
				t.Errorf("cursor %d,%d want %d,%d", row, col, tc.row, tc.col)
			}
			checkInvariants(t, term)
		})
	}
}

func TestSGR(t *testing.T) {
	tests := []struct {
		in    string
		fg    Color
		bg    Color
		attrs Attrs
		ul    int
	}{
		{"\x1b[1;2;3;4;5;7;8;9m", 0, 0, Bold | Dim | Italic | Underline | Blink | Reverse | Invisible | Strike, 1},
		{"\x1b[1;22m", 0, 0, 0, 0},
		{"\x1b[3;4;5;7;8;9;23;24;25;27;28;29m", 0, 0, 0, 0},
		{"\x1b[31;42m", IndexedColor(1), IndexedColor(2), 0, 0},
		{"\x1b[91;102m", IndexedColor(9), IndexedColor(10), 0, 0},
		{"\x1b[31;42;39;49m", 0, 0, 0, 0},
		{"\x1b[38;5;123;48;5;45m", IndexedColor(123), IndexedColor(45), 0, 0},
		{"\x1b[38:5:123;48:5:45m", IndexedColor(123), IndexedColor(45), 0, 0},
		{"\x1b[38;2;1;2;3;48;2;4;5;6m", RGBColor(1, 2, 3), RGBColor(4, 5, 6), 0, 0},
		{"\x1b[38:2::1:2:3;48:2:4:5:6m", RGBColor(1, 2, 3), RGBColor(4, 5, 6), 0, 0},
		{"\x1b[4:3m", 0, 0, Underline, 3},
		{"\x1b[4:3;4:0m", 0, 0, 0, 0},
		{"\x1b[21m", 0, 0, Underline, 2},
		{"\x1b[31m\x1b[m", 0, 0, 0, 0},
		{"\x1b[38;5m", 0, 0, 0, 0},
		{"\x1b[38;2;300;1;1m", RGBColor(255, 1, 1), 0, 0, 0},
	}
	for _, tc := range tests {
		term := feed(10, 2, tc.in+"x")
		c := term.Cell(0, 0)
		if c.Text != "x" || c.FG != tc.fg || c.BG != tc.bg || c.Attrs != tc.attrs || c.UnderlineStyle != tc.ul {
			t.Errorf("%q: got %+v", tc.in, c)
		}
	}
}

func TestReplies(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\x1b[5n", "\x1b[0n"},
		{"\x1b[3;4H\x1b[6n", "\x1b[3;4R"},
		{"\x1b[2;4r\x1b[?6h\x1b[2;2H\x1b[6n", "\x1b[2;2R"},
		{"\x1b[3;4H\x1b[?6n", "\x1b[?3;4;1R"},
		{"\x1b[c", "\x1b[?62;22c"},
		{"\x1b[0c", "\x1b[?62;22c"},
		{"\x1b[>c", "\x1b[>1;10;0c"},
		{"\x1b[=c", "\x1bP!|00000000\x1b\\"},
		{"\x1b[>0q", "\x1bP>|termhost(1.0)\x1b\\"},
		{"\x1b[?2004h\x1b[?2004$p", "\x1b[?2004;1$y"},
		{"\x1b[?1000$p", "\x1b[?1000;2$y"},
		{"\x1b[?9999$p", "\x1b[?9999;0$y"},
		{"\x1b[4h\x1b[4$p", "\x1b[4;1$y"},
		{"\x1b]10;?\x07", "\x1b]10;rgb:ffff/ffff/ffff\x07"},
		{"\x1b]11;?\x1b\\", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
		{"\x1b]4;1;?\x07", "\x1b]4;1;rgb:cdcd/0000/0000\x07"},
		{"\x1b[18t", "\x1b[8;24;80t"},
		{"\x1b[14t", "\x1b[4;384;640t"},
		{"\x1b[16t", "\x1b[6;16;8t"},
		{"\x1b[?u", "\x1b[?0u"},
		{"\x1b[1;31m\x1bP$qm\x1b\\", "\x1bP1$r0;1;31m\x1b\\"},
		{"\x1b[2;10r\x1bP$qr\x1b\\", "\x1bP1$r2;10r\x1b\\"},
		{"\x1b[4 q\x1bP$q q\x1b\\", "\x1bP1$r4 q\x1b\\"},
		{"\x1bP$qx\x1b\\", "\x1bP0$r\x1b\\"},
		{"\x1bZ", "\x1b[?62;22c"},
	}
	for _, tc := range tests {
		term := feed(80, 24, tc.in)
		if got := string(term.Replies()); got != tc.want {
			t.Errorf("%q: reply %q, want %q", tc.in, got, tc.want)
		}
		if screenText(term) != "" {
			t.Errorf("%q: query shown on screen: %q", tc.in, screenText(term))
		}
		if len(term.Replies()) != 0 {
			t.Errorf("%q: replies not reset", tc.in)
		}
	}
}

func TestModes(t *testing.T) {
	term := feed(80, 24, "\x1b[?1h\x1b=\x1b[?2004h\x1b[4h\x1b[?6h\x1b[?7l\x1b[?1004h\x1b[?1002h\x1b[?1006h\x1b[?25l")
	want := Modes{AppCursor: true, AppKeypad: true, BracketedPaste: true, Insert: true, Origin: true, AutoWrap: false, FocusEvents: true, Mouse: 1002, MouseEncoding: 1006}
	if got := term.Modes(); got != want {
		t.Errorf("modes %+v, want %+v", got, want)
	}
	if _, _, vis := term.Cursor(); vis {
		t.Error("cursor visible after ?25l")
	}
	term.Write([]byte("\x1b[?1l\x1b>\x1b[?2004l\x1b[4l\x1b[?6l\x1b[?7h\x1b[?1004l\x1b[?1002l\x1b[?1006l\x1b[?25h"))
	if got := term.Modes(); got != (Modes{AutoWrap: true}) {
		t.Errorf("modes after reset %+v", got)
	}
	term.Write([]byte("\x1b[?66h\x1b[?9h\x1b[?1015h"))
	if m := term.Modes(); !m.AppKeypad || m.Mouse != 9 || m.MouseEncoding != 1015 {
		t.Errorf("modes %+v", m)
	}
	term.Write([]byte("\x1b]2;hello\x07\x1b]1;icon\x07\x1b]8;;http://x\x07link\x1b]8;;\x07"))
	if term.Title() != "hello" {
		t.Errorf("title %q", term.Title())
	}
	if got := screenText(term); got != "link" {
		t.Errorf("hyperlink text %q", got)
	}
	if term.AltScreen() {
		t.Error("alt")
	}
	term.Write([]byte("\x1b[?1049h"))
	if !term.AltScreen() {
		t.Error("not alt")
	}
}

func TestSelectiveErase(t *testing.T) {
	term := feed(10, 2, "a\x1b[1\"qb\x1b[0\"qc\x1b[?2J\r\nd\x1b[1\"qe\x1b[2\"qf\x1b[?2K")
	if got := screenText(term); got != " b\n e" {
		t.Errorf("got %q", got)
	}
	term.Write([]byte("\x1b[2J"))
	if got := screenText(term); got != "" {
		t.Errorf("ED 2 must ignore protection, got %q", got)
	}
}

func TestRenderANSI(t *testing.T) {
	term := feed(20, 3, "ab\x1b[1;31mcd\x1b[0m  \x1b[7mrev\x1b[0m   \r\n\x1b[44m  \x1b[0m\r\nplain")
	tests := []struct {
		row  int
		want string
	}{
		{0, "ab\x1b[0;1;31mcd\x1b[0m  \x1b[0;7mrev\x1b[0m"},
		{1, "\x1b[0;44m  \x1b[0m"},
		{2, "plain"},
	}
	for _, tc := range tests {
		if got := string(term.AppendRowANSI(nil, tc.row)); got != tc.want {
			t.Errorf("row %d: %q, want %q", tc.row, got, tc.want)
		}
	}
	if got := string(term.AppendRowText(nil, 0)); got != "abcd  rev" {
		t.Errorf("text %q", got)
	}
}

func TestScrollback(t *testing.T) {
	term := New(Options{Cols: 10, Rows: 2, Scrollback: 3})
	term.Write([]byte("l1\r\n\x1b[32ml2\x1b[0m\r\nl3 漢\r\nabcdefghijKL\r\nlast"))
	if n := term.ScrollbackLen(); n != 3 {
		t.Fatalf("scrollback %d lines", n)
	}
	var got []string
	for i := 0; i < term.ScrollbackLen(); i++ {
		got = append(got, string(term.AppendScrollbackText(nil, i)))
	}
	if strings.Join(got, "|") != "l2|l3 漢|abcdefghij" {
		t.Errorf("scrollback %q", got)
	}
	if a := string(term.AppendScrollbackANSI(nil, 0)); a != "\x1b[0;32ml2\x1b[0m" {
		t.Errorf("ansi %q", a)
	}
	if !term.ScrollbackWrapped(2) || term.ScrollbackWrapped(1) {
		t.Error("wrap flags")
	}
	// Alternate screen and scroll regions not starting at the top keep
	// the scrollback untouched.
	term.Write([]byte("\x1b[?1049h\r\n\r\n\r\n\x1b[?1049l"))
	if term.ScrollbackLen() != 3 {
		t.Error("alt screen scrolled into scrollback")
	}
	none := New(Options{Cols: 10, Rows: 2, Scrollback: -1})
	none.Write([]byte("a\r\nb\r\nc\r\n"))
	if none.ScrollbackLen() != 0 {
		t.Error("scrollback disabled but kept lines")
	}
	term.Write([]byte("\x1b[3J"))
	if term.ScrollbackLen() != 0 {
		t.Error("ED 3 kept scrollback")
	}
}

func TestResizeReflow(t *testing.T) {
	term := New(Options{Cols: 10, Rows: 3})
	term.Write([]byte("abcdefghijklmno\r\nxy"))
	if got := screenText(term); got != "abcdefghij\nklmno\nxy" {
		t.Fatalf("before %q", got)
	}
	term.Resize(20, 3)
	if got := screenText(term); got != "abcdefghijklmno\nxy" {
		t.Errorf("wider %q", got)
	}
	if r, c, _ := term.Cursor(); r != 1 || c != 2 {
		t.Errorf("cursor %d,%d", r, c)
	}
	term.Resize(5, 3)
	if got := screenText(term); got != "fghij\nklmno\nxy" {
		t.Errorf("narrower %q", got)
	}
	if term.ScrollbackLen() != 1 || string(term.AppendScrollbackText(nil, 0)) != "abcde" {
		t.Errorf("scrollback after narrowing: %d", term.ScrollbackLen())
	}
	term.Resize(10, 5)
	if got := screenText(term); got != "abcdefghij\nklmno\nxy" {
		t.Errorf("back %q", got)
	}
	for _, sz := range [][2]int{{0, 0}, {-5, 2000}, {5000, 1}} {
		term.Resize(sz[0], sz[1])
		c, r := term.Size()
		if c < 1 || c > 1000 || r < 1 || r > 1000 {
			t.Errorf("size %dx%d after Resize(%d,%d)", c, r, sz[0], sz[1])
		}
		checkInvariants(t, term)
	}
}

func TestDefaults(t *testing.T) {
	term := New(Options{})
	if c, r := term.Size(); c != 80 || r != 24 {
		t.Errorf("default size %dx%d", c, r)
	}
	if term.sb.max != 10000 {
		t.Errorf("default scrollback %d", term.sb.max)
	}
	if c := term.Cell(-1, 5); c.Text != " " {
		t.Errorf("out of range cell %+v", c)
	}
	if got := term.AppendRowText([]byte("x"), 99); string(got) != "x" {
		t.Error("out of range row appended text")
	}
}

func TestWriteAllocs(t *testing.T) {
	term := New(Options{Cols: 80, Rows: 24, Scrollback: 100})
	data := []byte(strings.Repeat("some plain text \x1b[1mbold\x1b[0m and more text\r\n", 200))
	term.Write(data)
	term.Write(data)
	if n := testing.AllocsPerRun(20, func() { term.Write(data) }); n > 0 {
		t.Errorf("%v allocations per Write in steady state", n)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	term := New(Options{Cols: 12, Rows: 4, Scrollback: 10})
	term.Write([]byte("\x1b[1;31mhello\x1b[0m 漢字 e\u0301\r\nmore\r\nlines\r\nhere\r\nand\x1b]0;t\x07\x1b[?1049h\x1b[?2004halt\x1b[2;3r\x1b[38;2;1;2;3"))
	b, err := term.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	other := New(Options{})
	if err := other.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if render(term) != render(other) {
		t.Fatal("render differs")
	}
	// The parser state went along: the unfinished SGR completes.
	for _, x := range []*Terminal{term, other} {
		x.Write([]byte("mX"))
	}
	if render(term) != render(other) || other.Cell(0, 0).FG != RGBColor(1, 2, 3) {
		t.Fatalf("after resuming: %+v", other.Cell(0, 0))
	}
	for i := 0; i < len(b); i += 7 {
		if err := New(Options{}).UnmarshalBinary(b[:i]); err == nil {
			t.Fatalf("truncated state (%d of %d bytes) accepted", i, len(b))
		}
	}
	if err := other.UnmarshalBinary([]byte("garbage")); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestOverwriteWideHalves(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"漢字\x1b[2Gab", " ab "},   // starts on a right half, ends on a left half
		{"漢字\x1b[1Ga", "a 字"},     // ends on a left half: its right half goes
		{"漢字\x1b[2Ga", " a字"},     // starts on a right half
		{"ab漢\x1b[1Gxyz", "xyz "}, // ASCII run ending on a right half
	} {
		term := feed(10, 2, tc.in)
		if got := string(term.AppendRowText(nil, 0)); got != strings.TrimRight(tc.want, " ") {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
		checkInvariants(t, term)
	}
}
