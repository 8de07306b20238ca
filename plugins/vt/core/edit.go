package core

import (
	"encoding/binary"
	"math/bits"
)

// decGraphics maps 0x5F..0x7E to the DEC special graphics (line drawing) set.
var decGraphics = [32]rune{
	' ', '◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼',
	'⎺', '⎻', '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
}

// charset returns the designation used for the next printed character.
func (t *Terminal) charset() byte {
	if t.ss != 0 {
		return t.charsets[t.ss]
	}
	return t.charsets[t.gl&3]
}

// printASCII prints the run of printable ASCII starting at b[i] and returns
// the index after it: the fast path for plain text, one pass that checks
// each byte and stores its cell.
func (t *Terminal) printASCII(b []byte, i int) int {
	if t.insert || t.charset() != 'B' {
		for i < len(b) && b[i]-0x20 < 0x5f {
			t.print(rune(b[i]))
			i++
		}
		return i
	}
	for i < len(b) && b[i]-0x20 < 0x5f {
		if t.wrapNext {
			t.wrapLine()
		}
		l := t.cur.lineRaw(t.y)
		if l.lazy && t.penIdx != 0 {
			l.materialize()
		}
		x := t.x
		src := b[i:]
		if len(src) > len(l.cells)-x {
			src = src[:len(l.cells)-x]
		}
		st := mkCell(0, t.penIdx, 0)
		var n int
		if l.lazy {
			// A plain row that keeps only its text (see line): blanks
			// up to x, then the bytes; no cells (and no wide ones).
			for k := l.used; k < x; k++ {
				l.text[k] = ' '
			}
			n = storeText(l.text[x:x+len(src)], src)
		} else {
			dst := l.cells[x : x+len(src)]
			if x > 0 && dst[0].flags()&cellSpacer != 0 {
				l.cells[x-1] = mkCell(0, l.cells[x-1].style(), 0)
			}
			if l.fast && t.penIdx == 0 {
				// Keep the text mirror: blanks up to x, then the bytes.
				for k := l.used; k < x; k++ {
					l.text[k] = ' '
				}
				n = storeASCII(dst, l.text[x:x+len(src)], src)
			} else {
				l.fast = false
				n = storeASCIIStyled(dst, src, st)
			}
			// The right half of a wide character we overwrote the left of.
			if e := x + n; e < len(l.cells) && l.cells[e].flags()&cellSpacer != 0 {
				l.cells[e] = mkCell(0, l.cells[e].style(), 0)
			}
		}
		l.touch(x + n)
		t.lastChar = rune(src[n-1])
		i += n
		x += n
		if x < t.cols {
			t.x = x
		} else {
			t.x = t.cols - 1
			t.wrapNext = t.autowrap
		}
		// A CR LF between two lines of text is handled here, saving the
		// round trip through Write (calls are dear under WebAssembly).
		if i+2 < len(b) && b[i] == '\r' && b[i+1] == '\n' && b[i+2]-0x20 < 0x5f && !t.lnm {
			t.x, t.wrapNext, t.lastChar = 0, false, 0
			if t.y != t.bot {
				if t.y < t.rows-1 {
					t.y++
				}
			} else {
				t.scrollUp1()
			}
			i += 2
			continue
		}
		if x < t.cols {
			return i
		}
		if !t.autowrap {
			// Without autowrap the rest overwrites the last column.
			for i < len(b) && b[i]-0x20 < 0x5f {
				l.cells[t.cols-1] = st | cell(b[i])
				l.text[t.cols-1] = b[i]
				t.lastChar = rune(b[i])
				i++
			}
			return i
		}
	}
	return i
}

