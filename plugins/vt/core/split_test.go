package core

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// splitStreams are inputs where a split can land inside every kind of
// sequence: UTF-8, CSI with parameters and subparameters, OSC, DCS, charset
// designations and the ASCII fast path.
var splitStreams = []string{
	"plain text that wraps around the narrow screen\r\nand more\r\n",
	"\x1b[1;31mred\x1b[0m \x1b[38:2::10:20:30mrgb\x1b[48;5;200mbg\x1b[m\r\n",
	"漢字テスト e\u0301 a\u0308\u0304 😀👍🏽 ñ → │\r\n",
	"\x1b]0;a title\x07\x1b]2;other\x1b\\\x1b]11;?\x07\x1bP$qm\x1b\\\x1b[6n\x1b[>c",
	"\x1b(0lqqk\r\nx  x\r\nmqqj\x1b(B\x1b7\x1b[5;5H*\x1b8\x1b[?1049hALT\x1b[?1049l",
	"\x1b[2;5r\x1b[5H\n\n\n\x1bM\x1bM\x1b[3L\x1b[2M\x1b[4@\x1b[2P\x1b[3X\x1b[r\x1b[4h ins\x1b[4l",
	"\xc3\x28\xe2\x82\xff mixed \xf0\x9f\x98 broken\r\n\x1b[99999;99999H\x1b[;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;1m!",
}

func renderAfter(chunks [][]byte) (string, string) {
	t := New(Options{Cols: 17, Rows: 5, Scrollback: 100})
	var replies []byte
	for _, c := range chunks {
		t.Write(c)
		replies = append(replies, t.Replies()...)
	}
	return render(t), string(replies)
}

// TestSplitAnywhere checks that feeding a stream in one Write or split at
// any position, or into random pieces, gives the same screen and replies.
func TestSplitAnywhere(t *testing.T) {
	streams := append([]string(nil), splitStreams...)
	// The xterm.js fixtures are realistic streams too.
	ins, _ := filepath.Glob(filepath.Join(vtTestdata, "xtermjs-fixtures", "t05*.in"))
	for _, in := range ins {
		if b, err := os.ReadFile(in); err == nil {
			streams = append(streams, string(b))
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for si, s := range streams {
		data := []byte(s)
		want, wantR := renderAfter([][]byte{data})
		if len(data) <= 400 {
			for i := 0; i <= len(data); i++ {
				got, gotR := renderAfter([][]byte{data[:i], data[i:]})
				if got != want || gotR != wantR {
					t.Fatalf("stream %d split at %d differs:\n%s\n---\n%s", si, i, got, want)
				}
			}
		}
		for trial := 0; trial < 20; trial++ {
			var chunks [][]byte
			for rest := data; len(rest) > 0; {
				n := 1 + rng.IntN(min(len(rest), 1+rng.IntN(64)))
				chunks = append(chunks, rest[:n])
				rest = rest[n:]
			}
			got, gotR := renderAfter(chunks)
			if got != want || gotR != wantR {
				t.Fatalf("stream %d random split %d differs", si, trial)
			}
		}
		// Byte at a time.
		var chunks [][]byte
		for i := range data {
			chunks = append(chunks, data[i:i+1])
		}
		if got, gotR := renderAfter(chunks); got != want || gotR != wantR {
			t.Fatalf("stream %d byte by byte differs:\n%s\n---\n%s", si, got, want)
		}
	}
}
