package core

import (
	"math/rand/v2"
	"testing"
)

// TestUTF8FastPath compares random text (wide, combining, ASCII, invalid
// and cut sequences, SGR, wrapping, charsets, insert mode) fed in one Write,
// where runs of UTF-8 take printUTF8, with the same bytes fed one at a
// time, where every character goes through utf8Byte and print: the whole
// state must be the same.
func TestUTF8FastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pieces := []string{"a", "b", " ", "é", "漢", "字", "👍", "👍🏽", "e\u0301", "\u0301", "\u200b", "│", "\xe6\xbc", "\xc3", "\xf0\x9f", "\xff", "\xed\xa0\x80",
		"\xc0\xaf", "\xf4\x90\x80\x80", "\r\n", "\r", "\n", "\b", "\x1b[31m", "\x1b[0m", "\x1b[4h", "\x1b[4l", "\x1b(0", "\x1b(B", "\x1bN", "\x1b[?7l", "\x1b[?7h",
		"\x1b[1;19H", "\x1b[3;20H", "\x1b[b", "ab漢", "ｱ"}
	for trial := 0; trial < 4000; trial++ {
		var b []byte
		for range 1 + rng.IntN(40) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		whole := New(Options{Cols: 20, Rows: 6, Scrollback: 10})
		whole.Write(b)
		bytewise := New(Options{Cols: 20, Rows: 6, Scrollback: 10})
		for i := range b {
			bytewise.Write(b[i : i+1])
		}
		g, err1 := whole.MarshalBinary()
		w, err2 := bytewise.MarshalBinary()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if string(g) != string(w) {
			t.Fatalf("%q: state differs from byte by byte:\n%s\n---\n%s", b, render(whole), render(bytewise))
		}
	}
}

// TestStoreASCIIStyled checks the eight-bytes-at-a-time styled store
// against a byte by byte reference, as TestStoreASCII does the plain one.
func TestStoreASCIIStyled(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	st := mkCell(0, 9, 0)
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for v := 0; v < 256; v++ {
				src := make([]byte, n)
				for i := range src {
					src[i] = byte(0x20 + rng.IntN(0x5f))
				}
				src[pos] = byte(v)
				dst := make([]cell, n)
				for i := range dst {
					dst[i] = mkCell(uint32('A'+i), 7, 0)
				}
				want := append([]cell(nil), dst...)
				k := 0
				for k < n && src[k]-0x20 < 0x5f {
					want[k] = st | cell(src[k])
					k++
				}
				if got := storeASCIIStyled(dst, src, st); got != k {
					t.Fatalf("n=%d byte %#x at %d: stored %d, want %d", n, v, pos, got, k)
				}
				for i := range dst {
					if dst[i] != want[i] {
						t.Fatalf("n=%d byte %#x at %d: cell %d is %#x, want %#x", n, v, pos, i, dst[i], want[i])
					}
				}
			}
		}
	}
}
