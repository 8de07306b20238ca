package core

import (
	"encoding/binary"
	"math/bits"
)

// The scrollback keeps its lines packed in a ring of fixed-size byte
// blocks, with one uint32 per line in a ring index: no allocation per line
// and nothing for the collector to scan, and once full, blocks freed by
// evicted lines are reused for new ones, so steady scrolling allocates
// nothing.
//
// A line is a header, uvarint(runs<<1 | wrapped), the line's UTF-8 text
// (wide characters once, trailing default blanks trimmed) and its style
// runs, each a 2-byte text offset and an encoded style. A line with only
// the default style has no runs, so a plain line costs its text plus one
// byte, plus 4 in the index.
//
// Lines are laid end to end in a virtual byte stream: byte p lives in
// block p/sbBlock at p%sbBlock, and a line may span blocks (a line longer
// than a block spans several). The index holds the low 32 bits of each
// line's end; line i starts where line i-1 ends (line 0 at tail).
const (
	sbBlock = 16 << 10
	// sbMaxBytes bounds the bytes held (the oldest lines go first): one
	// terminal's history must not exhaust the instance it shares with
	// others (RATIONALE "One screen cannot exhaust the instance it
	// shares"). 10,000 plain 80-column lines take 0.86 MB; lines with many
	// colours take more, so fewer of them are kept. It also keeps 32-bit
	// ends unambiguous.
	sbMaxBytes = SBMaxBytes
)

// SBMaxBytes bounds the bytes one terminal's scrollback holds.
const SBMaxBytes = 1 << 20

// sbLine is a view of one scrollback line: valid until the scrollback
// changes or another line is read (a line spanning blocks is copied into
// a scratch buffer).
type sbLine struct {
	b       []byte // text, then runs
	text    uint32 // length of the text part of b
	wrapped bool
}

const runSize = 2 + styleSize

// scrollback is a ring of at most max lines; line 0 is the oldest.
type scrollback struct {
	idx      []uint32 // ring of line ends, len(idx) <= max
	start, n int      // line 0 is idx[start]; n lines
	max      int

	blocks     [][]byte // blocks[k] holds stream bytes [(base+k)*sbBlock, (base+k+1)*sbBlock)
	base       uint64
	spare      []byte // a block freed by eviction, for the next one needed
	tail, head uint64 // stream bytes held: [tail, head)

	scratch []byte // a line spanning blocks, copied whole
	enc     []byte // encoding buffer for styled lines
	runs    []byte // the style runs of the line being encoded
}

func (s *scrollback) end(i int) uint32 {
	j := s.start + i
	if j >= len(s.idx) {
		j -= len(s.idx)
	}
	return s.idx[j]
}

// pos extends a 32-bit stream position held in the index to 64 bits.
func (s *scrollback) pos(p uint32) uint64 { return s.tail + uint64(p-uint32(s.tail)) }

// span returns the stream range of line i.
func (s *scrollback) span(i int) (uint64, uint64) {
	b := s.tail
	if i > 0 {
		b = s.pos(s.end(i - 1))
	}
	return b, s.pos(s.end(i))
}

// read returns stream bytes [b, e), in place when they lie in one block.
func (s *scrollback) read(b, e uint64) []byte {
	k := int(b/sbBlock - s.base)
	off := int(b % sbBlock)
	n := int(e - b)
	if off+n <= sbBlock {
		return s.blocks[k][off : off+n : off+n]
	}
	s.scratch = s.scratch[:0]
	for n > 0 {
		c := min(n, sbBlock-off)
		s.scratch = append(reserve(s.scratch, c), s.blocks[k][off:off+c]...)
		n -= c
		k++
		off = 0
	}
	return s.scratch
}

// at returns a view of line i (0 <= i < n).
func (s *scrollback) at(i int) sbLine {
	b := s.read(s.span(i))
	h, k := binary.Uvarint(b)
	b = b[k:]
	runs := int(h >> 1)
	text := len(b) - runs*runSize
	return sbLine{b: b, text: uint32(text), wrapped: h&1 != 0}
}

// write appends p to the stream.
func (s *scrollback) write(p []byte) {
	for len(p) > 0 {
		k := int(s.head/sbBlock - s.base)
		if k == len(s.blocks) {
			blk := s.spare
			s.spare = nil
			if blk == nil {
				blk = make([]byte, sbBlock)
			}
			s.blocks = append(s.blocks, blk)
		}
		off := int(s.head % sbBlock)
		c := copy(s.blocks[k][off:], p)
		p = p[c:]
		s.head += uint64(c)
	}
}

