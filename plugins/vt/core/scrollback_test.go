package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// sbModel is what the scrollback should hold: the text and wrap flag of
// every line, oldest first.
type sbModel struct {
	text    []string
	wrapped []bool
}

func checkScrollback(t *testing.T, term *Terminal, want sbModel) {
	t.Helper()
	if term.ScrollbackLen() != len(want.text) {
		t.Fatalf("scrollback has %d lines, want %d", term.ScrollbackLen(), len(want.text))
	}
	for i, w := range want.text {
		if got := string(term.AppendScrollbackText(nil, i)); got != w {
			t.Fatalf("line %d: %q, want %q", i, got, w)
		}
		if got := term.ScrollbackWrapped(i); got != want.wrapped[i] {
			t.Fatalf("line %d: wrapped %v, want %v", i, got, want.wrapped[i])
		}
	}
	checkStorage(t, &term.sb)
}

// checkStorage checks the block ring against the lines it holds: every
// line inside the held range, no block held beyond what the bytes need.
func checkStorage(t *testing.T, s *scrollback) {
	t.Helper()
	if s.n > s.max || s.n > len(s.idx) {
		t.Fatalf("%d lines, max %d, index %d", s.n, s.max, len(s.idx))
	}
	if s.n == 0 {
		if s.head != s.tail {
			t.Fatalf("empty scrollback holds [%d, %d)", s.tail, s.head)
		}
		return
	}
	prev := s.tail
	for i := 0; i < s.n; i++ {
		b, e := s.span(i)
		if b != prev || e < b || e > s.head {
			t.Fatalf("line %d spans [%d, %d), previous ended at %d, head %d", i, b, e, prev, s.head)
		}
		prev = e
	}
	if prev != s.head {
		t.Fatalf("last line ends at %d, head %d", prev, s.head)
	}
	if s.base != s.tail/sbBlock {
		t.Fatalf("first block %d, tail in block %d", s.base, s.tail/sbBlock)
	}
	if need := int((s.head+sbBlock-1)/sbBlock - s.base); len(s.blocks) > need+1 {
		t.Fatalf("%d blocks held for %d bytes from %d", len(s.blocks), s.head-s.tail, s.tail)
	}
}

// TestScrollbackEviction scrolls lines of every length through a small
// scrollback, so lines are evicted and blocks recycled many times, with
// lines spanning block boundaries: the scrollback always holds the newest
// lines, and in steady state scrolling allocates nothing.
func TestScrollbackEviction(t *testing.T) {
	const max = 300
	term := New(Options{Cols: 200, Rows: 5, Scrollback: max})
	rng := rand.New(rand.NewPCG(3, 4))
	var all sbModel
	var out strings.Builder
	for i := 0; i < 3000; i++ {
		n := rng.IntN(420) // up to two wrapped rows and a bit
		s := fmt.Sprintf("%d:", i) + strings.Repeat(string(rune('a'+i%26)), n)
		out.WriteString(s + "\r\n")
		for len(s) > 200 {
			all.text = append(all.text, s[:200])
			all.wrapped = append(all.wrapped, true)
			s = s[200:]
		}
		all.text = append(all.text, s)
		all.wrapped = append(all.wrapped, false)
	}
	term.Write([]byte(out.String()))
	// The screen shows the last 4 rows and the cursor's empty one.
	k := len(all.text) - 4
	checkScrollback(t, term, sbModel{all.text[k-max : k], all.wrapped[k-max : k]})
	if term.sb.head < 20*sbBlock {
		t.Fatalf("only %d bytes went through the scrollback", term.sb.head)
	}
	// Steady state: no allocation.
	line := []byte(strings.Repeat("x", 150) + "\r\n")
	if n := testing.AllocsPerRun(100, func() {
		for range 200 {
			term.Write(line)
		}
	}); n > 0 {
		t.Errorf("%v allocations per 200 lines scrolled", n)
	}
	checkStorage(t, &term.sb)
}

// TestScrollbackLongLines stores lines longer than a block: 1000-column
// rows of characters with combining marks, each cell in its own colour
// (over 20 KiB a line), and reads them back as the screen showed them.
func TestScrollbackLongLines(t *testing.T) {
	term := New(Options{Cols: 1000, Rows: 3, Scrollback: 5})
	var want []string
	for n := 0; n < 9; n++ {
		var b strings.Builder
		b.WriteString("\x1b[H")
		for i := 0; i < 500-n%3; i++ {
			fmt.Fprintf(&b, "\x1b[38;2;%d;%d;%dm%c\x1b[48;5;%dme\u0301\u0302", n, i>>8, i&255, 'a'+rune(i%26), i&255)
		}
		term.Write([]byte(b.String()))
		want = append(want, string(term.AppendRowANSI(nil, 0)))
		term.Write([]byte("\x1b[0m\x1b[S"))
	}
	if term.ScrollbackLen() != 5 {
		t.Fatalf("%d lines", term.ScrollbackLen())
	}
	if l := (term.sb.head - term.sb.tail) / 5; l <= sbBlock {
		t.Fatalf("lines of %d bytes, want more than a block each", l)
	}
	checkStorage(t, &term.sb)
	for i := 0; i < 5; i++ {
		if got := string(term.AppendScrollbackANSI(nil, i)); got != want[4+i] {
			t.Errorf("line %d differs from what the screen showed:\n%.200q\n%.200q", i, got, want[4+i])
		}
	}
	// Reflow decodes them: the colours and marks come back on the screen.
	term.Resize(1000, 8)
	checkInvariants(t, term)
	if got := string(term.AppendRowANSI(nil, 0)); got != want[4] {
		t.Errorf("after a resize, row 0 is not the oldest line:\n%.200q\n%.200q", got, want[4])
	}
}

