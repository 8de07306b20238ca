package core

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestStoreASCII checks the eight-bytes-at-a-time store against a byte by
// byte reference: every byte value at every position of runs of every
// length up to 24, over cells and text that already hold something (which
// must survive past the run).
func TestStoreASCII(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for v := 0; v < 256; v++ {
				src := make([]byte, n)
				for i := range src {
					src[i] = byte(0x20 + rng.IntN(0x5f))
				}
				src[pos] = byte(v)
				dst := make([]cell, n)
				text := make([]byte, n)
				for i := range dst {
					dst[i] = mkCell(uint32('A'+i), 7, 0)
					text[i] = byte('a' + i)
				}
				wantDst := append([]cell(nil), dst...)
				wantText := append([]byte(nil), text...)
				want := 0
				for want < n && src[want]-0x20 < 0x5f {
					wantDst[want] = cell(src[want])
					wantText[want] = src[want]
					want++
				}
				got := storeASCII(dst, text, src)
				if got != want {
					t.Fatalf("n=%d byte %#x at %d: stored %d, want %d", n, v, pos, got, want)
				}
				for i := range dst {
					if dst[i] != wantDst[i] || text[i] != wantText[i] {
						t.Fatalf("n=%d byte %#x at %d: cell %d is %#x/%q, want %#x/%q", n, v, pos, i, dst[i], text[i], wantDst[i], wantText[i])
					}
				}
			}
		}
	}
}

// TestSwarNonPrintable checks the eight-byte test against the byte test for
// every byte value in every position, among printable and random
// neighbours: zero iff all eight are printable, and the lowest mark on the
// first that is not.
func TestSwarNonPrintable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for pos := 0; pos < 8; pos++ {
		for v := 0; v < 256; v++ {
			for trial := 0; trial < 16; trial++ {
				var b [8]byte
				for i := range b {
					if trial < 8 || i < pos {
						b[i] = byte(0x20 + rng.IntN(0x5f))
					} else {
						b[i] = byte(rng.IntN(256))
					}
				}
				b[pos] = byte(v)
				var x uint64
				first := -1
				for i := 7; i >= 0; i-- {
					x = x<<8 | uint64(b[i])
				}
				for i := range b {
					if b[i]-0x20 >= 0x5f {
						first = i
						break
					}
				}
				m := swarNonPrintable(x)
				if first < 0 {
					if m != 0 {
						t.Fatalf("% x: mask %#x for printable bytes", b, m)
					}
					continue
				}
				if bits.TrailingZeros64(m) != 8*first+7 {
					t.Fatalf("% x: mask %#x, first non-printable at %d", b, m, first)
				}
			}
		}
	}
}

// TestCSIFastPath compares random control sequences fed in one Write
// (where whole CSIs take the one-pass path) with the same bytes fed one at
// a time (always the state machine): the whole state, parser included,
// must be the same after every sequence, and so must the replies.
func TestCSIFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pieces := []string{"0", "1", "2", "5", "7", "9", "12", "38", "48", "65535", "99999", ";", ";", ";", ":", "?", ">", "=", "<", " ", "!", "$", "\"", "\x1b", "\r", "\n", "\x07", "\x18", "\x7f", "\xc3\xa9", "x", "\x1b["}
	finals := "mHfABCDEFGJKLMPSTXZ@`abcdeghlnqrsuxt"
	for trial := 0; trial < 3000; trial++ {
		var b []byte
		for range 1 + rng.IntN(6) {
			b = append(b, "\x1b["...)
			for range rng.IntN(12) {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
			if rng.IntN(40) == 0 {
				for range maxParams - 4 + rng.IntN(8) { // around maxParams
					b = append(b, '1', ';')
				}
			}
			b = append(b, finals[rng.IntN(len(finals))])
			if rng.IntN(3) == 0 {
				b = append(b, "ab c"...)
			}
		}
		whole := New(Options{Cols: 20, Rows: 6, Scrollback: 10})
		whole.Write(b)
		bytewise := New(Options{Cols: 20, Rows: 6, Scrollback: 10})
		var replies []byte
		for i := range b {
			bytewise.Write(b[i : i+1])
			replies = append(replies, bytewise.Replies()...)
		}
		if got, want := string(whole.Replies()), string(replies); got != want {
			t.Fatalf("%q: replies %q, byte by byte %q", b, got, want)
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

// TestCSIShortForms: the two-parameter forms csiFast parses with word
// arithmetic (at most three digits each), and their neighbours that it
// must leave to the loop (four digits, three parameters, an intermediate,
// a private marker), give the cursor the state machine gives it.
func TestCSIShortForms(t *testing.T) {
	nums := []string{"", "0", "1", "7", "10", "12", "99", "100", "999", "1000", "1234", "65535", "0001", "007"}
	seps := []string{";", ";;", " ", "?", ":"}
	for _, a := range nums {
		for _, c := range nums {
			for _, sep := range seps {
				for _, fin := range []string{"H", "f", "G", "d", "m", "K"} {
					b := []byte("\x1b[" + a + sep + c + fin + "\x1b[6n")
					if sep == "?" {
						b = []byte("\x1b[?" + a + ";" + c + fin + "\x1b[6n")
					}
					b = append(b, "........"...) // csiFast's 8-byte look-ahead
					whole := New(Options{Cols: 1000, Rows: 3, Scrollback: -1})
					whole.Write(b)
					bytewise := New(Options{Cols: 1000, Rows: 3, Scrollback: -1})
					var replies []byte
					for i := range b {
						bytewise.Write(b[i : i+1])
						replies = append(replies, bytewise.Replies()...)
					}
					if got, want := string(whole.Replies()), string(replies); got != want {
						t.Fatalf("%q: reply %q, byte by byte %q", b, got, want)
					}
					g, _ := whole.MarshalBinary()
					w, _ := bytewise.MarshalBinary()
					if string(g) != string(w) {
						t.Fatalf("%q: state differs from byte by byte", b)
					}
				}
			}
		}
	}
}