// printUTF8 prints the run of complete, valid UTF-8 characters starting at
// b[i] (a lead byte) and returns the index after it: the fast path for
// text that is not plain ASCII (CJK, box drawing, accented letters), which
// otherwise costs a call per byte and one per character, dear under
// WebAssembly. It stops at a run of ASCII (printASCII's eight-byte stores
// are faster than taking it here) and leaves the rest to utf8Byte and print:
// a sequence cut by the end of b or invalid; it hands print a combining
// mark or a wide character at the last column, and does nothing in insert
// mode or with a charset other than ASCII.
func (t *Terminal) printUTF8(b []byte, i int) int {
	if t.insert || t.ss != 0 || t.charsets[t.gl&3] != 'B' {
		return i
	}
	// The row is fetched once and again only after something that may
	// move the cursor to another row (a wrap, print): a call per
	// character is dear under WebAssembly.
	var l *line
	for i < len(b) {
		c := b[i]
		var r rune
		n := 1
		switch {
		case c < 0x80:
			// Printable ASCII after other characters, on a row that is no
			// longer plain, is taken here: a lone character (the space
			// between two words) as any other, a run (the text after a
			// box-drawing character) stored eight bytes at a time up to
			// the row's end, saving the way back through Write and
			// printASCII.
			if c-0x20 >= 0x5f {
				return i
			}
			if l == nil {
				l = t.cur.lineRaw(t.y) // line, inline
				if l.lazy {
					l.materialize()
				}
			}
			if l.fast {
				return i
			}
			if i+1 < len(b) && b[i+1]-0x20 < 0x5f {
				if t.wrapNext {
					return i // printASCII wraps
				}
				cells := l.cells
				x := t.x
				src := b[i:]
				if len(src) > len(cells)-x {
					src = src[:len(cells)-x]
				}
				dst := cells[x : x+len(src)]
				if x > 0 && dst[0].flags()&cellSpacer != 0 {
					cells[x-1] = mkCell(0, cells[x-1].style(), 0)
				}
				k := storeASCIIStyled(dst, src, mkCell(0, t.penIdx, 0))
				if e := x + k; e < len(cells) && cells[e].flags()&cellSpacer != 0 {
					cells[e] = mkCell(0, cells[e].style(), 0)
				}
				l.touch(x + k)
				t.lastChar = rune(src[k-1])
				i += k
				x += k
				if x >= t.cols {
					t.x = t.cols - 1
					t.wrapNext = t.autowrap
				} else {
					t.x = x
				}
				continue
			}
			r = rune(c)
		case c >= 0xE0 && c < 0xF0:
			// Three bytes (CJK, kana, box drawing): the usual case first.
			if i+2 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 {
				return i
			}
			r = rune(c&0x0F)<<12 | rune(b[i+1]&0x3F)<<6 | rune(b[i+2]&0x3F)
			if r < 0x800 || r >= 0xD800 && r <= 0xDFFF {
				return i
			}
			n = 3
		case c < 0xC2:
			return i
		case c < 0xE0:
			if i+1 >= len(b) || b[i+1]&0xC0 != 0x80 {
				return i
			}
			r = rune(c&0x1F)<<6 | rune(b[i+1]&0x3F)
			n = 2
		case c <= 0xF4:
			if i+3 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 || b[i+3]&0xC0 != 0x80 {
				return i
			}
			r = rune(c&0x07)<<18 | rune(b[i+1]&0x3F)<<12 | rune(b[i+2]&0x3F)<<6 | rune(b[i+3]&0x3F)
			if r < 0x10000 || r > 0x10FFFF {
				return i
			}
			n = 4
		default:
			return i
		}
		w := 1
		if r >= 0x300 {
			if r < 1<<17 {
				w = int(bmpWidths[r>>2] >> ((r & 3) * 2) & 3)
			} else {
				w = runeWidth(r)
			}
		}
		if w == 0 || w == 2 && (t.cols < 2 || !t.wrapNext && t.x == t.cols-1) {
			t.print(r)
			l = nil
			i += n
			continue
		}
		t.lastChar = r
		if t.wrapNext {
			t.wrapLine()
			l = nil
		}
		if l == nil {
			l = t.cur.lineRaw(t.y)
			if l.lazy {
				l.materialize()
			}
		}
		l.fast = false
		cells := l.cells
		x := t.x
		if x+w > len(cells) {
			return i // not reached: w == 2 at the last column went to print
		}
		l.touch(x + w)
		// fixWide, inline.
		if x > 0 && cells[x].flags()&cellSpacer != 0 {
			cells[x-1] = mkCell(0, cells[x-1].style(), 0)
		}
		if e := x + w; e < len(cells) && cells[e-1].flags()&cellWide != 0 {
			cells[e] = mkCell(0, cells[e].style(), 0)
		}
		if w == 2 {
			d := cells[x : x+2 : x+2]
			d[0] = mkCell(uint32(r), t.penIdx, cellWide)
			d[1] = mkCell(0, t.penIdx, cellSpacer)
		} else {
			cells[x] = mkCell(uint32(r), t.penIdx, 0)
		}
		x += w
		if x >= t.cols {
			t.x = t.cols - 1
			t.wrapNext = t.autowrap
		} else {
			t.x = x
		}
		i += n
	}
	return i
}

