package record

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendEscaped appends s as the inside of a JSON string: quotes,
// backslashes and control characters escaped (\n, \r, \t by name, the
// others as \u00XX), invalid UTF-8 as U+FFFD (`\ufffd`), everything else
// as it is.
//
// Plain ASCII (0x20–0x7f but for the quote and the backslash) is copied
// eight bytes at a time: each word is stored to the output whole, then
// checked (SWAR); only the bytes from the first that needs escaping on
// are taken back and handled one by one. The output is sized once for the
// whole input plus slack, so the copy needs no bounds or capacity check
// per word.
func appendEscaped(b []byte, s []byte) []byte {
	const slack = 16 // room past the input's length: one word, one escape
	j := len(b)
	out := slices.Grow(b, len(s)+slack)
	out = out[:cap(out)]
	i := 0
outer:
	for {
		// out has room for what is left of s, one to one, plus slack.
		for i+16 <= len(s) {
			w0 := binary.LittleEndian.Uint64(s[i:])
			w1 := binary.LittleEndian.Uint64(s[i+8:])
			binary.LittleEndian.PutUint64(out[j:], w0)
			binary.LittleEndian.PutUint64(out[j+8:], w1)
			p0, p1 := plain8(w0), plain8(w1)
			if p0&p1 != hi8 {
				k := bits.TrailingZeros64(p0^hi8) >> 3
				if p0 == hi8 {
					k = 8 + bits.TrailingZeros64(p1^hi8)>>3
				}
				i, j = i+k, j+k
				goto escape
			}
			i, j = i+16, j+16
		}
		if i+8 <= len(s) {
			w := binary.LittleEndian.Uint64(s[i:])
			binary.LittleEndian.PutUint64(out[j:], w)
			if p := plain8(w); p != hi8 {
				k := bits.TrailingZeros64(p^hi8) >> 3
				i, j = i+k, j+k
				goto escape
			}
			i, j = i+8, j+8
		}
		for i < len(s) && plainByte(s[i]) {
			out[j] = s[i]
			i, j = i+1, j+1
		}
		if i >= len(s) {
			return out[:j]
		}
	escape:
		// s[i] is not plain ASCII: it and the special bytes right after it
		// are written one by one.
		for i < len(s) {
			// An escape takes one byte and gives at most six: keep the
			// room the word copy counts on.
			if len(out)-j < len(s)-i+slack {
				out = slices.Grow(out[:j], len(s)-i+slack)
				out = out[:cap(out)]
			}
			c := s[i]
			switch e := escapes[c]; e {
			case 0: // plain: back to the copy
				continue outer
			case 'u':
				copy(out[j:], `\u00`)
				out[j+4], out[j+5] = hexDigits[c>>4], hexDigits[c&0xf]
				i, j = i+1, j+6
			case utf8.RuneSelf: // from 0x80: UTF-8
				r, size := utf8.DecodeRune(s[i:])
				if r == utf8.RuneError && size == 1 {
					j += copy(out[j:], `\ufffd`)
					i++
					continue
				}
				j += copy(out[j:j+size], s[i:i+size])
				i += size
			default:
				out[j], out[j+1] = '\\', e
				i, j = i+1, j+2
			}
		}
		return out[:j]
	}
}

// escapes says how each byte is written: 0 as it is (plainByte), 'u' as
// \u00XX, utf8.RuneSelf as part of a UTF-8 sequence (or U+FFFD when not
// one), else as a backslash and this letter.
var escapes = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = 'u'
	}
	t['\n'], t['\r'], t['\t'] = 'n', 'r', 't'
	t['"'], t['\\'] = '"', '\\'
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = utf8.RuneSelf
	}
	return t
}()

// plainByte: c is copied as it is (printable ASCII but for the quote and
// the backslash, or DEL).
func plainByte(c byte) bool {
	return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\'
}

const lo8, hi8 = 0x0101010101010101, 0x8080808080808080

// plain8 sets the high bit of each byte of w that is plainByte, and no
// other bit: the arithmetic is on the low seven bits of each byte, where
// no sum carries into the next byte, so each byte's answer is exact.
func plain8(w uint64) uint64 {
	w7 := w &^ hi8
	ge20 := w7 + lo8*(0x80-0x20)         // high bit: low seven bits >= 0x20
	notQ := (w7 ^ lo8*'"') + lo8*0x7f    // high bit: not the quote
	notB := (w7 ^ lo8*'\\') + lo8*0x7f   // high bit: not the backslash
	return ge20 & notQ & notB &^ w & hi8 // and below 0x80
}