// TestScrollbackRoundTrip: wide characters, combining marks and styles
// read back from the scrollback as the screen showed them, and survive a
// marshal round trip.
func TestScrollbackRoundTrip(t *testing.T) {
	term := New(Options{Cols: 30, Rows: 4, Scrollback: 1000})
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"漢字", "e\u0301", "😀", "ab", " ", "\x1b[1;31m", "\x1b[0m", "\x1b[4:3;58;5;9m", "\x1b[7m", "\x1b[48;2;1;2;3m", "\x1b[38;5;200m", "x", "\x1b[9m \x1b[29m"}
	var want []string
	for i := 0; i < 1500; i++ {
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2K")
		for n := rng.IntN(30); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		term.Write([]byte(b.String()))
		want = append(want, string(term.AppendRowANSI(nil, 0)))
		term.Write([]byte("\x1b[0m\x1b[S"))
	}
	want = want[len(want)-1000:]
	check := func(term *Terminal) {
		t.Helper()
		if n := term.ScrollbackLen(); n != 1000 {
			t.Fatalf("%d lines", n)
		}
		for i, w := range want {
			if got := string(term.AppendScrollbackANSI(nil, i)); got != w {
				t.Fatalf("line %d:\n%q, the screen showed\n%q", i, got, w)
			}
		}
		checkStorage(t, &term.sb)
	}
	check(term)
	st, err := term.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	other := New(Options{})
	if err := other.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	check(other)
	if render(term) != render(other) {
		t.Fatal("marshal round trip changed the render")
	}
}