// storeASCII stores the leading printable ASCII of src as default-style
// cells in dst and bytes in text (both len(src) long) and returns how many.
//
// Eight bytes at a time: one 64-bit load, one test for "all eight are
// printable" (swarPrintable), one 64-bit store of the text and eight cell
// stores, all in one basic block. Under WebAssembly every branch of Go's
// code goes through the function's dispatch loop, so fewer branches per
// byte is what makes this fast there (see docs/RATIONALE.md).
func storeASCII(dst []cell, text, src []byte) int {
	dst = dst[:len(src)]
	text = text[:len(src)]
	k := 0
	for ; k+8 <= len(src); k += 8 {
		x := binary.LittleEndian.Uint64(src[k : k+8 : k+8])
		d := dst[k : k+8 : k+8]
		tx := text[k : k+8 : k+8]
		if bad := swarNonPrintable(x); bad != 0 {
			// The run ends in these eight bytes: store the g before the
			// first non-printable one, keeping the others as they were,
			// without a branch per byte.
			g := uint(bits.TrailingZeros64(bad)) >> 3
			mask := uint64(1)<<(8*g) - 1
			binary.LittleEndian.PutUint64(tx, binary.LittleEndian.Uint64(tx)&^mask|x&mask)
			d[0] = pick(g > 0, cell(x&0xff), d[0])
			d[1] = pick(g > 1, cell(x>>8&0xff), d[1])
			d[2] = pick(g > 2, cell(x>>16&0xff), d[2])
			d[3] = pick(g > 3, cell(x>>24&0xff), d[3])
			d[4] = pick(g > 4, cell(x>>32&0xff), d[4])
			d[5] = pick(g > 5, cell(x>>40&0xff), d[5])
			d[6] = pick(g > 6, cell(x>>48&0xff), d[6])
			return k + int(g)
		}
		binary.LittleEndian.PutUint64(tx, x)
		d[0] = cell(x & 0xff)
		d[1] = cell(x >> 8 & 0xff)
		d[2] = cell(x >> 16 & 0xff)
		d[3] = cell(x >> 24 & 0xff)
		d[4] = cell(x >> 32 & 0xff)
		d[5] = cell(x >> 40 & 0xff)
		d[6] = cell(x >> 48 & 0xff)
		d[7] = cell(x >> 56)
	}
	for ; k < len(src); k++ {
		c := src[k]
		if c-0x20 >= 0x5f {
			break
		}
		dst[k] = cell(c)
		text[k] = c
	}
	return k
}

// storeText is storeASCII for a lazy row: the bytes only.
func storeText(text, src []byte) int {
	text = text[:len(src)]
	k := 0
	for ; k+8 <= len(src); k += 8 {
		x := binary.LittleEndian.Uint64(src[k : k+8 : k+8])
		tx := text[k : k+8 : k+8]
		if bad := swarNonPrintable(x); bad != 0 {
			g := uint(bits.TrailingZeros64(bad)) >> 3
			mask := uint64(1)<<(8*g) - 1
			binary.LittleEndian.PutUint64(tx, binary.LittleEndian.Uint64(tx)&^mask|x&mask)
			return k + int(g)
		}
		binary.LittleEndian.PutUint64(tx, x)
	}
	for ; k < len(src); k++ {
		c := src[k]
		if c-0x20 >= 0x5f {
			break
		}
		text[k] = c
	}
	return k
}

