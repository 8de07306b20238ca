package core

import "testing"

// TestRuneWidth checks the table against the ranges it is built from and a
// few characters whose width tmux users see.
func TestRuneWidth(t *testing.T) {
	slow := func(r rune) int {
		for _, wr := range widthRanges {
			if uint32(r) >= wr.lo && uint32(r) <= wr.hi {
				return int(wr.w)
			}
		}
		return 1
	}
	for r := rune(0x300); r < 0x20000; r++ {
		if got, want := runeWidth(r), slow(r); got != want {
			t.Fatalf("U+%04X: width %d, ranges say %d", r, got, want)
		}
	}
	for _, tc := range []struct {
		r rune
		w int
	}{
		{'a', 1}, {'é', 1}, {'\u0301', 0}, {'\u200b', 0}, {'\u200d', 0}, {'\ufe0f', 0},
		{'漢', 2}, {'한', 2}, {'ア', 2}, {'ｱ', 1}, {'！', 2}, {'😀', 2}, {'👍', 2},
		{'│', 1}, {'→', 1}, {'\u00ad', 1}, {'\u1160', 0}, {0x1F1E6, 1},
	} {
		if got := runeWidth(tc.r); got != tc.w {
			t.Errorf("%U: width %d, want %d", tc.r, got, tc.w)
		}
	}
}
