package core

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestLazyRows: random output over rows that scrolled in plain (kept as
// text only, see line) gives the same cells, rows and scrollback as the
// same output with no row ever lazy.
func TestLazyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	pieces := []string{"hello world", "ab", " ", "x", "\r\n", "\r\n", "\r\n", "\n", "\r", "\b", "\t", "漢字", "é", "e\u0301",
		"\x1b[31m", "\x1b[0m", "\x1b[44m", "\x1b[K", "\x1b[1K", "\x1b[2K", "\x1b[J", "\x1b[2J", "\x1b[3@", "\x1b[2P", "\x1b[2X",
		"\x1b[L", "\x1b[M", "\x1b[3;5H", "\x1b[6;1H", "\x1b[10G", "\x1b[S", "\x1b[T", "\x1b[2;5r", "\x1b[r", "\x1b[4h", "\x1b[4l",
		"\x1b[?7l", "\x1b[?7h", "\x1bD", "\x1bM", "\x1b7", "\x1b8", "\x1b[?1049h", "\x1b[?1049l", "\x1b#8", "\x1b[2b",
		"0123456789012345678901234"}
	for trial := 0; trial < 1500; trial++ {
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
		for i := range b {
			lazy.Write(b[i : i+1])
			eager.Write(b[i : i+1])
			if i == resizeAt {
				lazy.Resize(13, 8)
				eager.Resize(13, 8)
			}
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
