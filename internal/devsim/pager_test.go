package devsim

import (
	"strings"
	"testing"
)

// FRR's vty pager counts rows of the window's width: with the endless
// command's long lines, a page ends inside a line; the prompt " --More-- "
// and a NUL come right after the cut, and after a space the erase
// (backspaces, blanks, backspaces), then the rest of the line. The output
// without the pagers is the lines whole. Other personalities page whole
// lines, and q leaves the endless output at once.
func TestPagerCutsLines(t *testing.T) {
	const pager = " --More-- \x00"
	erase := strings.Repeat("\b", 10) + strings.Repeat(" ", 10) + strings.Repeat("\b", 10)
	s := listen(t, Config{Personality: "frr", NoLogin: true, NoBanner: true, PageLines: 7, EndlessCommand: "show endless"})
	c := dial(t, s.Addr(), func(c *tclient) { c.width = 40 })
	c.expect("edge-r1>")
	c.send("show endless\r")
	var out strings.Builder
	cuts := 0
	for page := 0; page < 12; page++ {
		got := c.expect(pager)
		start := erase
		if page == 0 {
			start = "show endless\r\n" // the echo: no row of the page
		}
		got, ok := strings.CutPrefix(got, start)
		if !ok {
			t.Fatalf("page %d does not start with %q: %q", page, start, got)
		}
		got = strings.TrimSuffix(got, pager)
		if !strings.HasSuffix(got, "\r\n") {
			cuts++
		}
		// 7 rows of 40 columns: a row ends with the 40th character or
		// the line's end.
		rows := 0
		for _, l := range strings.SplitAfter(got, "\r\n") {
			rows += len(strings.TrimSuffix(l, "\r\n")) / 40
			if strings.HasSuffix(l, "\r\n") {
				rows++
			}
		}
		if rows != 7 {
			t.Fatalf("page %d has %d rows: %q", page, rows, got)
		}
		out.WriteString(got)
		c.send(" ")
	}
	if cuts == 0 {
		t.Fatal("no page ended inside a line")
	}
	lines := strings.Split(out.String(), "\r\n")
	for i, l := range lines[:len(lines)-1] {
		if l != endlessLine(i) {
			t.Fatalf("line %d: %q, want %q", i, l, endlessLine(i))
		}
	}
	c.expect(pager)
	c.send("q")
	c.expect(erase + "edge-r1>")

	// Whole lines elsewhere.
	s = listen(t, Config{Personality: "cisco_ios", NoLogin: true, NoBanner: true, PageLines: 7, EndlessCommand: "show endless"})
	c = dial(t, s.Addr(), func(c *tclient) { c.width = 40 })
	c.expect("edge-r1>")
	c.send("show endless\r")
	for page := 0; page < 3; page++ {
		got := c.expect("\r\n --More-- ")
		if page == 0 {
			got = strings.TrimPrefix(got, "show endless\r\n")
		}
		if n := strings.Count(got, "\r\n"); n != 7 {
			t.Fatalf("page %d: %d lines: %q", page, n, got)
		}
		c.send(" ")
	}
	c.send("q")
	c.expect("edge-r1>")
}
