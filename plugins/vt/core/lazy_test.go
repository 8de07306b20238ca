package core

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestLazyRows: random output over rows that scrolled in plain (kept as
// text only, see line) gives the same cells, rows and scrollback as the
// same output with no row ever lazy, written byte by byte or in pieces.
func TestLazyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	pieces := []string{"hello world", "ab", " ", "x", "\r\n", "\r\n", "\r\n", "\n", "\r", "\b", "\t", "漢字", "é", "e\u0301",
		"\x1b[31m", "\x1b[0m", "\x1b[44m", "\x1b[K", "\x1b[1K", "\x1b[2K", "\x1b[J", "\x1b[2J", "\x1b[3@", "\x1b[2P", "\x1b[2X",
		"\x1b[L", "\x1b[M", "\x1b[3;5H", "\x1b[6;1H", "\x1b[10G", "\x1b[S", "\x1b[T", "\x1b[2;5r", "\x1b[r", "\x1b[4h", "\x1b[4l",
		"\x1b[?7l", "\x1b[?7h", "\x1bD", "\x1bM", "\x1b7", "\x1b8", "\x1b[?1049h", "\x1b[?1049l", "\x1b#8", "\x1b[2b",
		"0123456789012345678901234",
		// Styled and wide text, which a lazy row keeps as a stream row.
		"\x1b[38;2;1;2;3m", "\x1b[1;4;42m", "\x1b[22;24;39;49m", "\x1b[7m", "\x1b[4m", "\x1b[33m", "テスト", "→→→", "😀", "漢字仮名交文章",
		"\x1b[32mlorem ipsum\x1b[0m ", "\x1b[1;45mdolor \x1b[38;5;200m日本語 sit\x1b[0m\r\n", "  ", "\x1b[44m   \x1b[0m"}
	for trial := 0; trial < 3000; trial++ {
		var b []byte
		for range 1 + rng.IntN(60) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		lazy := New(Options{Cols: 20, Rows: 6, Scrollback: 50})
		eager := New(Options{Cols: 20, Rows: 6, Scrollback: 50})
		eager.eagerRows = true
		resizeAt := -1
		if rng.IntN(4) == 0 {
			resizeAt = rng.IntN(len(b))
		}
		// Byte by byte, or in pieces (a character whole, as printUTF8
		// takes it), alike for both.
		whole := rng.IntN(2) == 0
		for i := 0; i < len(b); {
			n := 1
			if whole {
				n = min(len(b)-i, 1+rng.IntN(40))
				if resizeAt >= i {
					n = min(n, resizeAt+1-i)
				}
			}
			lazy.Write(b[i : i+n])
			eager.Write(b[i : i+n])
			i += n
			if i-1 == resizeAt {
				lazy.Resize(13, 8)
				eager.Resize(13, 8)
			}
		}
		if got, want := dump(lazy), dump(eager); got != want {
			t.Fatalf("%q:\nlazy:\n%s\neager:\n%s", b, got, want)
		}
	}
}

// TestLazyRowsColour: coloured and wide text scrolling past, over rows that
// scrolled in plain, gives the same rows and scrollback as with no row
// ever lazy: mostly text, SGR and new lines, in pieces of up to 64 bytes
// (so that printUTF8 takes whole characters), now and then a cursor move,
// an erase, a mark or autowrap off, and styles that show on blanks (which
// the scrollback keeps) or do not (which it trims).
func TestLazyRowsColour(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 26))
	pieces := []string{"lorem", "ipsum ", "dolor sit ", " ", "  ", "x", "\r\n", "\r\n", "\r\n", "\r\n", "\n", "\r",
		"漢字", "テスト", "日本語中文", "😀", "é", "→→→→→→→→", "\x1b[31m", "\x1b[0m", "\x1b[m", "\x1b[44m", "\x1b[7m", "\x1b[4m",
		"\x1b[38;2;1;2;3m", "\x1b[1;4;42m", "\x1b[22;24;39;49m", "\x1b[38;5;200m", "\x1b[33m", "\x1b[49m",
		"\x1b[32mlorem ipsum\x1b[0m ", "\x1b[1;45mdolor \x1b[38;5;200m日本語 sit\x1b[0m\r\n",
		// Now and then: the cells are needed.
		"e\u0301", "\x1b[K", "\x1b[2C", "\x1b[3D", "\x1b[5G", "\x1b[A", "\b", "\t", "\x1b[?7l", "\x1b[?7h", "\x1b[3;5r", "\x1b[r"}
	weights := make([]int, 0, len(pieces)*4)
	for i := range pieces {
		n := 4
		if i >= len(pieces)-12 {
			n = 1
		}
		for range n {
			weights = append(weights, i)
		}
	}
	for trial := 0; trial < 1500; trial++ {
		var b []byte
		for range 1 + rng.IntN(200) {
			b = append(b, pieces[weights[rng.IntN(len(weights))]]...)
		}
		cols := 8 + rng.IntN(20)
		lazy := New(Options{Cols: cols, Rows: 4, Scrollback: 40})
		eager := New(Options{Cols: cols, Rows: 4, Scrollback: 40})
		eager.eagerRows = true
		for i := 0; i < len(b); {
			n := min(len(b)-i, 1+rng.IntN(64))
			lazy.Write(b[i : i+n])
			eager.Write(b[i : i+n])
			i += n
		}
		if got, want := dump(lazy), dump(eager); got != want {
			t.Fatalf("%q:\nlazy:\n%s\neager:\n%s", b, got, want)
		}
	}
}

func dump(t *Terminal) string {
	var s []byte
	for r := 0; r < t.rows; r++ {
		s = t.AppendRowANSI(s, r)
		s = fmt.Appendf(s, "|%v\n", t.RowWrapped(r))
		for c := 0; c < t.cols; c++ {
			s = fmt.Appendf(s, "%+v", t.Cell(r, c))
		}
		s = append(s, '\n')
	}
	for i := 0; i < t.ScrollbackLen(); i++ {
		s = t.AppendScrollbackANSI(s, i)
		s = fmt.Appendf(s, "|%v\n", t.ScrollbackWrapped(i))
	}
	y, x, v := t.Cursor()
	return string(fmt.Appendf(s, "cursor %d %d %v", y, x, v))
}
