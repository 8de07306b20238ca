package core

// line is one row of cells. wrapped says the text continues on the next row
// (the row was filled and the cursor wrapped, a soft wrap).
type line struct {
	cells   []cell
	wrapped bool
}

// screen is a grid of rows kept in a ring: row i is lines[(head+i) % len],
// so scrolling the whole screen moves head instead of copying rows.
type screen struct {
	lines []line
	head  int
	cols  int
}

func newScreen(cols, rows int, blank cell) *screen {
	s := &screen{lines: make([]line, rows), cols: cols}
	buf := make([]cell, cols*rows)
	for i := range buf {
		buf[i] = blank
	}
	for i := range s.lines {
		s.lines[i].cells = buf[i*cols : (i+1)*cols : (i+1)*cols]
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

func fill(cs []cell, c cell) {
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
	// Three reversals keep it allocation free.
	rev := func(a, b int) {
		for a < b {
			la, lb := s.line(a), s.line(b)
			*la, *lb = *lb, *la
			a++
			b--
		}
	}
	rev(top, top+n-1)
	rev(top+n, bot)
	rev(top, bot)
}
