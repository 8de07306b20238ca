package core

// Resize changes the screen size, clamped to 1..1000 in each direction.
// Soft-wrapped lines on the main screen (scrollback included) are re-wrapped
// to the new width; the alternate screen is cropped or padded.
func (t *Terminal) Resize(cols, rows int) {
	cols, rows = clampCells(clamp(cols, 1, maxDim), clamp(rows, 1, maxDim))
	if cols == t.cols && rows == t.rows {
		return
	}
	onAlt := t.cur == t.alt
	// The main screen's cursor: the live one, or the one 1049 will restore.
	mx, my := t.x, t.y
	if onAlt {
		mx, my = t.saved[0].x, t.saved[0].y
	}
	mwrap := t.wrapNext && !onAlt
	nmx, nmy, npend := t.reflowMain(cols, rows, clamp(mx, 0, t.cols-1), clamp(my, 0, t.rows-1), mwrap)
	t.alt = t.cropScreen(t.alt, cols, rows)

	oldCols := t.cols
	t.cols, t.rows = cols, rows
	if onAlt {
		t.cur = t.alt
		t.saved[0].x, t.saved[0].y = nmx, nmy
		t.x = clamp(t.x, 0, cols-1)
		t.y = clamp(t.y, 0, rows-1)
	} else {
		t.cur = t.main
		t.x, t.y = nmx, nmy
	}
	if !onAlt && t.saved[1].valid {
		t.saved[1].x = clamp(t.saved[1].x, 0, cols-1)
		t.saved[1].y = clamp(t.saved[1].y, 0, rows-1)
	}
	if onAlt {
		t.wrapNext = false
	} else {
		t.wrapNext = npend
	}
	t.top, t.bot = 0, rows-1
	t.resetTabs(min(oldCols, cols))
}

func (t *Terminal) cropScreen(s *screen, cols, rows int) *screen {
	n := newScreen(cols, rows, cell(0))
	for y := 0; y < rows && y < s.rows(); y++ {
		src := s.line(y)
		dst := n.line(y)
		copy(dst.cells, src.cells)
		if cols < s.cols {
			t.fixWide(dst.cells, cols, cols)
			if dst.cells[cols-1].flags()&cellWide != 0 {
				dst.cells[cols-1] = mkCell(0, dst.cells[cols-1].style(), 0)
			}
		} else {
			dst.wrapped = src.wrapped
		}
		dst.recount()
	}
	return n
}

// reflowMain rebuilds the main screen at the new size, re-wrapping logical
// lines, and returns the new cursor position and whether a wrap is pending.
//
// Like libvterm, the screen keeps showing the same text from its top row
// unless the cursor would fall off the bottom; a taller screen pulls lines
// back from the scrollback.
func (t *Terminal) reflowMain(cols, rows, cx, cy int, wrapNext bool) (int, int, bool) {
	old := t.main
	t.noCompact, t.reflowCells = true, cols*rows
	defer func() { t.noCompact, t.reflowCells = false, 0 }()
	// Logical lines: scrollback first, then screen rows down to the cursor or
	// the last non-blank row.
	last := cy
	for y := old.rows() - 1; y > cy; y-- {
		if reflowEnd(old.row(y)) > 0 || old.line(y).wrapped {
			last = y
			break
		}
	}
	// The scrollback's lines go one logical line at a time into a new
	// scrollback, each old line dropped once decoded (its block going to
	// the new one), so a reflow holds about one scrollback, never its lines
	// as cells. Their last rows wait in out, as many as the screen grows
	// by, since a taller screen may show them; old lines soft-wrapped onto
	// the screen are joined with it below.
	ns := scrollback{max: t.sb.max}
	grow := max(0, rows-old.rows())
	var out []prow
	emit := func(cells []cell, wrapped bool) {
		if grow > 0 {
			if len(out) < grow {
				out = append(out, prow{cells: append(reserve([]cell(nil), len(cells)), cells...), wrapped: wrapped})
				return
			}
			r := out[0]
			l := line{cells: r.cells, used: len(r.cells), wrapped: r.wrapped}
			ns.push(t, &l)
			copy(out, out[1:])
			out[grow-1] = prow{cells: append(reserve(r.cells[:0], len(cells)), cells...), wrapped: wrapped}
			return
		}
		l := line{cells: cells, used: len(cells), wrapped: wrapped}
		ns.push(t, &l)
	}
	keep := 0 // the newest old lines, wrapped onto the screen
	for keep < t.sb.n && t.sb.at(t.sb.n-1-keep).wrapped {
		keep++
	}
	var cur []cell
	for t.sb.n > keep {
		l := t.sb.at(0)
		cur = t.decodeLine(cur, &l)
		if !l.wrapped {
			wrapRows(cur, cols, func(pos, end int) { emit(cur[pos:end], end < len(cur)) })
			cur = cur[:0]
		}
		t.sb.dropOldest(1)
		if ns.spare == nil {
			ns.spare, t.sb.spare = t.sb.spare, nil
		}
	}
	for i := 0; i < t.sb.n; i++ {
		l := t.sb.at(i)
		cur = t.decodeLine(cur, &l)
	}
	cur = append(reserve([]cell(nil), len(cur)), cur...)

	// The rest: screen rows down to the cursor or the last non-blank row.
	var logical [][]cell
	curLine, curOff := -1, 0
	topLine, topOff := -1, 0
	for y := 0; y <= last; y++ {
		l := old.line(y)
		cs := l.cells
		wrapped := l.wrapped && y < last
		if !wrapped {
			cs = cs[:reflowEnd(cs)]
		}
		if y == 0 {
			topLine, topOff = len(logical), len(cur)
		}
		if y == cy {
			curLine, curOff = len(logical), len(cur)+cx
			if wrapNext {
				curOff++
			}
		}
		cur = append(reserve(cur, len(cs)), cs...)
		if !wrapped {
			logical = append(logical, cur)
			cur = nil
		}
	}

	// Re-wrap, after the rows from the scrollback that wait.
	ncx, ncy, topRow := 0, 0, 0
	for li, lc := range logical {
		start := len(out)
		wrapRows(lc, cols, func(pos, end int) {
			if li == curLine && curOff >= pos && curOff < end {
				ncx, ncy = curOff-pos, len(out)
			}
			if li == topLine && topOff >= pos && topOff < end {
				topRow = len(out)
			}
			out = append(out, prow{cells: lc[pos:end], wrapped: end < len(lc)})
		})
		lastStart := 0
		if len(out)-1 > start {
			lastStart = len(lc) - len(out[len(out)-1].cells)
		}
		if li == curLine && curOff >= len(lc) {
			// The cursor is past the text: keep it on the line's last row.
			ncy, ncx = len(out)-1, curOff-lastStart
		}
		if li == topLine && topOff >= len(lc) {
			topRow = len(out) - 1
		}
	}
	pending := false
	if ncx >= cols {
		ncx, pending = cols-1, wrapNext
	}
	first := topRow
	if grow > 0 {
		first = max(0, first-grow)
	}
	// Keep the bottom of the text visible, pushing top lines into the
	// scrollback, but never lose the cursor.
	if len(out)-1 >= first+rows {
		first = len(out) - rows
	}
	if ncy < first {
		first = ncy
	}
	if ns.max > 0 {
		for _, r := range out[:first] {
			l := line{cells: r.cells, used: len(r.cells), wrapped: r.wrapped}
			ns.push(t, &l)
		}
	}
	t.sb = ns
	n := newScreen(cols, rows, cell(0))
	for y := 0; y < rows && first+y < len(out); y++ {
		r := out[first+y]
		copy(n.line(y).cells, r.cells)
		n.line(y).recount()
		n.line(y).wrapped = r.wrapped
	}
	t.main = n
	return clamp(ncx, 0, cols-1), clamp(ncy-first, 0, rows-1), pending
}

