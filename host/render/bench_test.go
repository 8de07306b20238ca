package render

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkPNG draws an 80x24 coloured shell screen (`ls -l` with GNU ls's
// colours, a prompt, the cursor) as a PNG, the glyph cache warm as in a
// running server. Reported: p50 and p90 of one picture, its size, and the
// size of the same screen as SVG (BENCHMARKS.md "Pictures").
func BenchmarkPNG(b *testing.B) {
	r, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	s, _ := lsScreen()
	p, err := r.PNG(s)
	if err != nil {
		b.Fatal(err)
	}
	svg, err := r.SVG(s)
	if err != nil {
		b.Fatal(err)
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if p, err = r.PNG(s); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(len(p)), "png-bytes")
	b.ReportMetric(float64(len(svg)), "svg-bytes")
}

// BenchmarkPNGDense draws a screen full of text (every cell written,
// five styles), the worst case for the PNG's size.
func BenchmarkPNGDense(b *testing.B) {
	r, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	s := &Screen{Cols: 80, Rows: 24, Styles: lsStyles}
	words := strings.Fields("the quick brown fox jumps over the lazy dog while termhost renders every cell of a busy screen 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	for row := 0; row < 24; row++ {
		var t strings.Builder
		for i := row; t.Len() < 80; i++ {
			t.WriteString(words[i%len(words)] + " ")
		}
		s.Cells = append(s.Cells, []Run{{S: row % 5, T: t.String()[:80]}})
	}
	var p []byte
	for range b.N {
		if p, err = r.PNG(s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p)), "png-bytes")
}

// BenchmarkSVG draws the same screen as SVG.
func BenchmarkSVG(b *testing.B) {
	r, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	s, _ := lsScreen()
	for range b.N {
		if _, err := r.SVG(s); err != nil {
			b.Fatal(err)
		}
	}
}
