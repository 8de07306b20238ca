package proto

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// The wasm word-at-a-time scan must agree with bytes.IndexByte; run this
// test under GOOS=wasip1 too (make test does, through the plugin harness).
func TestIndexByteMatchesBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.SliceOfN(rapid.SampledFrom([]byte{0, 'a', '\r', 0x7f, 0x80, 0xfe, 0xff}), 0, 70).Draw(t, "p")
		c := rapid.SampledFrom([]byte{0, '\r', 0xff, 0x80}).Draw(t, "c")
		if got, want := indexByte(p, c), bytes.IndexByte(p, c); got != want {
			t.Fatalf("indexByte(%x, %x) = %d, want %d", p, c, got, want)
		}
	})
}

// indexSpecial must find the first IAC or (nvt) NUL after a CR, exactly;
// the wasm build's word-at-a-time version carries CRs across words.
func TestIndexSpecial(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.SliceOfN(rapid.SampledFrom([]byte{0, 'a', '\r', '\r', 0x7f, 0x80, 0x8d, 0xfe, 0xff}), 0, 100).Draw(t, "p")
		nvt := rapid.Bool().Draw(t, "nvt")
		want := -1
		for i, b := range p {
			if b == IAC || nvt && b == 0 && i > 0 && p[i-1] == '\r' {
				want = i
				break
			}
		}
		if got := indexSpecial(p, nvt); got != want {
			t.Fatalf("indexSpecial(%x, %v) = %d, want %d", p, nvt, got, want)
		}
	})
}