// commit ends the line just written, then evicts the oldest lines
// while the bytes held exceed sbMaxBytes.
func (s *scrollback) commit() {
	if s.n == len(s.idx) {
		s.growIndex()
	}
	j := s.start + s.n
	if j >= len(s.idx) {
		j -= len(s.idx)
	}
	s.idx[j] = uint32(s.head)
	s.n++
	if s.head-s.tail > sbMaxBytes && s.n > 1 {
		k := 1
		for k < s.n-1 && s.head-s.pos(s.end(k-1)) > sbMaxBytes {
			k++
		}
		s.dropOldest(k)
	}
}

// growIndex makes room for one more line in the index.
func (s *scrollback) growIndex() {
	size := min(max(2*len(s.idx), 64), s.max)
	if size <= s.n {
		size = s.n + 1
	}
	idx := make([]uint32, size)
	for i := 0; i < s.n; i++ {
		idx[i] = s.end(i)
	}
	s.idx, s.start = idx, 0
}

func (s *scrollback) clear() {
	s.start, s.n = 0, 0
	for _, b := range s.blocks {
		if s.spare == nil {
			s.spare = b
		}
	}
	clear(s.blocks)
	s.blocks = s.blocks[:0]
	s.base, s.tail, s.head = 0, 0, 0
}

// dropOldest forgets the k oldest lines.
func (s *scrollback) dropOldest(k int) {
	if k >= s.n {
		s.clear()
		return
	}
	s.tail = s.pos(s.end(k - 1))
	s.start += k
	if s.start >= len(s.idx) {
		s.start -= len(s.idx)
	}
	s.n -= k
	// Free the blocks wholly before tail.
	if d := int(s.tail/sbBlock - s.base); d > 0 {
		if s.spare == nil {
			s.spare = s.blocks[0]
		}
		m := copy(s.blocks, s.blocks[d:])
		clear(s.blocks[m:])
		s.blocks = s.blocks[:m]
		s.base += uint64(d)
	}
}

// popNewest removes the newest line (for growing the screen) and returns a
// view of it, valid until the next push.
func (s *scrollback) popNewest() sbLine {
	l := s.at(s.n - 1)
	if s.n == 1 {
		s.clear()
		return l
	}
	s.head, _ = s.span(s.n - 1)
	s.n--
	if k := int((s.head+sbBlock-1)/sbBlock - s.base); k < len(s.blocks) {
		// Blocks past the new head are empty now; keep one as the spare.
		if s.spare == nil {
			s.spare = s.blocks[k]
		}
		clear(s.blocks[k:])
		s.blocks = s.blocks[:k]
	}
	return l
}

func (s *scrollback) push(t *Terminal, l *line) {
	var p []byte
	var h uint64
	if l.fast {
		p = l.text[:l.used]
		for len(p) > 0 && p[len(p)-1] == ' ' {
			p = p[:len(p)-1]
		}
		if l.wrapped {
			h = 1
		}
		// The steady state of a shell printing lines, done here in one
		// function (calls are dear under WebAssembly): the line fits in
		// the current block, and the oldest line, if one must go, frees
		// no block. Anything else takes the general path below.
		head := s.head
		off := int(head % sbBlock)
		k := int(head/sbBlock - s.base)
		size := uint64(1 + len(p))
		if k < len(s.blocks) && off+int(size) <= sbBlock && head+size-s.tail <= sbMaxBytes {
			j := -1
			if s.n < s.max {
				if s.n < len(s.idx) {
					j = s.start + s.n
					if j >= len(s.idx) {
						j -= len(s.idx)
					}
					s.n++
				}
			} else if s.n == s.max && s.n == len(s.idx) && s.n > 0 {
				if tail := s.pos(s.idx[s.start]); tail/sbBlock == s.base {
					// dropOldest(1) without a block to free; the new
					// line takes the slot of the one evicted.
					s.tail = tail
					j = s.start
					s.start++
					if s.start == len(s.idx) {
						s.start = 0
					}
				}
			}
			if j >= 0 {
				b := s.blocks[k]
				b[off] = byte(h)
				copy(b[off+1:], p)
				s.head = head + size
				s.idx[j] = uint32(s.head)
				return
			}
		}
	} else {
		var text uint32
		s.enc, text = t.encodeLine(s.enc[:0], l.cells[:l.used])
		p = s.enc
		h = uint64((len(p)-int(text))/runSize) << 1
		if l.wrapped {
			h |= 1
		}
	}
	s.add(h, p)
}

// pushEncoded appends a line in the encoded form: text then runs.
func (s *scrollback) pushEncoded(b []byte, text int, wrapped bool) {
	h := uint64((len(b)-text)/runSize) << 1
	if wrapped {
		h |= 1
	}
	s.add(h, b)
}

