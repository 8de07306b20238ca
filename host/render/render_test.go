package render

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/testutil"
)

// line builds a row of runs from (style, text) pairs.
func line(parts ...any) []Run {
	var rs []Run
	for i := 0; i < len(parts); i += 2 {
		rs = append(rs, Run{S: parts[i].(int), T: parts[i+1].(string)})
	}
	return rs
}

const (
	stDir  = 1 // bold blue
	stExe  = 2 // bold green
	stLink = 3 // bold cyan
	stUser = 4 // bold green prompt
)

var lsStyles = [][5]uint32{{}, {1<<24 | 4, 0, 0, attrBold, 0}, {1<<24 | 2, 0, 0, attrBold, 0}, {1<<24 | 6, 0, 0, attrBold, 0}, {1<<24 | 10, 0, 0, attrBold, 0}}

// lsScreen is an 80x24 shell screen after `ls -l` with GNU ls's colours,
// and its plain text.
func lsScreen() (*Screen, string) {
	s := &Screen{Cols: 80, Rows: 24, CursorVisible: true, Styles: lsStyles}
	add := func(rs []Run) { s.Cells = append(s.Cells, rs) }
	add(line(stUser, "user@build", 0, ":~/src/termhost$ ls -l"))
	add(line(0, "total 164"))
	names := []struct {
		mode, size, date, name string
		st                     int
	}{
		{"-rw-r--r--", "11357", "Nov 21 09:14", "BENCHMARKS.md", 0},
		{"-rw-r--r--", "4863", "Nov 25 19:02", "Makefile", 0},
		{"-rw-r--r--", "28190", "Nov 25 18:47", "README.md", 0},
		{"drwxr-xr-x", "4096", "Nov 24 11:30", "cmd", stDir},
		{"-rw-r--r--", "733", "Oct 30 16:05", "credentials.example.json", 0},
		{"drwxr-xr-x", "4096", "Nov 19 08:12", "dialect", stDir},
		{"drwxr-xr-x", "4096", "Nov 25 17:55", "docs", stDir},
		{"-rw-r--r--", "1472", "Nov 25 19:18", "go.mod", 0},
		{"-rw-r--r--", "6410", "Nov 25 19:18", "go.sum", 0},
		{"drwxr-xr-x", "4096", "Nov 25 19:10", "host", stDir},
		{"drwxr-xr-x", "4096", "Nov 22 14:41", "internal", stDir},
		{"drwxr-xr-x", "4096", "Nov 25 16:20", "plugins", stDir},
		{"-rw-r--r--", "912", "Nov 18 10:03", "rules.example.json", 0},
		{"drwxr-xr-x", "4096", "Nov 23 21:16", "sdk", stDir},
		{"-rwxr-xr-x", "20731904", "Nov 25 19:20", "termhost", stExe},
		{"lrwxrwxrwx", "12", "Nov 25 19:21", "th -> termhost", stLink},
	}
	for _, n := range names {
		add(line(0, fmt.Sprintf("%s 1 user staff %8s %s ", n.mode, n.size, n.date), n.st, n.name))
	}
	add(line(stUser, "user@build", 0, ":~/src/termhost$ "))
	var plain []string
	for _, rs := range s.Cells {
		var b strings.Builder
		for _, r := range rs {
			b.WriteString(r.T)
		}
		plain = append(plain, b.String())
	}
	s.Cursor.Row, s.Cursor.Col = len(s.Cells)-1, len(plain[len(plain)-1])
	return s, strings.Join(plain, "\n")
}

// TestPNGLegible: tesseract reads at least 98% of the characters of an
// 80x24 `ls -l` screen from its PNG (character similarity: 1 −
// Levenshtein distance / length, whitespace runs as one blank), and the
// PNG is under 30 KB.
func TestPNGLegible(t *testing.T) {
	testutil.NeedProgram(t, "tesseract")
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s, plain := lsScreen()
	p, err := r.PNG(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) >= 30<<10 {
		t.Errorf("PNG of an 80x24 ls -l screen is %d bytes, want < 30 KB", len(p))
	}
	if again, _ := r.PNG(s); !bytes.Equal(again, p) {
		t.Error("the same screen drawn twice made different bytes")
	}
	got := testutil.OCR(t, p)
	sim := testutil.TextSimilarity(got, plain)
	t.Logf("PNG %d bytes; OCR similarity %.4f", len(p), sim)
	if sim < 0.98 {
		t.Errorf("OCR similarity %.4f < 0.98\nOCR:\n%s\nwant:\n%s", sim, got, plain)
	}
}

