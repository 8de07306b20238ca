package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Payloads are 1 MiB test streams in the spirit of alacritty's vtebench
// (plain text, dense SGR, cursor motion, scrolling in a region, unicode),
// generated the same way every time, for benchmarks here and in the vt
// plugin (native against wasm).
func Payloads() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do"}
	line := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()[:n]
	}
	const size = 1 << 20
	p := map[string][]byte{}

	var b strings.Builder
	for b.Len() < size {
		b.WriteString(line(20 + rng.IntN(59)))
		b.WriteString("\r\n")
	}
	p["plain"] = []byte(b.String())

	b.Reset()
	for b.Len() < size {
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&b, "\x1b[%d;%dm%s", 30+rng.IntN(8), 40+rng.IntN(8), line(3+rng.IntN(5)))
			if rng.IntN(4) == 0 {
				fmt.Fprintf(&b, "\x1b[38;2;%d;%d;%dm", rng.IntN(256), rng.IntN(256), rng.IntN(256))
			}
		}
		b.WriteString("\x1b[0m\r\n")
	}
	p["sgr"] = []byte(b.String())

	b.Reset()
	for b.Len() < size {
		fmt.Fprintf(&b, "\x1b[%d;%dH%s", 1+rng.IntN(24), 1+rng.IntN(70), line(1+rng.IntN(8)))
	}
	p["cursor"] = []byte(b.String())

	b.Reset()
	b.WriteString("\x1b[2;23r\x1b[23;1H")
	for b.Len() < size {
		b.WriteString(line(20 + rng.IntN(59)))
		b.WriteString("\r\n")
	}
	p["scroll_region"] = []byte(b.String())

	b.Reset()
	uni := []string{"漢字", "テスト", "e\u0301", "a\u0308\u0304", "😀", "👍🏽", "한국어", "ñ", "→", "│"}
	for b.Len() < size {
		for w := 0; w < 12; w++ {
			b.WriteString(uni[rng.IntN(len(uni))])
			b.WriteByte(' ')
		}
		b.WriteString("\r\n")
	}
	p["unicode"] = []byte(b.String())
	return p
}
