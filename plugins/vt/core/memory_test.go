package core

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestScrollbackMemory checks the compact scrollback: 10000 lines of 80
// columns of text must cost about a megabyte, not 10000*80 cells.
func TestScrollbackMemory(t *testing.T) {
	term := New(Options{Cols: 80, Rows: 24})
	line := strings.Repeat("0123456789", 8)
	plain := []byte(strings.Repeat(line+"\r\n", 10100))
	term.Write(plain)
	if term.ScrollbackLen() != 10000 {
		t.Fatalf("scrollback %d lines", term.ScrollbackLen())
	}
	bytes := term.scrollbackBytes()
	t.Logf("scrollback: 10000 plain lines of 80 columns take %d bytes (%.1f per line)", bytes, float64(bytes)/10000)
	if bytes > 1_300_000 {
		t.Errorf("scrollback uses %d bytes for 10000 lines", bytes)
	}
	// Coloured lines carry their style runs.
	colored := []byte(strings.Repeat("\x1b[31m"+line[:40]+"\x1b[32m"+line[40:]+"\x1b[0m\r\n", 10100))
	term.Write(colored)
	bytes = term.scrollbackBytes()
	t.Logf("scrollback: 10000 two-colour lines take %d bytes (%.1f per line)", bytes, float64(bytes)/10000)
}

// scrollbackBytes is the memory the scrollback holds.
func (t *Terminal) scrollbackBytes() int { return t.sb.bytes() }

// TestStyleTableCompaction writes more distinct truecolor pens than the
// style table holds: the table is compacted and what is on screen keeps its
// colours.
func TestStyleTableCompaction(t *testing.T) {
	term := New(Options{Cols: 40, Rows: 10, Scrollback: 100})
	var b strings.Builder
	for i := 0; i < 70000; i++ {
		b.WriteString("\x1b[38;2;")
		b.WriteString(strconv.Itoa(i >> 16))
		b.WriteByte(';')
		b.WriteString(strconv.Itoa(i >> 8 & 255))
		b.WriteByte(';')
		b.WriteString(strconv.Itoa(i & 255))
		b.WriteString("mx")
	}
	b.WriteString("\x1b[H\x1b[38;2;1;2;3mA\x1b[48;5;9mB")
	term.Write([]byte(b.String()))
	checkInvariants(t, term)
	if c := term.Cell(0, 0); c.Text != "A" || c.FG != RGBColor(1, 2, 3) {
		t.Errorf("cell 0,0 %+v", c)
	}
	if c := term.Cell(0, 1); c.BG != IndexedColor(9) || c.FG != RGBColor(1, 2, 3) {
		t.Errorf("cell 0,1 %+v", c)
	}
	// The last cell written before the home keeps its own colour.
	last := 69999
	row, col := (70000-1)/40%10, (70000-1)%40
	_ = row
	if c := term.Cell(9, col); c.FG != RGBColor(uint8(last>>16), uint8(last>>8), uint8(last)) {
		t.Errorf("last cell %+v", c)
	}
	if len(term.styles) > maxStyles {
		t.Errorf("style table %d entries", len(term.styles))
	}
	term.Resize(30, 12)
	checkInvariants(t, term)
}

// TestScrollbackHeap logs the Go heap one terminal takes with 10,000 lines
// of 80 digits in its scrollback (what BenchmarkPTYSessionMemory fills), and
// the garbage produced while filling it.
func TestScrollbackHeap(t *testing.T) {
	var data []byte
	for i := 1; i <= 10100; i++ {
		data = fmt.Appendf(data, "%080d\r\n", i)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	term := New(Options{Cols: 80, Rows: 24})
	for off := 0; off < len(data); off += 32 << 10 {
		term.Write(data[off:min(off+32<<10, len(data))])
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	live := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	t.Logf("one 80x24 terminal with %d scrollback lines: %d bytes of heap live (%.1f per line), %d bytes allocated in all",
		term.ScrollbackLen(), live, float64(live)/float64(term.ScrollbackLen()), m1.TotalAlloc-m0.TotalAlloc)
	runtime.KeepAlive(term)
	runtime.KeepAlive(data)
}