// storeASCIIStyled is storeASCII for a row that is not plain: cells
// st|byte, no text mirror, eight bytes at a time.
func storeASCIIStyled(dst []cell, src []byte, st cell) int {
	dst = dst[:len(src)]
	k := 0
	for ; k+8 <= len(src); k += 8 {
		x := binary.LittleEndian.Uint64(src[k : k+8 : k+8])
		d := dst[k : k+8 : k+8]
		if bad := swarNonPrintable(x); bad != 0 {
			g := uint(bits.TrailingZeros64(bad)) >> 3
			d[0] = pick(g > 0, st|cell(x&0xff), d[0])
			d[1] = pick(g > 1, st|cell(x>>8&0xff), d[1])
			d[2] = pick(g > 2, st|cell(x>>16&0xff), d[2])
			d[3] = pick(g > 3, st|cell(x>>24&0xff), d[3])
			d[4] = pick(g > 4, st|cell(x>>32&0xff), d[4])
			d[5] = pick(g > 5, st|cell(x>>40&0xff), d[5])
			d[6] = pick(g > 6, st|cell(x>>48&0xff), d[6])
			return k + int(g)
		}
		d[0] = st | cell(x&0xff)
		d[1] = st | cell(x>>8&0xff)
		d[2] = st | cell(x>>16&0xff)
		d[3] = st | cell(x>>24&0xff)
		d[4] = st | cell(x>>32&0xff)
		d[5] = st | cell(x>>40&0xff)
		d[6] = st | cell(x>>48&0xff)
		d[7] = st | cell(x>>56)
	}
	for ; k < len(src); k++ {
		c := src[k]
		if c-0x20 >= 0x5f {
			break
		}
		dst[k] = st | cell(c)
	}
	return k
}

// swarNonPrintable returns, for the eight bytes of x, 0x80 in each byte
// that is not printable ASCII (outside 0x20..0x7e) at or before the first
// such byte; bytes after the first may be marked wrongly, so only "zero"
// and the lowest set bit are meaningful. As long as every byte below it is
// under 0x80, neither sum carries into the next byte: byte+0x60 has its
// top bit set iff byte >= 0x20, and byte+0x01 has it clear iff byte < 0x7f.
// A byte of 0x80 or more sets its own top bit in x.
func swarNonPrintable(x uint64) uint64 {
	const hi = 0x8080808080808080
	return (x | (x + 0x0101010101010101) | ^(x + 0x6060606060606060)) & hi
}

// pick is a conditional move: a when c, else b (the compiler turns it into
// a select, so no branch).
func pick(c bool, a, b cell) cell {
	if c {
		return a
	}
	return b
}

// fixWide blanks the halves of wide characters that writing columns
// [from, to) would split.
func (t *Terminal) fixWide(cells []cell, from, to int) {
	if from > 0 && from < len(cells) && cells[from].flags()&cellSpacer != 0 {
		cells[from-1] = mkCell(0, cells[from-1].style(), 0)
	}
	if to > 0 && to < len(cells) && cells[to-1].flags()&cellWide != 0 {
		cells[to] = mkCell(0, cells[to].style(), 0)
	}
}

// wrapLine moves to the start of the next line, marking the current one as
// soft-wrapped.
func (t *Terminal) wrapLine() {
	t.cur.lineRaw(t.y).wrapped = true
	t.wrapNext = false
	t.x = 0
	t.index()
}

// print prints one character.
func (t *Terminal) print(r rune) {
	if r < 0x80 {
		switch t.charset() {
		case '0':
			if r >= 0x5F && r <= 0x7E {
				r = decGraphics[r-0x5F]
			}
		case 'A':
			if r == '#' {
				r = '£'
			}
		}
	}
	t.ss = 0
	w := runeWidth(r)
	if w == 0 {
		t.combine(r)
		return
	}
	t.lastChar = r
	if t.wrapNext {
		t.wrapLine()
	}
	if w == 2 && t.x == t.cols-1 {
		if t.cols < 2 {
			return
		}
		if t.autowrap {
			l := t.cur.line(t.y)
			l.fast = false
			t.fixWide(l.cells, t.x, t.x+1)
			l.cells[t.x] = t.eraseBlank()
			l.touch(t.x + 1)
			t.wrapLine()
		} else {
			t.x--
		}
	}
	if t.insert {
		t.insertBlanks(w)
	}
	l := t.cur.line(t.y)
	l.fast = false
	cells := l.cells
	l.touch(t.x + w)
	t.fixWide(cells, t.x, t.x+w)
	if w == 2 {
		cells[t.x] = mkCell(uint32(r), t.penIdx, cellWide)
		cells[t.x+1] = mkCell(0, t.penIdx, cellSpacer)
	} else {
		cells[t.x] = mkCell(uint32(r), t.penIdx, 0)
	}
	t.x += w
	if t.x >= t.cols {
		t.x = t.cols - 1
		t.wrapNext = t.autowrap
	}
}