// add appends a line of header h and body p (text then runs).
func (s *scrollback) add(h uint64, p []byte) {
	if s.n >= s.max {
		if s.max <= 0 {
			return
		}
		// The oldest goes before the new line's bytes are written, so
		// its block can be reused.
		s.dropOldest(s.n - s.max + 1)
	}
	// Evict for the byte bound before writing, not after (commit): a
	// block freed now is the spare the write takes, where evicting after
	// the write would allocate a new block whenever the head and the tail
	// cross a block boundary in the same line, about every other block.
	if need := s.head + uint64((bits.Len64(h|1)+6)/7+len(p)); s.n > 0 && need-s.tail > sbMaxBytes {
		k := 1
		for k < s.n && need-s.pos(s.end(k-1)) > sbMaxBytes {
			k++
		}
		s.dropOldest(k)
	}
	off := int(s.head % sbBlock)
	k := int(s.head/sbBlock - s.base)
	if h < 0x80 && k < len(s.blocks) && off+1+len(p) <= sbBlock {
		// The usual case: a one-byte header, and the line fits in the
		// current block.
		b := s.blocks[k]
		b[off] = byte(h)
		copy(b[off+1:], p)
		s.head += uint64(1 + len(p))
	} else {
		var buf [binary.MaxVarintLen64]byte
		s.write(buf[:binary.PutUvarint(buf[:], h)])
		s.write(p)
	}
	s.commit()
}

// bytes is the memory the scrollback holds.
func (s *scrollback) bytes() int {
	n := 4*cap(s.idx) + cap(s.scratch) + cap(s.enc) + cap(s.runs) + len(s.spare)
	for _, b := range s.blocks {
		n += len(b)
	}
	return n
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

// encodeLine appends the compact form of cells to dst: the text, then,
// if any cell is styled, the style runs. One pass over the cells, the text
// stored by index and the runs gathered aside (calls and branches are
// dear under WebAssembly, and a coloured line scrolling off is common):
// an ASCII cell in the current run's style is one compare; any other
// character is encoded without a branch (all four UTF-8 forms computed,
// the right one selected and stored as four bytes) and a wide one skips
// its right half.
func (t *Terminal) encodeLine(dst []byte, cells []cell) ([]byte, uint32) {
	cells = cells[:t.contentEnd(cells)]
	base := len(dst)
	// Room for a run per cell, so that a run is stored without a
	// capacity check (a call) each.
	runs := grow(t.sb.runs[:0], runSize*len(cells))
	dst = grow(dst, 4*len(cells)+4)
	buf := dst[:cap(dst)]
	n := len(dst)
	var or cell            // OR of all cells: nonzero style bits mean a styled line
	cur := uint64(1) << 63 // style<<32 of the current run: none at first
	for i := 0; i < len(cells); i++ {
		c := cells[i]
		or |= c
		if uint64(c)&^0x7f == cur {
			// An ASCII character (or a blank) in the current run's style.
			b := byte(c)
			if b == 0 {
				b = ' '
			}
			buf[n] = b
			n++
			continue
		}
		fl := c.flags()
		if fl&cellSpacer != 0 {
			continue
		}
		if st := uint64(c) & (0xffff << 32); st != cur {
			cur = st
			// appendRun, inline.
			s := &t.styles[c.style()]
			m := len(runs)
			runs = runs[:m+runSize]
			b := runs[m : m+runSize : m+runSize]
			binary.LittleEndian.PutUint16(b, uint16(n-base))
			binary.LittleEndian.PutUint32(b[2:], uint32(s.fg))
			binary.LittleEndian.PutUint32(b[6:], uint32(s.bg))
			binary.LittleEndian.PutUint32(b[10:], uint32(s.ul))
			binary.LittleEndian.PutUint16(b[14:], uint16(s.attrs))
			b[16] = s.ulStyle
		}
		if fl&cellGrapheme != 0 {
			dst = t.cellText(buf[:n], c)
			dst = grow(dst, 4*(len(cells)-i)+4)
			buf = dst[:cap(dst)]
			n = len(dst)
			continue
		}
		r := c.r()
		v, k := r, 1
		if r == 0 {
			v = ' '
		}
		if r >= 0x80 {
			v, k = 0x80C0|r>>6|(r&0x3F)<<8, 2
		}
		if r >= 0x800 {
			v, k = 0x8080E0|r>>12|(r>>6&0x3F)<<8|(r&0x3F)<<16, 3
		}
		if r >= 0x10000 {
			v, k = 0x808080F0|r>>18|(r>>12&0x3F)<<8|(r>>6&0x3F)<<16|(r&0x3F)<<24, 4
		}
		binary.LittleEndian.PutUint32(buf[n:n+4:n+4], v)
		n += k
		// A wide character's right half (a spacer) is skipped here.
		i += int(fl & cellWide & (cells[min(i+1, len(cells)-1)].flags() >> 1))
	}
	t.sb.runs = runs
	dst = buf[:n]
	text := uint32(n)
	if or.style() == 0 {
		return dst, text
	}
	return append(reserve(dst, len(runs)), runs...), text
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
