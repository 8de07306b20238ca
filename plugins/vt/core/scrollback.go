package core

import (
	"encoding/binary"
	"slices"
)

// sbLine is one line of scrollback, compact: the line's UTF-8 text (wide
// characters once, trailing default blanks trimmed) followed by its style
// runs, each a 2-byte text offset and an encoded style. A line with only
// the default style has no runs.
type sbLine struct {
	b       []byte
	text    uint32 // length of the text part of b
	wrapped bool
}

const runSize = 2 + styleSize

// scrollback is a ring of at most max lines; line 0 is the oldest.
type scrollback struct {
	lines    []sbLine
	start, n int
	max      int
}

func (s *scrollback) at(i int) *sbLine {
	j := s.start + i
	if j >= len(s.lines) {
		j -= len(s.lines)
	}
	return &s.lines[j]
}

// next returns the slot for a new newest line, evicting the oldest when full.
func (s *scrollback) next() *sbLine {
	if s.n < s.max {
		if s.start != 0 {
			// Only after a shrink of max; normalise.
			s.normalize()
		}
		if s.n == len(s.lines) {
			s.lines = append(s.lines, sbLine{})
		}
		s.n++
		return &s.lines[s.n-1]
	}
	l := &s.lines[s.start]
	s.start++
	if s.start >= len(s.lines) {
		s.start = 0
	}
	return l
}

func (s *scrollback) normalize() {
	n := make([]sbLine, s.n, max(s.n, 16))
	for i := range n {
		n[i] = *s.at(i)
	}
	s.lines, s.start = n, 0
}

func (s *scrollback) clear() {
	for i := range s.lines {
		s.lines[i].b = s.lines[i].b[:0]
	}
	s.start, s.n = 0, 0
}

// dropOldest forgets the k oldest lines.
func (s *scrollback) dropOldest(k int) {
	if k >= s.n {
		s.clear()
		return
	}
	for i := 0; i < k; i++ {
		s.at(0).b = s.at(0).b[:0]
		s.start++
		if s.start >= len(s.lines) {
			s.start = 0
		}
		s.n--
	}
	s.normalize()
}

// popNewest removes and returns the newest line (for growing the screen).
func (s *scrollback) popNewest() sbLine {
	l := *s.at(s.n - 1)
	*s.at(s.n - 1) = sbLine{}
	s.n--
	return l
}

func (s *scrollback) push(t *Terminal, l *line) {
	dst := s.next()
	if l.fast {
		text := l.text[:l.used]
		for len(text) > 0 && text[len(text)-1] == ' ' {
			text = text[:len(text)-1]
		}
		dst.b = append(dst.b[:0], text...)
		dst.text = uint32(len(text))
	} else {
		dst.b, dst.text = t.encodeLine(dst.b[:0], l.cells[:l.used])
	}
	dst.wrapped = l.wrapped
}

// blankCell reports whether c shows nothing (a space or never written).
func (t *Terminal) blankCell(c cell) bool {
	return c.flags()&(cellGrapheme|cellSpacer) == 0 && (c.r() == 0 || c.r() == ' ')
}

// plainStyle reports whether a blank in style i is invisible, so it can be
// trimmed at the end of a row.
func (t *Terminal) plainStyle(i uint16) bool {
	if i == 0 {
		return true
	}
	s := &t.styles[i]
	return s.bg == 0 && s.attrs&(Reverse|Underline|Strike|Overline) == 0
}

// contentEnd returns the number of cells of a row up to its last visible one.
func (t *Terminal) contentEnd(cells []cell) int {
	n := len(cells)
	for n > 0 {
		c := cells[n-1]
		if c == cell(0) || c == (mkCell(' ', 0, 0)) || t.blankCell(c) && t.plainStyle(c.style()) {
			n--
			continue
		}
		break
	}
	return n
}

