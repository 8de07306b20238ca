package core

// line is one row of cells. wrapped says the text continues on the next row
// (the row was filled and the cursor wrapped, a soft wrap).
//
// used bounds the written part: every cell from used on is the zero cell
// (never written, default style), so clearing and encoding a mostly empty
// row skips its blank tail.
//
// fast says the row holds only plain ASCII in the default style, with its
// text mirrored in text: every cell before used is the zero cell (text ' ')
// or an ASCII character in style 0 (text that byte). Printing plain text
// keeps the mirror up to date for one extra byte store, and pushing the row
// into the scrollback is then a copy instead of a walk over the cells. Any
// other change to the row clears fast.
type line struct {
	cells   []cell
	text    []byte
	used    int
	fast    bool
	wrapped bool
}

// clear blanks the whole row with c.
func (l *line) clear(c cell) {
	if c == cell(0) {
		fill(l.cells[:l.used], c)
		l.used = 0
		l.fast = true
		return
	}
	fill(l.cells, c)
	l.used = len(l.cells)
	l.fast = false
}

// touch records that cells before end may have been written.
func (l *line) touch(end int) {
	if end > l.used {
		l.used = min(end, len(l.cells))
	}
}

// recount recomputes used from the cells.
func (l *line) recount() {
	l.used = reflowEnd(l.cells)
	l.fast = l.used == 0
}

// screen is a grid of rows kept in a ring: row i is lines[(head+i) % len],
// so scrolling the whole screen moves head instead of copying rows.
type screen struct {
	lines []line
	head  int
	cols  int
	tmp   []line // scratch for rotate
}

func newScreen(cols, rows int, blank cell) *screen {
	s := &screen{lines: make([]line, rows), cols: cols}
	buf := make([]cell, cols*rows)
	for i := range buf {
		buf[i] = blank
	}
	text := make([]byte, cols*rows)
	for i := range s.lines {
		l := &s.lines[i]
		l.cells = buf[i*cols : (i+1)*cols : (i+1)*cols]
		l.text = text[i*cols : (i+1)*cols : (i+1)*cols]
		if blank == cell(0) {
			l.fast = true
		} else {
			l.used = cols
		}
	}
	return s
}

func (s *screen) rows() int { return len(s.lines) }

func (s *screen) line(i int) *line {
	j := s.head + i
	if j >= len(s.lines) {
		j -= len(s.lines)
	}
	return &s.lines[j]
}

func (s *screen) row(i int) []cell { return s.line(i).cells }

// rowMut returns row i for a change the fast path does not track.
func (s *screen) rowMut(i int) []cell {
	l := s.line(i)
	l.fast = false
	return l.cells
}

func fill(cs []cell, c cell) {
	if c == cell(0) {
		clear(cs)
		return
	}
	for i := range cs {
		cs[i] = c
	}
}

// rotateUp moves rows top+n..bot up to top and gives the n rows that fall
// off back at the bottom, uncleared. 0 < n <= bot-top+1.
func (s *screen) rotateUp(top, bot, n int) {
	if top == 0 && bot == len(s.lines)-1 {
		s.head += n
		if s.head >= len(s.lines) {
			s.head -= len(s.lines)
		}
		return
	}
	s.rotate(top, bot, n)
}

// rotateDown moves rows top..bot-n down by n; the n bottom rows come back at
// top, uncleared.
func (s *screen) rotateDown(top, bot, n int) {
	if top == 0 && bot == len(s.lines)-1 {
		s.head -= n
		if s.head < 0 {
			s.head += len(s.lines)
		}
		return
	}
	s.rotate(top, bot, bot-top+1-n)
}

// rotate rotates rows top..bot left by n (row top+n becomes row top).
func (s *screen) rotate(top, bot, n int) {
	h := bot - top + 1
	n %= h
	if n == 0 {
		return
	}
	a := s.head + top
	if a >= len(s.lines) {
		a -= len(s.lines)
	}
	if a+h <= len(s.lines) {
		// The region is contiguous in the ring: two memmoves.
		seg := s.lines[a : a+h]
		s.tmp = append(s.tmp[:0], seg[:n]...)
		copy(seg, seg[n:])
		copy(seg[h-n:], s.tmp)
		return
	}
	s.tmp = s.tmp[:0]
	for i := 0; i < n; i++ {
		s.tmp = append(s.tmp, *s.line(top + i))
	}
	for i := top; i+n <= bot; i++ {
		*s.line(i) = *s.line(i + n)
	}
	for i := range s.tmp {
		*s.line(bot - n + 1 + i) = s.tmp[i]
	}
}
