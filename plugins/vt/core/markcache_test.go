package core

import (
	"math/rand/v2"
	"testing"
)

// TestMarkCache: combining marks on random characters, with the grapheme
// table compacted at random points (as a full table or a full style table
// does), give the same screen and scrollback with the cache of combinations
// (markCache) as without it.
func TestMarkCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	bases := []string{"a", "e", "o", "漢", "字", "👍", "x", " "}
	marks := []string{"\u0301", "\u0308", "\u0304", "\u20dd", "\U0001F3FD"}
	other := []string{"\r\n", "\x1b[31m", "\x1b[0m", "\x1b[H", "\x1b[2J", "\x1b[3;4H", "\b", "\x1b[2P"}
	for trial := 0; trial < 800; trial++ {
		cached := New(Options{Cols: 12, Rows: 4, Scrollback: 20})
		ref := New(Options{Cols: 12, Rows: 4, Scrollback: 20})
		ref.noMarkCache = true
		for range 1 + rng.IntN(80) {
			var p string
			switch k := rng.IntN(10); {
			case k < 4:
				p = bases[rng.IntN(len(bases))]
			case k < 8:
				p = marks[rng.IntN(len(marks))]
			case k < 9:
				p = other[rng.IntN(len(other))]
			default:
				cached.compact()
				ref.compact()
				continue
			}
			cached.Write([]byte(p))
			ref.Write([]byte(p))
		}
		if got, want := dump(cached), dump(ref); got != want {
			t.Fatalf("trial %d:\ncached:\n%s\nreference:\n%s", trial, got, want)
		}
	}
}