// prow is a row of a reflow.
type prow struct {
	cells   []cell
	wrapped bool
}

// wrapRows splits a logical line into rows of at most cols cells, never
// splitting a wide character, calling f with each row's cell range; an
// empty line is one empty row.
func wrapRows(lc []cell, cols int, f func(pos, end int)) {
	if len(lc) == 0 {
		f(0, 0)
	}
	for pos := 0; pos < len(lc); {
		n := min(cols, len(lc)-pos)
		// Never split a wide character.
		if n > 1 && n < len(lc)-pos && lc[pos+n-1].flags()&cellWide != 0 {
			n--
		}
		end := pos + n
		if n == 1 && lc[pos].flags()&cellWide != 0 {
			// A one-column screen cannot show a wide character.
			lc[pos] = mkCell(0, lc[pos].style(), 0)
			if pos+1 < len(lc) {
				lc[pos+1] = mkCell(0, lc[pos+1].style(), 0)
			}
		}
		f(pos, end)
		pos = end
	}
}

// reflowEnd is the length of a row without its trailing never-written cells.
func reflowEnd(cells []cell) int {
	n := len(cells)
	for n > 0 && cells[n-1] == cell(0) {
		n--
	}
	return n
}

func padCells(cs []cell, n int) []cell {
	for len(cs) < n {
		cs = append(reserve(cs, n-len(cs)), cell(0))
	}
	return cs
}

// decodeLine appends the cells of a scrollback line to cs, a soft-wrapped
// line padded to the screen's width.
func (t *Terminal) decodeLine(cs []cell, l *sbLine) []cell {
	base := len(cs)
	l.runs(func(text []byte, s style) {
		si := t.intern(s)
		for i := 0; i < len(text); {
			r, n := decodeRune(text[i:])
			i += n
			w := runeWidth(r)
			if w == 0 {
				if len(cs) > base {
					k := len(cs) - 1
					if cs[k].flags()&cellSpacer != 0 && k > base {
						k--
					}
					var buf [64]byte
					g := appendRune(t.cellText(buf[:0], cs[k]), r)
					if idx, ok := t.graphemeIndex(g); ok {
						cs[k] = mkCell(idx, cs[k].style(), cs[k].flags()|cellGrapheme)
					}
				}
				continue
			}
			if w == 2 {
				cs = append(reserve(cs, 2), mkCell(uint32(r), si, cellWide), mkCell(0, si, cellSpacer))
			} else {
				cs = append(reserve(cs, 1), mkCell(uint32(r), si, 0))
			}
		}
	})
	if l.wrapped {
		cs = padCells(cs, base+t.cols)
	}
	return cs
}

func decodeRune(b []byte) (rune, int) {
	c := b[0]
	switch {
	case c < 0x80:
		return rune(c), 1
	case c < 0xE0 && len(b) >= 2:
		return rune(c&0x1F)<<6 | rune(b[1]&0x3F), 2
	case c < 0xF0 && len(b) >= 3:
		return rune(c&0x0F)<<12 | rune(b[1]&0x3F)<<6 | rune(b[2]&0x3F), 3
	case len(b) >= 4:
		return rune(c&0x07)<<18 | rune(b[1]&0x3F)<<12 | rune(b[2]&0x3F)<<6 | rune(b[3]&0x3F), 4
	}
	return 0xFFFD, 1
}