// encodeLine appends the compact form of cells to dst.
func (t *Terminal) encodeLine(dst []byte, cells []cell) ([]byte, uint32) {
	cells = cells[:t.contentEnd(cells)]
	var styles cell // OR of all cells: nonzero style bits mean a styled line
	for i := 0; i < len(cells); {
		// Fast path: a run of plain ASCII cells written by index.
		dst = slices.Grow(dst, len(cells)-i)
		k := len(dst)
		run := cells[i:]
		buf := dst[k : k+len(run)]
		j := 0
		for ; j < len(run); j++ {
			c := run[j]
			if c&(0xff<<48|0xffffff80) != 0 { // flags, or not ASCII
				break
			}
			styles |= c
			b := byte(c)
			if b == 0 {
				b = ' '
			}
			buf[j] = b
		}
		dst = dst[:k+j]
		j += i
		if j >= len(cells) {
			break
		}
		c := cells[j]
		styles |= c
		if c.flags()&cellSpacer == 0 {
			dst = t.cellText(dst, c)
		}
		i = j + 1
	}
	styled := styles.style() != 0
	text := uint32(len(dst))
	if !styled {
		return dst, text
	}
	off := 0
	cur := -1
	for _, c := range cells {
		if c.flags()&cellSpacer != 0 {
			continue
		}
		if int(c.style()) != cur {
			cur = int(c.style())
			dst = binary.LittleEndian.AppendUint16(dst, uint16(off))
			dst = appendStyle(dst, t.styles[c.style()])
		}
		off += t.cellTextLen(c)
	}
	return dst, text
}

func (t *Terminal) cellTextLen(c cell) int {
	if c.flags()&cellGrapheme != 0 {
		if int(c.r()) < len(t.graphemes) {
			return len(t.graphemes[c.r()])
		}
		return 1
	}
	if c.r() == 0 {
		return 1
	}
	r := rune(c.r())
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}

const styleSize = 15

func appendStyle(dst []byte, s style) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(s.fg))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(s.bg))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(s.ul))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(s.attrs))
	return append(dst, s.ulStyle)
}

func readStyle(b []byte) style {
	return style{
		fg:      Color(binary.LittleEndian.Uint32(b)),
		bg:      Color(binary.LittleEndian.Uint32(b[4:])),
		ul:      Color(binary.LittleEndian.Uint32(b[8:])),
		attrs:   Attrs(binary.LittleEndian.Uint16(b[12:])),
		ulStyle: b[14],
	}
}

// runs calls f for each styled segment of the line's text.
func (l *sbLine) runs(f func(text []byte, s style)) {
	text := l.b[:l.text]
	r := l.b[l.text:]
	if len(r) == 0 {
		if len(text) > 0 {
			f(text, style{})
		}
		return
	}
	for len(r) >= runSize {
		off := int(binary.LittleEndian.Uint16(r))
		s := readStyle(r[2:])
		r = r[runSize:]
		end := len(text)
		if len(r) >= runSize {
			end = int(binary.LittleEndian.Uint16(r))
		}
		if off > end || end > len(text) {
			return
		}
		f(text[off:end], s)
	}
}

// ScrollbackLen is in term.go.

// AppendScrollbackText appends the plain text of scrollback line i (0 is the
// oldest kept line), trailing blanks trimmed.
func (t *Terminal) AppendScrollbackText(dst []byte, i int) []byte {
	if i < 0 || i >= t.sb.n {
		return dst
	}
	l := t.sb.at(i)
	text := l.b[:l.text]
	for len(text) > 0 && text[len(text)-1] == ' ' {
		text = text[:len(text)-1]
	}
	return append(dst, text...)
}

// AppendScrollbackANSI appends scrollback line i with SGR sequences.
func (t *Terminal) AppendScrollbackANSI(dst []byte, i int) []byte {
	if i < 0 || i >= t.sb.n {
		return dst
	}
	l := t.sb.at(i)
	changed := false
	l.runs(func(text []byte, s style) {
		if s != (style{}) || changed {
			dst = append(dst, "\x1b["...)
			dst = appendSGR(dst, s)
			dst = append(dst, 'm')
			changed = s != (style{})
		}
		dst = append(dst, text...)
	})
	if changed {
		dst = append(dst, "\x1b[0m"...)
	}
	return dst
}

// ScrollbackWrapped reports whether scrollback line i continues on the next.
func (t *Terminal) ScrollbackWrapped(i int) bool {
	if i < 0 || i >= t.sb.n {
		return false
	}
	return t.sb.at(i).wrapped
}
