package record

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapeRef is appendEscaped as it was before the word-at-a-time copy
// (plain words skipped, then one byte at a time, each run appended when
// an escape ends it; its word test is plain8, the same test as before):
// the reference the new one must equal byte for byte.
func escapeRef(b []byte, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plain8(binary.LittleEndian.Uint64(s[i:])) == hi8 {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// jsonString is how encoding/json writes s (valid UTF-8) inside quotes,
// with the spellings appendEscaped differs in taken back: it writes \b
// and \f as \u0008 and \u000c, and U+2028 and U+2029 as they are (JSON
// allows both; encoding/json escapes the last two for JavaScript).
func jsonString(t testing.TB, s []byte) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(s)); err != nil {
		t.Fatal(err)
	}
	q := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	q = q[1 : len(q)-1]
	var out []byte
	for i := 0; i < len(q); i++ {
		if q[i] != '\\' {
			out = append(out, q[i])
			continue
		}
		switch {
		case q[i+1] == 'b':
			out = append(out, `\u0008`...)
		case q[i+1] == 'f':
			out = append(out, `\u000c`...)
		case bytes.HasPrefix(q[i:], []byte(`\u2028`)):
			out = append(out, "\u2028"...)
			i += 4
		case bytes.HasPrefix(q[i:], []byte(`\u2029`)):
			out = append(out, "\u2029"...)
			i += 4
		default:
			out = append(out, q[i], q[i+1])
		}
		i++
	}
	return out
}

// checkEscape checks appendEscaped on s, after a prefix already in the
// buffer: equal to the reference byte for byte, valid JSON that decodes
// to s with each invalid byte as U+FFFD, and for valid UTF-8 what
// encoding/json writes.
func checkEscape(t testing.TB, s []byte) {
	t.Helper()
	for _, prefix := range []string{"", "[0.1, \"o\", \""} {
		got := appendEscaped([]byte(prefix), s)
		if want := escapeRef([]byte(prefix), s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, want %q (the reference)", s, got, want)
		}
		got = got[len(prefix):]
		var back string
		if err := json.Unmarshal(append(append([]byte{'"'}, got...), '"'), &back); err != nil {
			t.Fatalf("%q: %q is not a JSON string: %v", s, got, err)
		}
		if want := validEach(s); back != want {
			t.Fatalf("%q: decodes to %q, want %q", s, back, want)
		}
		if utf8.Valid(s) {
			if want := jsonString(t, s); !bytes.Equal(got, want) {
				t.Fatalf("%q: got %q, encoding/json writes %q", s, got, want)
			}
		}
	}
}

// validEach is s with each byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD.
func validEach(s []byte) string {
	var b []byte
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		b = utf8.AppendRune(b, r)
		s = s[size:]
	}
	return string(b)
}

// Every byte value at every position of a run of plain text, across the
// word boundaries of the copy; and a character cut or whole around them.
func TestEscapeEveryByteEveryPlace(t *testing.T) {
	plain := []byte("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN")
	for n := range 40 {
		for at := range n + 1 {
			for c := range 256 {
				s := append(append(append([]byte{}, plain[:at]...), byte(c)), plain[at:n]...)
				checkEscape(t, s)
			}
			for _, r := range []string{"é", "€", "😀", "\u2028", "€"[:2], "😀"[:3], "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"} {
				s := append(append(append([]byte{}, plain[:at]...), r...), plain[at:n]...)
				checkEscape(t, s)
			}
		}
	}
}

// Random inputs: plain text with special bytes, UTF-8 and invalid bytes
// mixed in at random densities, from empty to a few KiB; some all
// control characters (the output six times the input, past the room
// reserved at first).
func TestEscapeRandom(t *testing.T) {
	seed := uint64(7)
	rnd := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int(seed>>33) % n
	}
	pieces := []string{"\r\n", "\"", "\\", "\t", "\x1b[0m", "é", "€", "😀", "\u2028", "\x7f", "\x00", "\x08", "\x0c", "\xff", "\x80", "€"[:2], "\xed\xa0\x80"}
	for iter := range 3000 {
		n := rnd(300)
		if iter%50 == 0 {
			n = rnd(8000)
		}
		density := 1 + rnd(40)
		var s []byte
		for len(s) < n {
			switch {
			case iter%97 == 0:
				s = append(s, byte(rnd(32)))
			case rnd(density) == 0:
				s = append(s, pieces[rnd(len(pieces))]...)
			case rnd(200) == 0:
				s = append(s, byte(rnd(256)))
			default:
				s = append(s, byte(0x20+rnd(0x5f)))
			}
		}
		checkEscape(t, s)
	}
}

// FuzzEscape: appendEscaped equals the reference byte for byte, is valid
// JSON, and is what encoding/json writes for valid UTF-8 (go test -fuzz
// FuzzEscape ./host/record/ to search further than the seeds).
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "the quick brown fox\r\n", "\"\\\x00\x1f\x7f", "héllo € 😀 \xff\xfe", "\u2028\u2029", "0123456789abcdef\x1b[1;31mred\x1b[0m\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) { checkEscape(t, s) })
}

func BenchmarkEscapeRef(b *testing.B) {
	p := bytes.Repeat([]byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 2)[:78]+"\r\n"), 400)
	var out []byte
	b.SetBytes(int64(len(p)))
	defer cpuRate(b, len(p))()
	for b.Loop() {
		out = escapeRef(out[:0], p)
	}
}