// TestPNGDraws: the picture has the screen's size in pixels, the default
// background, and a coloured background, a true-colour foreground and the
// cursor where the screen has them.
func TestPNGDraws(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s := &Screen{Cols: 10, Rows: 3, CursorVisible: true,
		Styles: [][5]uint32{{}, {2<<24 | 0xff8000, 1<<24 | 1, 0, attrUnderline, 0}, {0, 0, 0, attrReverse, 0}}}
	s.Cells = [][]Run{{{S: 1, T: "ab"}, {T: "x"}}, {{W: 2, T: "你"}, {T: "e\u0301", G: true}}, {{S: 2, T: "  "}}}
	s.Cursor.Row, s.Cursor.Col = 1, 5
	p, err := r.PNG(s)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	cw, ch := r.CellSize()
	if b := img.Bounds(); b.Dx() != 10*cw || b.Dy() != 3*ch {
		t.Fatalf("size %v, want %dx%d", b, 10*cw, 3*ch)
	}
	at := func(x, y int) rgb {
		c, g, b, _ := img.At(x, y).RGBA()
		return rgb{uint8(c >> 8), uint8(g >> 8), uint8(b >> 8)}
	}
	if got := at(9*cw+1, 1); got != Dark.BG {
		t.Errorf("blank cell: %v, want the background %v", got, Dark.BG)
	}
	if got := at(1, 1); got != Dark.Palette[1] {
		t.Errorf("cell 0,0 corner: %v, want background colour 1 %v", got, Dark.Palette[1])
	}
	if !has(img, image.Rect(0, 0, 2*cw, ch), rgb{0xff, 0x80, 0}) {
		t.Error("no pixel in the true-colour foreground")
	}
	if got := at(5*cw+1, ch+1); got != Dark.Cursor {
		t.Errorf("cursor cell corner: %v, want the cursor colour %v", got, Dark.Cursor)
	}
	if got := at(1, 2*ch+1); got != Dark.FG {
		t.Errorf("reverse blank: %v, want the foreground %v", got, Dark.FG)
	}
	if !has(img, image.Rect(0, ch, 2*cw, 2*ch), Dark.FG) || !has(img, image.Rect(2*cw, ch, 3*cw, 2*ch), Dark.FG) {
		t.Error("wide or combining character not drawn")
	}
}

func has(img image.Image, r image.Rectangle, want rgb) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, g, b, _ := img.At(x, y).RGBA()
			if (rgb{uint8(c >> 8), uint8(g >> 8), uint8(b >> 8)}) == want {
				return true
			}
		}
	}
	return false
}

// TestPictureBounds: the largest screens are refused or drawn within
// bounds: over MaxSide pixels a side is an error naming the limit, a
// screen over MaxCells is refused, a hostile run (text past the row)
// is clipped.
func TestPictureBounds(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.PNG(&Screen{Cols: 1000, Rows: 32})
	if err == nil || !strings.Contains(err.Error(), "8000 pixels a side") || !strings.Contains(err.Error(), "1000x32") {
		t.Errorf("1000x32: %v", err)
	}
	if _, err := r.SVG(&Screen{Cols: 1000, Rows: 1000}); err == nil || !strings.Contains(err.Error(), "32768") {
		t.Errorf("1000x1000: %v", err)
	}
	s := &Screen{Cols: 4, Rows: 1, Cells: [][]Run{{{T: strings.Repeat("x", 100)}, {W: 2, T: "你你"}}, {{T: "extra row"}}}}
	if _, err := r.PNG(s); err != nil {
		t.Error(err)
	}
}

// TestSVG: the SVG has the size, escapes text, and carries colours,
// bold, underline and the grid's text positions.
func TestSVG(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s := &Screen{Cols: 20, Rows: 2, Styles: [][5]uint32{{}, {2<<24 | 0x102030, 0, 0, attrBold | attrUnderline, 0}}}
	s.Cells = [][]Run{{{T: "a<b&c "}, {S: 1, T: "bold"}, {T: "  x y"}}, {{W: 2, T: "你好"}}}
	b, err := r.SVG(s)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	cw, _ := r.CellSize()
	for _, want := range []string{fmt.Sprintf(`width="%d"`, 20*cw), `fill="#e5e5e5"`, "white-space:pre", ">a&lt;b&amp;c</text>", "a&lt;b&amp;c", `fill="#102030"`, `font-weight="bold"`, `text-decoration="underline"`, ">你好</text>", fmt.Sprintf(`textLength="%d"`, 4*cw),
		// Viewers may collapse blanks: text after two starts at its own column.
		fmt.Sprintf(`<text x="%d" y="16" textLength="%d" lengthAdjust="spacingAndGlyphs">x y</text>`, 12*cw, 3*cw)} {
		if !strings.Contains(out, want) {
			t.Errorf("SVG lacks %s:\n%s", want, out)
		}
	}
}
