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
//
// lazy says the cells are not kept up to date: a plain row (fast) that
// scrolled in at the bottom holds its text only, cell k being
// cell(text[k]) below used and the zero cell from there, while cells
// [0, dirty) still hold what the row showed before. Printing plain text
// on such a row stores one byte a character instead of an 8-byte cell,
// and scrolling it away clears nothing: the common case of text
// scrolling past. line() materializes the cells for everything else;
// lineRaw() is for the few places that use only the text and flags.
type line struct {
	cells   []cell
	text    []byte
	used    int
	dirty   int
	fast    bool
	lazy    bool
	wrapped bool
}

// materialize brings a lazy row's cells up to date.
func (l *line) materialize() {
	cs := l.cells[:max(l.used, l.dirty)]
	for k := range cs {
		if k < l.used {
			cs[k] = cell(l.text[k])
		} else {
			cs[k] = 0
		}
	}
	l.lazy, l.dirty = false, 0
}

// clear blanks the whole row with c.
func (l *line) clear(c cell) {
	end := l.used
	if l.lazy {
		end = max(end, l.dirty)
		l.lazy, l.dirty = false, 0
	}
	if c == cell(0) {
		// Cells from end on are zero already: clearing up to the next
		// multiple of eight lets fill skip its one-by-one tail.
		fill(l.cells[:min((end+7)&^7, len(l.cells))], c)
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

// screen is a grid of rows. Row i is lines[ring[(head+i) % len]]: scrolling
// the whole screen moves head, and scrolling a region permutes the small
// ring of row numbers, never the rows themselves.
type screen struct {
	lines []line
	ring  []int32
	head  int
	cols  int
	tmp   []int32 // scratch for rotate
}

func newScreen(cols, rows int, blank cell) *screen {
	s := &screen{lines: make([]line, rows), ring: make([]int32, rows), cols: cols}
	buf := make([]cell, cols*rows)
	for i := range buf {
		buf[i] = blank
	}
	text := make([]byte, cols*rows)
	for i := range s.lines {
		s.ring[i] = int32(i)
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
	l := s.lineRaw(i)
	if l.lazy {
		l.materialize()
	}
	return l
}

// lineRaw is line without materializing a lazy row's cells.
func (s *screen) lineRaw(i int) *line {
	j := s.head + i
	if j >= len(s.ring) {
		j -= len(s.ring)
	}
	return &s.lines[s.ring[j]]
}

func (s *screen) row(i int) []cell { return s.line(i).cells }

// rowMut returns row i for a change the fast path does not track.
func (s *screen) rowMut(i int) []cell {
	l := s.line(i)
	l.fast = false
	return l.cells
}

// fill sets every cell of cs to c. Short rows are written eight cells per
// iteration instead of by clear: under wazero a memory.fill costs a native
// memmove call per doubling of the length, several times the cost of the
// stores for a row of text.
func fill(cs []cell, c cell) {
	if len(cs) > 256 {
		if c == cell(0) {
			clear(cs)
			return
		}
	}
	for len(cs) >= 8 {
		d := cs[:8:8]
		d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = c, c, c, c, c, c, c, c
		cs = cs[8:]
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
		if s.head >= len(s.ring) {
			s.head -= len(s.ring)
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
			s.head += len(s.ring)
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
	if a >= len(s.ring) {
		a -= len(s.ring)
	}
	if a+h <= len(s.ring) {
		// The region is contiguous in the ring: two small memmoves.
		seg := s.ring[a : a+h]
		s.tmp = append(reserve(s.tmp[:0], n), seg[:n]...)
		copy(seg, seg[n:])
		copy(seg[h-n:], s.tmp)
		return
	}
	idx := func(i int) *int32 {
		j := s.head + i
		if j >= len(s.ring) {
			j -= len(s.ring)
		}
		return &s.ring[j]
	}
	s.tmp = s.tmp[:0]
	for i := 0; i < n; i++ {
		s.tmp = append(reserve(s.tmp, 1), *idx(top + i))
	}
	for i := top; i+n <= bot; i++ {
		*idx(i) = *idx(i + n)
	}
	for i := range s.tmp {
		*idx(bot - n + 1 + i) = s.tmp[i]
	}
}
