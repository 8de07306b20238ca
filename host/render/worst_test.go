package render

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// worstScreen is the largest screen (MaxCells cells, 256x128) with every
// cell its own true-colour pair and its own character with a combining
// mark: no palette fits, no glyph is cached.
func worstScreen() *Screen {
	s := &Screen{Cols: 256, Rows: 128, CursorVisible: true, Styles: [][5]uint32{{}}}
	for r := 0; r < s.Rows; r++ {
		var runs []Run
		for c := 0; c < s.Cols; c++ {
			v := uint32(r*s.Cols + c)
			s.Styles = append(s.Styles, [5]uint32{2<<24 | v*2654435761&0xffffff, 2<<24 | v*40503&0xffffff, 0, attrUnderline | attrBold, 3})
			runs = append(runs, Run{S: len(s.Styles) - 1, G: true, T: fmt.Sprintf("%c\u0301", rune(0x100+int(v)%0x2000))})
		}
		s.Cells = append(s.Cells, runs)
	}
	return s
}

// TestPictureWorstScreen: the worst screen is drawn as PNG and SVG in
// bounded time and memory (a hijacked agent may ask for it in a loop).
func TestPictureWorstScreen(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s := worstScreen()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	p, err := r.PNG(s)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("worst PNG: %d bytes in %v, %.1f MB allocated", len(p), took, float64(alloc)/1e6)
	if took > 5*time.Second*slowdown || alloc > 200<<20 {
		t.Errorf("worst PNG took %v and allocated %d bytes: want under 5 s and 200 MB", took, alloc)
	}
	start = time.Now()
	svg, err := r.SVG(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worst SVG: %d bytes in %v", len(svg), time.Since(start))
}
