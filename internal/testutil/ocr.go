package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// OCR reads a PNG with tesseract (Debian's tesseract-ocr; skipped when
// missing, failed under CI) as one block of text (--psm 6).
func OCR(t testing.TB, png []byte) string {
	t.Helper()
	bin := NeedProgram(t, "tesseract")
	in := filepath.Join(t.TempDir(), "screen.png")
	if err := os.WriteFile(in, png, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, in, "stdout", "--psm", "6").Output()
	if err != nil {
		t.Fatalf("tesseract: %v", err)
	}
	return string(out)
}

// TextSimilarity is 1 − Levenshtein(got, want)/len(want) over runes, with
// each run of whitespace as one blank and empty lines dropped (OCR does
// not keep a screen's columns).
func TextSimilarity(got, want string) float64 {
	g, w := []rune(squeeze(got)), []rune(squeeze(want))
	if len(w) == 0 {
		if len(g) == 0 {
			return 1
		}
		return 0
	}
	prev, cur := make([]int, len(w)+1), make([]int, len(w)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(g); i++ {
		cur[0] = i
		for j := 1; j <= len(w); j++ {
			cost := 1
			if g[i-1] == w[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(w)])/float64(len(w))
}

func squeeze(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
