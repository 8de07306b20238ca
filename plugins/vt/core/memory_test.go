package core

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// scrollbackGoal is what a line of 80 columns may cost in the scrollback,
// text and style runs and index together: RATIONALE "VT: scrollback" puts
// 10,000 plain lines at about 0.86 MB (90 bytes a line); a line held as a
// slice took 121, as cells 80 times a cell. A PTY session's whole budget
// is 2 MiB (BENCHMARKS.md, BenchmarkPTYSessionMemory), so the scrollback
// may take at most 1.3 MB of it, plain or in two colours.
const scrollbackGoal = 130

// TestScrollbackMemory checks the compact scrollback: 10000 lines of 80
// columns of text must cost about a megabyte, not 10000*80 cells, and
// lines in two colours (two style runs each) not much more.
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
	if bytes > scrollbackGoal*10000 {
		t.Errorf("scrollback uses %d bytes for 10000 plain lines (%.1f per line), more than %d a line", bytes, float64(bytes)/10000, scrollbackGoal)
	}
	// Coloured lines carry their style runs, so fewer than 10000 of them
	// fit in the byte bound (SBMaxBytes): the cost is per line kept.
	colored := []byte(strings.Repeat("\x1b[31m"+line[:40]+"\x1b[32m"+line[40:]+"\x1b[0m\r\n", 10100))
	term.Write(colored)
	n := term.ScrollbackLen()
	if got := string(term.AppendScrollbackText(nil, 0)); got != line {
		t.Fatalf("oldest line %q, want a coloured line's text %q", got, line)
	}
	bytes = term.scrollbackBytes()
	t.Logf("scrollback: %d two-colour lines kept take %d bytes (%.1f per line)", n, bytes, float64(bytes)/float64(n))
	if n < 8000 || bytes > scrollbackGoal*n {
		t.Errorf("scrollback keeps %d two-colour lines in %d bytes (%.1f per line), want at least 8000 at most %d a line", n, bytes, float64(bytes)/float64(n), scrollbackGoal)
	}
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

// TestScrollbackHeap measures the Go heap one terminal takes with 10,000
// lines of 80 digits in its scrollback (what BenchmarkPTYSessionMemory
// fills) and holds it to the scrollback's goal plus the screen, and checks
// that once the scrollback is full, more output allocates nothing: freed
// blocks are reused (RATIONALE "VT: scrollback"). Both are counts of bytes,
// not times; the heap figure is read after a collection, with no other
// test running in this package at the same time (none calls t.Parallel).
func TestScrollbackHeap(t *testing.T) {
	var data []byte
	for i := 1; i <= 10100; i++ {
		data = fmt.Appendf(data, "%080d\r\n", i)
	}
	write := func(term *Terminal) {
		for off := 0; off < len(data); off += 32 << 10 {
			term.Write(data[off:min(off+32<<10, len(data))])
		}
	}
	var m0, m1, m2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	term := New(Options{Cols: 80, Rows: 24})
	write(term)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	live := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	n := term.ScrollbackLen()
	t.Logf("one 80x24 terminal with %d scrollback lines: %d bytes of heap live (%.1f per line), %d bytes allocated in all",
		n, live, float64(live)/float64(n), m1.TotalAlloc-m0.TotalAlloc)
	if n != 10000 {
		t.Fatalf("scrollback %d lines, want 10000", n)
	}
	// The screen itself (80x24 cells, its tables) comes on top of the
	// scrollback; 200 KB covers it several times over.
	if max := int64(scrollbackGoal*10000 + 200_000); live > max {
		t.Errorf("one terminal with 10000 lines of scrollback keeps %d bytes of heap live, want at most %d", live, max)
	}
	// Steady state: the same 10,100 lines again through a full scrollback.
	// Every line evicts one, so the blocks it frees take the new ones. The
	// count is the process's, so the bound leaves room for another
	// goroutine's garbage; blocks not reused would be 0.8 MB.
	runtime.ReadMemStats(&m1)
	write(term)
	runtime.ReadMemStats(&m2)
	if garbage := m2.TotalAlloc - m1.TotalAlloc; garbage > 256<<10 {
		t.Errorf("10100 more lines through a full scrollback allocated %d bytes (%.1f per line), want (almost) none: freed blocks are reused",
			garbage, float64(garbage)/10100)
	} else {
		t.Logf("10100 more lines through a full scrollback allocated %d bytes", garbage)
	}
	runtime.KeepAlive(term)
	runtime.KeepAlive(data)
}
