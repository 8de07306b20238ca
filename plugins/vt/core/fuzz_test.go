package core

import (
	"bytes"
	"fmt"
	"testing"
)

// render is everything a user can see: screen rows with attributes, wrap
// flags, scrollback, cursor, modes and title.
func render(t *Terminal) string {
	var b bytes.Buffer
	cols, rows := t.Size()
	row, col, vis := t.Cursor()
	fmt.Fprintf(&b, "%dx%d cursor %d,%d %v alt %v modes %+v title %q\n", cols, rows, row, col, vis, t.AltScreen(), t.Modes(), t.Title())
	for r := 0; r < rows; r++ {
		b.Write(t.AppendRowANSI(nil, r))
		fmt.Fprintf(&b, "|%v\n", t.RowWrapped(r))
	}
	for i := 0; i < t.ScrollbackLen(); i++ {
		b.Write(t.AppendScrollbackANSI(nil, i))
		fmt.Fprintf(&b, "|%v\n", t.ScrollbackWrapped(i))
	}
	return b.String()
}

// checkInvariants panics the test if internal invariants fail.
func checkInvariants(tb testing.TB, t *Terminal) {
	tb.Helper()
	cols, rows := t.Size()
	row, col, _ := t.Cursor()
	if row < 0 || row >= rows || col < 0 || col >= cols {
		tb.Fatalf("cursor %d,%d outside %dx%d", row, col, cols, rows)
	}
	if t.top < 0 || t.bot >= rows || t.top > t.bot {
		tb.Fatalf("scroll region %d..%d in %d rows", t.top, t.bot, rows)
	}
	for _, s := range []*screen{t.main, t.alt} {
		if s.rows() != rows || s.cols != cols {
			tb.Fatalf("screen %dx%d, terminal %dx%d", s.cols, s.rows(), cols, rows)
		}
		for y := 0; y < rows; y++ {
			l := s.line(y)
			if len(l.cells) != cols {
				tb.Fatalf("row %d has %d cells, want %d", y, len(l.cells), cols)
			}
			if l.fast {
				for x, c := range l.cells[:l.used] {
					want := byte(' ')
					if c != 0 {
						want = byte(c)
						if c.flags() != 0 || c.style() != 0 || c.r() >= 0x80 {
							tb.Fatalf("row %d: fast row has cell %d = %#x", y, x, uint64(c))
						}
					}
					if l.text[x] != want {
						tb.Fatalf("row %d: fast row text[%d] = %q, cell says %q", y, x, l.text[x], want)
					}
				}
			}
			for x, c := range l.cells {
				if x >= l.used && c != cell(0) {
					tb.Fatalf("row %d: cell %d written past used=%d: %+v", y, x, l.used, c)
				}
				if int(c.style()) >= len(t.styles) {
					tb.Fatalf("row %d col %d: style %d of %d", y, x, c.style(), len(t.styles))
				}
				if c.flags()&cellWide != 0 && (x+1 >= cols || l.cells[x+1].flags()&cellSpacer == 0) {
					tb.Fatalf("row %d col %d: wide cell without spacer", y, x)
				}
				if c.flags()&cellSpacer != 0 && (x == 0 || l.cells[x-1].flags()&cellWide == 0) {
					tb.Fatalf("row %d col %d: spacer without wide cell", y, x)
				}
			}
		}
	}
}

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{
		"hello\r\nworld",
		"\x1b[31;1mred\x1b[0m\x1b[2J\x1b[H",
		"\x1b[?1049h\x1b[10;20r\x1b[5S\x1b[?1049l",
		"漢字e\u0301😀\x1b[3@\x1b[2P",
		"\x1b]0;title\x07\x1b]11;?\x1b\\\x1b[6n\x1b[c",
		"\x1bP$qm\x1b\\\x1b[?2004h\x1b[?1000h\x1b[?1006h",
		"\x1b(0lqk\x1b(B\x1b#8\x1b[4h ab\x1b[4l",
		"\x1b[38:2::1:2:3m\x1b[58;5;3m\x1b[4:3mx",
		"\x1b[99999999;99999999H\x1b[99999@\x1b[99999b",
		"\xff\xfe\xc3\x28\xe2\x82",
	} {
		f.Add([]byte(s), uint16(40), uint8(10), uint16(7))
	}
}

// FuzzTerminal feeds random bytes with a resize at a random point. It must
// never panic, the invariants must hold, and the state must survive a
// MarshalBinary/UnmarshalBinary round trip unchanged.
func FuzzTerminal(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, cols uint16, rows uint8, cut uint16) {
		term := New(Options{Cols: int(cols%200) + 1, Rows: int(rows%60) + 1, Scrollback: 50})
		at := 0
		if len(data) > 0 {
			at = int(cut) % (len(data) + 1)
		}
		term.Write(data[:at])
		checkInvariants(t, term)
		term.Resize(int(cols/3%200)+1, int(rows/2%60)+1)
		checkInvariants(t, term)
		term.Write(data[at:])
		checkInvariants(t, term)
		term.Replies()

		st, err := term.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		other := New(Options{})
		if err := other.UnmarshalBinary(st); err != nil {
			t.Fatalf("unmarshal own state: %v", err)
		}
		if a, b := render(term), render(other); a != b {
			t.Fatalf("round trip changed the render:\n%s\n---\n%s", a, b)
		}
		// Both must go on identically.
		tail := []byte("x\x1b[Ay\r\n漢\x1b[31mz")
		term.Write(tail)
		other.Write(tail)
		if a, b := render(term), render(other); a != b {
			t.Fatalf("diverged after round trip:\n%s\n---\n%s", a, b)
		}
	})
}

// FuzzUnmarshal feeds garbage to UnmarshalBinary: it must fail cleanly or
// produce a terminal that works.
func FuzzUnmarshal(f *testing.F) {
	term := New(Options{Cols: 10, Rows: 3, Scrollback: 5})
	term.Write([]byte("ab\x1b[31m漢\r\n1\r\n2\r\n3\r\n4e\u0301\x1b[?1049h\x1b]0;t\x07\x1b[12"))
	st, _ := term.MarshalBinary()
	f.Add(st)
	f.Add([]byte("THVT\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := New(Options{Cols: 5, Rows: 2})
		if err := n.UnmarshalBinary(data); err != nil {
			checkInvariants(t, n)
			return
		}
		checkInvariants(t, n)
		n.Write([]byte("x\x1b[Ay\r\n漢\x1b[31mz\x1b[2J\x1b[S\x1b[T\x1b[L\x1b[M"))
		n.Resize(7, 4)
		checkInvariants(t, n)
		_ = render(n)
	})
}
