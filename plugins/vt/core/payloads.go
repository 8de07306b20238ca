package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
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

// GhosttyPayloads are the three streams of the comparison with Ghostty's
// core (plugins/vt BenchmarkGhostty), each size bytes, generated the same
// way every time: "plain" is text scrolling past (lines of 0 to 120
// printable ASCII characters, some wrapping at 80 columns, CR LF); "sgr_cjk"
// is coloured text, every few words a new SGR (16-colour, 256-colour,
// truecolour, bold and underline on and off) and a third of the words CJK
// ideographs or kana (two columns each); "redraw" is a full-screen
// program repainting an 80x24 screen: each frame homes the cursor, draws a
// reverse-video title bar, 22 rows of box-drawn, partly coloured content
// each placed with CUP and ended with EL, then a few cells updated in place
// and a status line.
func GhosttyPayloads(size int) map[string][]byte {
	rng := rand.New(rand.NewPCG(19, 1))
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do",
		"eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna", "aliqua", "0x7f3a", "[ok]", "/usr/lib"}
	cjk := []rune("漢字仮名交文章日本語中文测试한국어テストデータ東京大阪電車時間世界平和開発環境端末画面")
	word := func(b []byte) []byte { return append(b, words[rng.IntN(len(words))]...) }
	cjkWord := func(b []byte) []byte {
		for n := 2 + rng.IntN(5); n > 0; n-- {
			b = utf8.AppendRune(b, cjk[rng.IntN(len(cjk))])
		}
		return b
	}
	p := map[string][]byte{}

	b := make([]byte, 0, size+256)
	for len(b) < size {
		n := rng.IntN(121)
		start := len(b)
		for len(b)-start < n {
			b = word(b)
			b = append(b, ' ')
		}
		b = append(b[:start+n], "\r\n"...)
	}
	p["plain"] = b[:size]

	b = make([]byte, 0, size+256)
	for len(b) < size {
		for w := 4 + rng.IntN(8); w > 0; w-- {
			switch rng.IntN(6) {
			case 0:
				b = fmt.Appendf(b, "\x1b[%dm", 30+rng.IntN(8))
			case 1:
				b = fmt.Appendf(b, "\x1b[38;5;%dm", rng.IntN(256))
			case 2:
				b = fmt.Appendf(b, "\x1b[38;2;%d;%d;%dm", rng.IntN(256), rng.IntN(256), rng.IntN(256))
			case 3:
				b = fmt.Appendf(b, "\x1b[1;%dm", 40+rng.IntN(8))
			case 4:
				b = append(b, "\x1b[4m"...)
			default:
				b = append(b, "\x1b[22;24;39;49m"...)
			}
			if rng.IntN(3) == 0 {
				b = cjkWord(b)
			} else {
				b = word(b)
			}
			b = append(b, ' ')
		}
		b = append(b, "\x1b[0m\r\n"...)
	}
	p["sgr_cjk"] = b[:size]

	b = make([]byte, 0, size+4096)
	for frame := 0; len(b) < size; frame++ {
		b = append(b, "\x1b[?25l\x1b[H\x1b[7m"...)
		b = fmt.Appendf(b, " frame %-6d %-60s", frame, "termhost redraw benchmark")
		b = append(b, "\x1b[0m"...)
		for r := 2; r <= 23; r++ {
			b = fmt.Appendf(b, "\x1b[%d;1H│", r)
			if rng.IntN(4) == 0 {
				b = fmt.Appendf(b, "\x1b[%d;1m", 31+rng.IntN(7))
			}
			col := 1
			for col < 70 {
				w := words[rng.IntN(len(words))]
				b = append(b, w...)
				b = append(b, ' ')
				col += len(w) + 1
			}
			b = append(b, "\x1b[0m\x1b[K"...)
			b = fmt.Appendf(b, "\x1b[%d;80H│", r)
		}
		for k := 0; k < 8; k++ {
			b = fmt.Appendf(b, "\x1b[%d;%dH\x1b[33m%3d%%\x1b[0m", 2+rng.IntN(22), 2+rng.IntN(70), rng.IntN(100))
		}
		b = fmt.Appendf(b, "\x1b[24;1H\x1b[44;37m %-78s \x1b[0m\x1b[?25h", words[rng.IntN(len(words))])
	}
	p["redraw"] = b[:size]
	return p
}

// WorstLines is lines lines of cols cells, each cell its own truecolour
// foreground and background and a letter with three combining marks, then
// a reset and CR LF: the output that fills a screen's style and grapheme
// tables and its scrollback fastest (the worst case of a screen's memory,
// for the tests that bound it). seed varies the colours and marks.
func WorstLines(cols, lines, seed int) []byte {
	var b []byte
	for l := range lines {
		for c := range cols {
			v := seed*7919 + l*cols + c
			b = fmt.Appendf(b, "\x1b[38;2;%d;%d;%d;48;2;%d;%d;%dm%c%c%c%c", v&255, v>>8&255, v>>16&255, v*3&255, v>>5&255, seed&255,
				'a'+c%26, 0x300+v%112, 0x300+v/112%112, 0x300+v/12544%112)
		}
		b = append(b, "\x1b[0m\r\n"...)
	}
	return b
}
