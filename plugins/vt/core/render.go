package core

// AppendRowText appends the plain text of visible row (0-based), trailing
// blanks trimmed, wide characters once, combining marks kept.
func (t *Terminal) AppendRowText(dst []byte, row int) []byte {
	if row < 0 || row >= t.rows {
		return dst
	}
	cells := t.cur.row(row)
	n := len(cells)
	for n > 0 && t.blankCell(cells[n-1]) {
		n--
	}
	for _, c := range cells[:n] {
		if c.flags()&cellSpacer == 0 {
			dst = t.cellText(dst, c)
		}
	}
	return dst
}

// AppendRowANSI appends visible row with SGR sequences so colours and
// attributes survive. Each row starts from the default pen and ends with
// CSI 0 m if it changed it; trailing default blanks are trimmed.
func (t *Terminal) AppendRowANSI(dst []byte, row int) []byte {
	if row < 0 || row >= t.rows {
		return dst
	}
	cells := t.cur.row(row)
	cells = cells[:t.contentEnd(cells)]
	cur := uint16(0)
	for _, c := range cells {
		if c.flags()&cellSpacer != 0 {
			continue
		}
		if c.style() != cur && t.styles[c.style()] != t.styles[cur] {
			dst = append(dst, "\x1b["...)
			dst = appendSGR(dst, t.styles[c.style()])
			dst = append(dst, 'm')
		}
		cur = c.style()
		dst = t.cellText(dst, c)
	}
	if t.styles[cur] != (style{}) {
		dst = append(dst, "\x1b[0m"...)
	}
	return dst
}

// Cell returns the cell at a visible position; out of range gives a blank.
func (t *Terminal) Cell(row, col int) Cell {
	if row < 0 || row >= t.rows || col < 0 || col >= t.cols {
		return Cell{Text: " ", Width: 1}
	}
	c := t.cur.row(row)[col]
	s := t.styles[c.style()]
	out := Cell{FG: s.fg, BG: s.bg, UnderlineColor: s.ul, Attrs: s.attrs, UnderlineStyle: int(s.ulStyle), Width: 1}
	switch {
	case c.flags()&cellSpacer != 0:
		out.Width = 0
	case c.flags()&cellWide != 0:
		out.Width = 2
		fallthrough
	default:
		var b [64]byte
		out.Text = string(t.cellText(b[:0], c))
	}
	return out
}

// compact drops styles and graphemes no cell or pen uses any more and
// renumbers the rest.
func (t *Terminal) compact() {
	t.newEntries = 0
	smap := keep(&t.scratch.smap, len(t.styles))
	gmap := keep(&t.scratch.gmap, t.graphemes.n())
	for i := range smap {
		smap[i] = -1
	}
	for i := range gmap {
		gmap[i] = -1
	}
	newStyles := append(keep(&t.scratch.styles, len(t.styles)+1)[:0], style{})
	smap[0] = 0
	newGraph := graphTable{
		buf: keep(&t.scratch.graphBuf, len(t.graphemes.buf))[:0],
		end: keep(&t.scratch.graphEnd, t.graphemes.n())[:0],
	}
	mark := func(c *cell) {
		if int(c.style()) < len(smap) {
			if smap[c.style()] < 0 {
				smap[c.style()] = int32(len(newStyles))
				newStyles = append(reserve(newStyles, 1), t.styles[c.style()])
			}
			*c = c.withStyle(uint16(smap[c.style()]))
		} else {
			*c = c.withStyle(0)
		}
		if c.flags()&cellGrapheme != 0 {
			if int(c.r()) < len(gmap) {
				if gmap[c.r()] < 0 {
					gmap[c.r()] = int32(newGraph.n())
					newGraph.add(t.graphemes.at(c.r()))
				}
				*c = mkCell(uint32(gmap[c.r()]), c.style(), c.flags())
			} else {
				*c = mkCell(0, c.style(), c.flags()&^cellGrapheme)
			}
		}
	}
	for _, s := range []*screen{t.main, t.alt} {
		for i := range s.lines {
			if s.lines[i].lazy {
				s.lines[i].materialize()
			}
			cs := s.lines[i].cells
			for j := range cs {
				mark(&cs[j])
			}
		}
	}
	mark(&t.blank)
	// Into the old table's array: it grows back to its size between
	// compactions, and regrowing a fresh one would allocate ~16 times.
	t.styles = append(reserve(t.styles[:0], len(newStyles)), newStyles...)
	t.rebuildStyleSlots()
	t.graphemes.buf = append(reserve(t.graphemes.buf[:0], len(newGraph.buf)), newGraph.buf...)
	t.graphemes.end = append(reserve(t.graphemes.end[:0], len(newGraph.end)), newGraph.end...)
	t.graphGen++
	t.rebuildGraphSlots()
	// Re-intern the pen (it may not be on screen yet).
	pen := t.pen
	if pen.attrs&Underline == 0 {
		pen.ulStyle = 0
	}
	if i, ok := t.styleLookup(pen, styleHash32(pen)); ok {
		t.penIdx = i
	} else if len(t.styles) < t.tableCap() {
		t.penIdx = uint16(len(t.styles))
		t.styles = append(reserve(t.styles, 1), pen)
		t.styleInsert(t.penIdx, styleHash32(pen))
	} else {
		t.penIdx = 0
	}
}