// combine attaches a zero-width character to the previous cell.
func (t *Terminal) combine(r rune) {
	x, y := t.x-1, t.y
	if t.wrapNext {
		x = t.x
	}
	if x < 0 {
		return
	}
	cells := t.cur.rowMut(y)
	if cells[x].flags()&cellSpacer != 0 && x > 0 {
		x--
	}
	c := &cells[x]
	if c.r() == 0 && c.flags()&cellGrapheme == 0 {
		return
	}
	// The cell's character (or grapheme) and the mark give the same
	// grapheme every time while the table stands: the cache spares
	// building the text and hashing it (dear under
	// WebAssembly) for the few combinations a text repeats.
	key := uint64(c.r()) | uint64(c.flags()&cellGrapheme)<<32 | uint64(r)<<40
	e := &t.markCache[(key*0x9E3779B97F4A7C15)>>(64-6)]
	if e.key == key && e.gen == t.graphGen && !t.noMarkCache {
		*c = mkCell(e.idx, c.style(), c.flags()|cellGrapheme)
		return
	}
	var buf [maxMarksBytes + 8]byte
	s := t.cellText(buf[:0], *c)
	if len(s)+4 > maxMarksBytes+4 {
		return
	}
	s = appendRune(s, r)
	gen := t.graphGen
	idx, ok := t.graphemeIndex(s)
	if !ok {
		return
	}
	if t.graphGen == gen { // else a compaction renumbered what key names
		*e = markEntry{key: key, idx: idx, gen: gen}
	}
	*c = mkCell(idx, c.style(), c.flags()|cellGrapheme)
}

// markEntry is an entry of Terminal.markCache: the grapheme index that
// attaching a mark to a cell's character gave, valid while graphGen is
// gen (the grapheme table is renumbered by compaction and reset).
type markEntry struct {
	key      uint64 // the cell's rune or grapheme index, its grapheme flag, the mark
	idx, gen uint32
}

func (t *Terminal) graphemeIndex(s []byte) (uint32, bool) {
	h := graphHash(s)
	if i, ok := t.graphLookup(s, h); ok {
		return i, true
	}
	t.newEntries++
	if t.graphemes.n() >= min(maxGraphemes, t.tableCap()) {
		if !t.mayCompact() {
			return 0, false
		}
		t.compact()
		if t.graphemes.n() >= min(maxGraphemes, t.tableCap()) {
			return 0, false
		}
	}
	i := uint32(t.graphemes.n())
	t.graphemes.add(s)
	t.graphInsert(i, h)
	return i, true
}

// cellText appends the UTF-8 text of c (a space if blank).
func (t *Terminal) cellText(dst []byte, c cell) []byte {
	if c.flags()&cellGrapheme != 0 {
		if int(c.r()) < t.graphemes.n() {
			return append(dst, t.graphemes.at(c.r())...)
		}
		return append(dst, ' ')
	}
	if c.r() == 0 {
		return append(dst, ' ')
	}
	return appendRune(dst, rune(c.r()))
}