// logicalLines joins scrollback and screen rows along their wrap flags,
// trailing empty lines dropped.
func logicalLines(term *Terminal) []string {
	var out []string
	cur := ""
	add := func(text string, wrapped bool) {
		cur += text
		if !wrapped {
			out = append(out, cur)
			cur = ""
		}
	}
	for i := 0; i < term.ScrollbackLen(); i++ {
		add(string(term.AppendScrollbackText(nil, i)), term.ScrollbackWrapped(i))
	}
	_, rows := term.Size()
	for r := 0; r < rows; r++ {
		add(string(term.AppendRowText(nil, r)), term.RowWrapped(r))
	}
	if cur != "" {
		out = append(out, cur)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// TestReflowAfterEviction: the scrollback's oldest lines were evicted in
// the middle of soft-wrapped lines; reflowing to other widths keeps the
// newest logical lines whole, the oldest possibly cut at its start. (Blanks
// are ignored: a wide character that does not fit at the end of a row
// leaves a blank cell there, which reflow keeps.)
func TestReflowAfterEviction(t *testing.T) {
	term := New(Options{Cols: 20, Rows: 6, Scrollback: 40})
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 200; i++ {
		term.Write([]byte(fmt.Sprintf("%d-%s\x1b[3%dm%s\x1b[0m\r\n", i, strings.Repeat("漢", rng.IntN(20)), i%8, strings.Repeat("z", rng.IntN(50)))))
	}
	for _, cols := range []int{13, 37, 1, 20, 80, 7, 20} {
		before := noBlanks(logicalLines(term))
		sb := term.ScrollbackLen()
		term.Resize(cols, 6)
		checkInvariants(t, term)
		checkStorage(t, &term.sb)
		after := noBlanks(logicalLines(term))
		if len(after) == 0 || len(after) > len(before) {
			t.Fatalf("to %d columns: %d logical lines, %d before", cols, len(after), len(before))
		}
		k := len(before) - len(after)
		if !strings.HasSuffix(before[k], after[0]) {
			t.Fatalf("to %d columns: first line %q, was %q", cols, after[0], before[k])
		}
		for i := 1; i < len(after); i++ {
			if cols == 1 {
				// One column cannot show a wide character: it is blanked.
				continue
			}
			if after[i] != before[k+i] {
				t.Fatalf("to %d columns (scrollback %d -> %d): line %d %q, was %q", cols, sb, term.ScrollbackLen(), i, after[i], before[k+i])
			}
		}
	}
}

func noBlanks(ls []string) []string {
	for i := range ls {
		ls[i] = strings.ReplaceAll(ls[i], " ", "")
	}
	return ls
}

// TestScrollbackDropPop: dropOldest and popNewest across block
// boundaries.
func TestScrollbackDropPop(t *testing.T) {
	term := New(Options{Cols: 300, Rows: 2, Scrollback: 500})
	var want sbModel
	for i := 0; i < 400; i++ {
		s := fmt.Sprintf("%d-%s", i, strings.Repeat("q", i%290))
		term.Write([]byte(s + "\r\n"))
		want.text = append(want.text, s)
		want.wrapped = append(want.wrapped, false)
	}
	n := len(want.text) - 1 // the last line is on the screen
	want.text, want.wrapped = want.text[:n], want.wrapped[:n]
	checkScrollback(t, term, want)
	term.sb.dropOldest(150)
	want.text, want.wrapped = want.text[150:], want.wrapped[150:]
	checkScrollback(t, term, want)
	for i := 0; i < 100; i++ {
		l := term.sb.popNewest()
		w := want.text[len(want.text)-1]
		if got := string(l.b[:l.text]); got != w {
			t.Fatalf("pop %d: %q, want %q", i, got, w)
		}
		want.text, want.wrapped = want.text[:len(want.text)-1], want.wrapped[:len(want.wrapped)-1]
		checkScrollback(t, term, want)
	}
	// And it goes on.
	term.Write([]byte("after\r\nmore\r\n"))
	want.text = append(want.text, "399-"+strings.Repeat("q", 399%290), "after")
	want.wrapped = append(want.wrapped, false, false)
	checkScrollback(t, term, want)
	term.sb.dropOldest(term.sb.n)
	checkScrollback(t, term, sbModel{})
	term.Write([]byte("x\r\ny\r\n"))
	checkScrollback(t, term, sbModel{[]string{"more", "x"}, []bool{false, false}})
}

// TestUnmarshalCorruptScrollback: states with damaged scrollback lines
// (flipped, cut, inserted bytes) are refused or give a working terminal,
// never a panic.
func TestUnmarshalCorruptScrollback(t *testing.T) {
	term := New(Options{Cols: 20, Rows: 3, Scrollback: 50})
	term.Write([]byte("plain\r\n\x1b[1;31mred\x1b[0m 漢字 e\u0301\r\n\x1b[7mreverse\x1b[0m" + strings.Repeat("wrapped ", 5) + "\r\n\x1b[38;2;1;2;3m😀\x1b[0m\r\nlast"))
	st, err := term.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	accepted := 0
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), st...)
		// Damage the tail, where the scrollback is, mostly.
		from := len(b) / 2
		if rng.IntN(4) == 0 {
			from = 0
		}
		for n := 1 + rng.IntN(3); n > 0; n-- {
			at := from + rng.IntN(len(b)-from)
			switch rng.IntN(4) {
			case 0:
				b[at] ^= 1 << rng.IntN(8)
			case 1:
				b[at] = byte(rng.IntN(256))
			case 2:
				b = append(b[:at], append([]byte{byte(rng.IntN(256))}, b[at:]...)...)
			case 3:
				b = append(b[:at], b[at+1:]...)
			}
		}
		n := New(Options{Cols: 5, Rows: 2})
		if err := n.UnmarshalBinary(b); err != nil {
			continue
		}
		accepted++
		checkInvariants(t, n)
		checkStorage(t, &n.sb)
		_ = render(n)
		n.Resize(9, 4)
		n.Write([]byte("more\r\n\x1b[3J"))
		checkInvariants(t, n)
	}
	t.Logf("%d of 20000 damaged states accepted (and worked)", accepted)
}

// TestScrollbackReusesBlocks: once the scrollback holds its byte bound,
// coloured lines scrolling in reuse the blocks that evicted lines free
// and allocate none. It evicted for the bound only after writing a line,
// so a line that crossed a block boundary while the oldest line's block
// was about to be freed took a new block, about every other block.
func TestScrollbackReusesBlocks(t *testing.T) {
	data := GhosttyPayloads(2 << 20)["sgr_cjk"]
	term := New(Options{Cols: 80, Rows: 24})
	feed := func() {
		for off := 0; off < len(data); off += 32 << 10 {
			term.Write(data[off:min(off+32<<10, len(data))])
		}
	}
	feed() // fills the scrollback to SBMaxBytes
	s := &term.sb
	if s.head-s.tail < SBMaxBytes-4096 {
		t.Fatalf("the scrollback holds %d bytes, want about %d", s.head-s.tail, SBMaxBytes)
	}
	seen := map[*byte]bool{}
	for _, b := range s.blocks {
		seen[&b[0]] = true
	}
	if s.spare != nil {
		seen[&s.spare[0]] = true
	}
	fresh := 0
	for off := 0; off < len(data); off += 32 << 10 {
		term.Write(data[off:min(off+32<<10, len(data))])
		for _, b := range s.blocks {
			if !seen[&b[0]] {
				seen[&b[0]] = true
				fresh++
			}
		}
	}
	if fresh > 0 {
		t.Errorf("%d new blocks for %d bytes of coloured output through a full scrollback, want none", fresh, len(data))
	}
}
