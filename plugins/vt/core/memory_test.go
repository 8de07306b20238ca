package core

import (
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

// scrollbackBytes is the memory the scrollback ring holds.
func (t *Terminal) scrollbackBytes() int {
	const lineHeader = 24 + 4 + 4 // slice header, text length, wrapped flag (padded)
	n := cap(t.sb.lines) * lineHeader
	for i := range t.sb.lines {
		n += cap(t.sb.lines[i].b)
	}
	return n
}

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