func appendRune(dst []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

// cursorBack moves the cursor n columns left (BS, CUB). With reverse
// wraparound (mode 45) and autowrap on, it goes on through the rows above,
// from the top row round to the bottom one, as xterm did from X10R4 until
// 2023 (the xterm.js fixture t0103 is its record); a pending wrap absorbs
// the first step. Current xterm keeps that for mode 1045 and limits 45 to
// soft-wrapped rows; no program we know of sets either.
func (t *Terminal) cursorBack(n int) {
	if !t.reverseWrap || !t.autowrap {
		t.x = clamp(t.x-n, 0, t.cols-1)
		t.wrapNext = false
		return
	}
	if t.wrapNext {
		n--
	}
	t.wrapNext = false
	if t.x-n >= 0 {
		t.x -= n
		return
	}
	size := t.cols * t.rows
	off := ((t.cols*t.y+t.x-n)%size + size) % size
	t.y, t.x = off/t.cols, off%t.cols
}

// execute runs a C0 control.
func (t *Terminal) execute(c byte) {
	t.lastChar = 0
	switch c {
	case 0x07: // BEL
	case 0x08: // BS
		t.cursorBack(1)
	case 0x09: // HT
		t.tabForward(1)
	case 0x0A, 0x0B, 0x0C: // LF, VT, FF
		t.index()
		if t.lnm {
			t.x = 0
		}
	case 0x0D: // CR
		t.x = 0
		t.wrapNext = false
	case 0x0E: // SO
		t.gl = 1
	case 0x0F: // SI
		t.gl = 0
	}
}

func (t *Terminal) tabForward(n int) {
	x := t.x
	for ; n > 0 && x < t.cols-1; n-- {
		x++
		for x < t.cols-1 && !t.tabs[x] {
			x++
		}
	}
	// At the last column a pending wrap stays pending (xterm).
	if x != t.x {
		t.wrapNext = false
	}
	t.x = x
}

func (t *Terminal) tabBackward(n int) {
	x := t.x
	for ; n > 0 && x > 0; n-- {
		x--
		for x > 0 && !t.tabs[x] {
			x--
		}
	}
	t.x = x // a pending wrap stays pending (xterm)
}

// moveTo puts the cursor at row y, column x (0-based, absolute), clamped;
// with origin mode, y is clamped to the scroll region.
func (t *Terminal) moveTo(x, y int) {
	minY, maxY := 0, t.rows-1
	if t.origin {
		minY, maxY = t.top, t.bot
	}
	t.x = clamp(x, 0, t.cols-1)
	t.y = clamp(y, minY, maxY)
	t.wrapNext = false
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// cursorUp moves up n rows, stopping at the top margin if below it.
func (t *Terminal) cursorUp(n int) {
	lim := 0
	if t.y >= t.top {
		lim = t.top
	}
	t.y = clamp(t.y-n, lim, t.rows-1)
	t.wrapNext = false
}

func (t *Terminal) cursorDown(n int) {
	lim := t.rows - 1
	if t.y <= t.bot {
		lim = t.bot
	}
	t.y = clamp(t.y+n, 0, lim)
	t.wrapNext = false
}

// eraseCells blanks columns [from, to) of row y; with selective set, cells
// written under DECSCA protection are kept.
func (t *Terminal) eraseCells(y, from, to int, selective bool) {
	l := t.cur.lineRaw(y) // line, inline
	if l.lazy {
		l.materialize()
	}
	cells := l.cells
	from = clamp(from, 0, t.cols)
	to = clamp(to, 0, t.cols)
	if from >= to {
		return
	}
	t.fixWide(cells, from, to)
	if !selective {
		if l.fast && t.eraseBlank() == cell(0) {
			for k := from; k < to && k < l.used; k++ {
				l.text[k] = ' '
			}
		} else {
			l.fast = false
		}
		if t.eraseBlank() != cell(0) {
			fill(cells[from:to], t.eraseBlank())
			l.touch(to)
		} else if to >= l.used {
			if from < l.used {
				fill(cells[from:l.used], t.eraseBlank())
				l.used = from
			}
		} else {
			fill(cells[from:to], t.eraseBlank())
		}
		return
	}
	l.fast = false
	for i := from; i < to; i++ {
		if t.styles[cells[i].style()].attrs&Protected == 0 {
			cells[i] = mkCell(0, cells[i].style(), 0)
		}
	}
}

// eraseDisplay implements ED/DECSED.
//
// A pending wrap stays pending and ED 0 leaves the cursor's row alone then,
// as EL does (see eraseLine).
func (t *Terminal) eraseDisplay(mode int, selective bool) {
	switch mode {
	case 0:
		if !t.wrapNext {
			t.eraseCells(t.y, t.x, t.cols, selective)
			t.cur.line(t.y).wrapped = false
		}
		for y := t.y + 1; y < t.rows; y++ {
			t.eraseCells(y, 0, t.cols, selective)
			t.cur.line(y).wrapped = false
		}
	case 1:
		for y := 0; y < t.y; y++ {
			t.eraseCells(y, 0, t.cols, selective)
			t.cur.line(y).wrapped = false
		}
		t.eraseCells(t.y, 0, t.x+1, selective)
	case 2:
		for y := 0; y < t.rows; y++ {
			t.eraseCells(y, 0, t.cols, selective)
			t.cur.line(y).wrapped = false
		}
	case 3:
		t.sb.clear()
	}
}

// eraseToEnd is EL 0 without a pending wrap (eraseLine and eraseCells in
// one call: the row's end in a full-screen program's every line).
func (t *Terminal) eraseToEnd() {
	l := t.cur.lineRaw(t.y)
	if l.lazy {
		l.materialize()
	}
	l.wrapped = false
	cells := l.cells
	from := t.x
	if from >= len(cells) {
		return
	}
	if from > 0 && cells[from].flags()&cellSpacer != 0 {
		cells[from-1] = mkCell(0, cells[from-1].style(), 0)
	}
	blank := t.eraseBlank()
	if blank != 0 {
		l.fast = false
		fill(cells[from:], blank)
		l.used = len(cells)
		return
	}
	if from < l.used {
		// A plain row's text past used is never read.
		fill(cells[from:l.used], 0)
		l.used = from
	}
}

// eraseLine implements EL/DECSEL.
//
// With a wrap pending (the last column just written), EL keeps it pending,
// as tmux and alacritty do: EL 0 erases nothing (the cursor is, in
// effect, past the last column) and the next character still starts a new
// row, so text that ends at the margin stays visible. xterm erases the
// last column and cancels the wrap.
func (t *Terminal) eraseLine(mode int, selective bool) {
	if t.wrapNext {
		if mode == 1 || mode == 2 {
			t.eraseCells(t.y, 0, t.cols, selective)
		}
		return
	}
	switch mode {
	case 0:
		t.eraseCells(t.y, t.x, t.cols, selective)
		t.cur.lineRaw(t.y).wrapped = false // materialized by eraseCells
	case 1:
		t.eraseCells(t.y, 0, t.x+1, selective)
	case 2:
		t.eraseCells(t.y, 0, t.cols, selective)
		t.cur.line(t.y).wrapped = false
	default:
		return
	}
	t.wrapNext = false
}

// insertBlanks shifts the rest of the row right by n (ICH).
func (t *Terminal) insertBlanks(n int) {
	cells := t.cur.rowMut(t.y)
	if n > t.cols-t.x {
		n = t.cols - t.x
	}
	if n <= 0 {
		return
	}
	t.fixWide(cells, t.x, t.x)
	l := t.cur.line(t.y)
	l.used = min(t.cols, max(l.used, t.x)+n)
	copy(cells[t.x+n:], cells[t.x:])
	fill(cells[t.x:t.x+n], t.eraseBlank())
	// A wide character pushed half off the edge is blanked.
	if cells[t.cols-1].flags()&cellWide != 0 {
		cells[t.cols-1] = t.eraseBlank()
	}
	t.cur.line(t.y).wrapped = false
	t.wrapNext = false
}

// deleteChars removes n cells at the cursor (DCH).
func (t *Terminal) deleteChars(n int) {
	cells := t.cur.rowMut(t.y)
	if n > t.cols-t.x {
		n = t.cols - t.x
	}
	if n <= 0 {
		return
	}
	t.fixWide(cells, t.x, t.x+n)
	copy(cells[t.x:], cells[t.x+n:])
	fill(cells[t.cols-n:], t.eraseBlank())
	if t.eraseBlank() != cell(0) {
		t.cur.line(t.y).used = t.cols
	}
	t.cur.line(t.y).wrapped = false
	t.wrapNext = false
}

// shiftRow inserts (right) or deletes n blank cells at column at of row y.
func (t *Terminal) shiftRow(y, at, n int, right bool) {
	cells := t.cur.rowMut(y)
	if n > t.cols-at {
		n = t.cols - at
	}
	if n <= 0 {
		return
	}
	t.cur.line(y).used = t.cols
	if right {
		t.fixWide(cells, at, at)
		copy(cells[at+n:], cells[at:])
		fill(cells[at:at+n], t.eraseBlank())
		if cells[t.cols-1].flags()&cellWide != 0 {
			cells[t.cols-1] = t.eraseBlank()
		}
	} else {
		t.fixWide(cells, at, at+n)
		copy(cells[at:], cells[at+n:])
		fill(cells[t.cols-n:], t.eraseBlank())
	}
	t.cur.line(y).wrapped = false
}
