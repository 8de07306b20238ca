package core

// index moves down one line, scrolling the region at its bottom (IND, LF).
func (t *Terminal) index() {
	t.wrapNext = false
	if t.y == t.bot {
		t.scrollUp1()
	} else if t.y < t.rows-1 {
		t.y++
	}
}

// reverseIndex moves up one line, scrolling the region at its top (RI).
func (t *Terminal) reverseIndex() {
	t.wrapNext = false
	if t.y == t.top {
		t.scrollDown(1)
	} else if t.y > 0 {
		t.y--
	}
}

// scrollUp scrolls the region up n lines. Lines leaving the top of the main
// screen's full-width region starting at row 0 go to the scrollback.
func (t *Terminal) scrollUp(n int) {
	h := t.bot - t.top + 1
	if n > h {
		n = h
	}
	if n <= 0 {
		return
	}
	s := t.cur
	if s == t.main && t.top == 0 && t.sb.max > 0 {
		for i := 0; i < n; i++ {
			t.sb.push(t, s.line(i))
		}
	}
	s.rotateUp(t.top, t.bot, n)
	for i := t.bot - n + 1; i <= t.bot; i++ {
		l := s.line(i)
		l.clear(t.eraseBlank())
		l.wrapped = false
	}
	if t.top > 0 {
		s.line(t.top - 1).wrapped = false
	}
}

// scrollUp1 is scrollUp(1), with the whole-screen case (a shell printing
// lines) in as few calls as possible: they are expensive under WebAssembly.
func (t *Terminal) scrollUp1() {
	s := t.cur
	if t.top != 0 || t.bot != t.rows-1 {
		t.scrollUp(1)
		return
	}
	l := s.lineRaw(0)
	if s == t.main && t.sb.max > 0 {
		if l.lazy && !l.fast {
			l.materialize() // not reached: lazy rows are plain
		}
		t.sb.push(t, l) // a plain row is pushed from its text
	}
	s.head++
	if s.head >= len(s.ring) {
		s.head = 0
	}
	// l is now the bottom row.
	if t.eraseBlank() == 0 && l.fast && !t.eagerRows {
		// Plain: it becomes a lazy row, its old cells left for whatever
		// materializes it to clear.
		if l.lazy {
			l.dirty = max(l.dirty, l.used)
		} else {
			l.dirty = l.used
		}
		l.used, l.lazy = 0, true
	} else if t.eraseBlank() == 0 {
		// line.clear, without its two calls.
		cs := l.cells[:min((l.used+7)&^7, len(l.cells))]
		for len(cs) >= 8 {
			d := cs[:8:8]
			d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = 0, 0, 0, 0, 0, 0, 0, 0
			cs = cs[8:]
		}
		clear(cs)
		l.used, l.fast = 0, true
	} else {
		l.clear(t.eraseBlank())
	}
	l.wrapped = false
}

// scrollDown scrolls the region down n lines.
func (t *Terminal) scrollDown(n int) {
	h := t.bot - t.top + 1
	if n > h {
		n = h
	}
	if n <= 0 {
		return
	}
	s := t.cur
	s.rotateDown(t.top, t.bot, n)
	for i := t.top; i < t.top+n; i++ {
		l := s.line(i)
		l.clear(t.eraseBlank())
		l.wrapped = false
	}
	s.line(t.bot).wrapped = false
	if t.top > 0 {
		s.line(t.top - 1).wrapped = false
	}
}

// insertLines inserts n blank lines at the cursor row inside the region (IL).
func (t *Terminal) insertLines(n int) {
	if t.y < t.top || t.y > t.bot {
		return
	}
	top := t.top
	t.top = t.y
	t.scrollDown(n)
	t.top = top
	t.x = 0
	t.wrapNext = false
}

// deleteLines deletes n lines at the cursor row inside the region (DL).
func (t *Terminal) deleteLines(n int) {
	if t.y < t.top || t.y > t.bot {
		return
	}
	top := t.top
	t.top = t.y
	// Lines deleted are never scrollback, even at row 0.
	sbMax := t.sb.max
	t.sb.max = 0
	t.scrollUp(n)
	t.sb.max = sbMax
	t.top = top
	t.x = 0
	t.wrapNext = false
}
