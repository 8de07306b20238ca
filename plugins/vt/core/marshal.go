package core

import (
	"encoding/binary"
	"errors"
	"fmt"
)

const marshalMagic = "THVT\x01"

// MarshalBinary encodes the complete state: screens, scrollback, modes,
// cursor, pen, tab stops, title and the parser mid-sequence, so another
// instance (another build) can carry on where this one stopped.
func (t *Terminal) MarshalBinary() ([]byte, error) {
	e := encoder{b: make([]byte, 0, 64+t.cols*t.rows*14)}
	e.b = append(e.b, marshalMagic...)
	e.uv(t.cols)
	e.uv(t.rows)
	e.uv(t.sb.max)
	e.uv(len(t.styles))
	for _, s := range t.styles {
		e.b = appendStyle(e.b, s)
	}
	e.uv(t.graphemes.n())
	for i := range uint32(t.graphemes.n()) {
		g := t.graphemes.at(i)
		e.uv(len(g))
		e.b = append(e.b, g...)
	}
	for _, s := range []*screen{t.main, t.alt} {
		for y := 0; y < t.rows; y++ {
			l := s.line(y)
			e.bool(l.wrapped)
			for _, c := range l.cells {
				e.b = binary.LittleEndian.AppendUint32(e.b, c.r())
				e.b = binary.LittleEndian.AppendUint16(e.b, c.style())
				e.b = append(e.b, c.flags())
			}
		}
	}
	e.bool(t.cur == t.alt)
	e.uv(t.x)
	e.uv(t.y)
	e.bool(t.wrapNext)
	e.b = appendStyle(e.b, t.pen)
	e.uv(t.top)
	e.uv(t.bot)
	for _, v := range t.tabs {
		e.bool(v)
	}
	e.b = append(e.b, t.charsets[:]...)
	e.b = append(e.b, t.gl, t.ss)
	for _, s := range t.saved {
		e.uv(s.x)
		e.uv(s.y)
		e.bool(s.wrapNext)
		e.b = appendStyle(e.b, s.pen)
		e.bool(s.origin)
		e.b = append(e.b, s.charsets[:]...)
		e.b = append(e.b, s.gl)
		e.bool(s.valid)
	}
	e.uv(int(t.lastChar))
	for _, v := range t.boolModes() {
		e.bool(*v)
	}
	e.uv(t.mouse)
	e.uv(t.mouseEnc)
	e.uv(t.cursorStyle)
	e.str(t.title)
	e.str(t.icon)
	e.uv(t.sb.n)
	for i := 0; i < t.sb.n; i++ {
		l := t.sb.at(i)
		e.bool(l.wrapped)
		e.uv(int(l.text))
		e.uv(len(l.b))
		e.b = append(e.b, l.b...)
	}
	p := &t.p
	if p.st == psGround || p.uneed == 0 {
		// What the ground state and a finished UTF-8 sequence leave in the
		// parser is dead (the next ESC clears the parameters, the next
		// lead byte sets the decoder): it is written cleared, so the fast
		// paths, which skip storing it, marshal as the state machine does.
		q := *p
		p = &q
		if q.st == psGround {
			q.priv, q.ninter, q.inter, q.interOv = 0, 0, [2]byte{}, false
			q.np, q.ntop, q.nsub, q.pDrop, q.sub = 0, 0, 0, false, 0
		}
		if q.uneed == 0 {
			q.ucp, q.ulen = 0, 0
		}
	}
	e.b = append(e.b, p.st, p.priv, p.ninter, p.inter[0], p.inter[1])
	e.bool(p.interOv)
	e.b = append(e.b, p.np, p.ntop, p.nsub)
	e.bool(p.pDrop)
	for _, v := range p.params[:p.np] {
		e.uv(int(v))
	}
	e.b = binary.LittleEndian.AppendUint64(e.b, p.sub)
	e.b = append(e.b, p.top[:p.ntop]...)
	e.str(string(p.str))
	e.bool(p.strOv)
	e.b = append(e.b, p.dcsCmd[:]...)
	e.bool(p.strBEL)
	e.uv(int(p.ucp))
	e.b = append(e.b, p.uneed, p.ulen)
	return e.b, nil
}

func (t *Terminal) boolModes() []*bool {
	return []*bool{&t.insert, &t.lnm, &t.origin, &t.autowrap, &t.cursorVisible,
		&t.appCursor, &t.appKeypad, &t.bracketed, &t.focus,
		&t.reverseVideo, &t.cursorBlink, &t.reverseWrap, &t.syncOutput, &t.altScroll}
}

type encoder struct{ b []byte }

func (e *encoder) uv(v int)     { e.b = binary.AppendUvarint(e.b, uint64(v)) }
func (e *encoder) bool(v bool)  { e.b = append(e.b, b2u(v)) }
func (e *encoder) str(s string) { e.uv(len(s)); e.b = append(e.b, s...) }
func b2u(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// errState is returned for any malformed state.
var errState = errors.New("vt: invalid terminal state")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errState, what)
	}
}

func (d *decoder) u8() byte {
	if len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bool() bool {
	v := d.u8()
	if v > 1 {
		d.fail("bad boolean")
	}
	return v == 1
}

// uv reads an unsigned varint no larger than max.
func (d *decoder) uv(max int, what string) int {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated " + what)
		return 0
	}
	d.b = d.b[n:]
	if v > uint64(max) {
		d.fail(what + " out of range")
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str(max int, what string) string {
	n := d.uv(max, what)
	return string(d.bytes(n))
}

func (d *decoder) style() style {
	b := d.bytes(styleSize)
	if b == nil {
		return style{}
	}
	s := readStyle(b)
	if s.ulStyle > 5 || !validColor(s.fg) || !validColor(s.bg) || !validColor(s.ul) {
		d.fail("bad style")
	}
	return s
}

func validColor(c Color) bool {
	switch c & 0xff000000 {
	case 0:
		return c == 0
	case colorIndexed:
		return c&0x00ffff00 == 0
	case colorRGB:
		return true
	}
	return false
}

// UnmarshalBinary replaces t's state with one from MarshalBinary. Malformed
// input gives an error and leaves t unchanged.
func (t *Terminal) UnmarshalBinary(b []byte) error {
	if len(b) < len(marshalMagic) || string(b[:len(marshalMagic)]) != marshalMagic {
		return fmt.Errorf("%w: not a vt state (bad magic or version)", errState)
	}
	d := &decoder{b: b[len(marshalMagic):]}
	n := &Terminal{graphGen: 1}
	n.cols = d.uv(maxDim, "cols")
	n.rows = d.uv(maxDim, "rows")
	if d.err == nil && (n.cols < 1 || n.rows < 1 || n.cols*n.rows > MaxCells) {
		d.fail("size")
	}
	n.sb.max = d.uv(maxScrollbackLines, "scrollback size")
	ns := d.uv(maxStyles, "style count")
	if d.err != nil {
		return d.err
	}
	if ns < 1 || ns*styleSize > len(d.b) {
		d.fail("style count")
		return d.err
	}
	n.styles = make([]style, ns)
	for i := range n.styles {
		n.styles[i] = d.style()
	}
	n.rebuildStyleSlots()
	if n.styles[0] != (style{}) {
		d.fail("style 0 is not the default")
	}
	ng := d.uv(maxGraphemes, "grapheme count")
	if d.err != nil || ng > len(d.b) {
		d.fail("grapheme count")
		return d.err
	}
	n.graphemes = graphTable{}
	for range ng {
		g := d.str(maxMarksBytes+8, "grapheme")
		if len(g) == 0 {
			d.fail("empty grapheme")
		}
		n.graphemes.add([]byte(g))
	}
	n.rebuildGraphSlots()
	if d.err != nil || 2*n.rows*(1+7*n.cols) > len(d.b) {
		d.fail("truncated screens")
		return d.err
	}
	n.main = newScreen(n.cols, n.rows, cell(0))
	n.alt = newScreen(n.cols, n.rows, cell(0))
	for _, s := range []*screen{n.main, n.alt} {
		for y := 0; y < n.rows; y++ {
			l := s.line(y)
			l.wrapped = d.bool()
			raw := d.bytes(7 * n.cols)
			if raw == nil {
				return d.err
			}
			for x := range l.cells {
				c := mkCell(binary.LittleEndian.Uint32(raw[7*x:]), binary.LittleEndian.Uint16(raw[7*x+4:]), raw[7*x+6])
				switch {
				case int(c.style()) >= ns:
					d.fail("cell style")
				case c.flags()&^(cellWide|cellSpacer|cellGrapheme) != 0, c.flags()&(cellWide|cellSpacer) == cellWide|cellSpacer:
					d.fail("cell flags")
				case c.flags()&cellGrapheme != 0 && int(c.r()) >= ng:
					d.fail("cell grapheme")
				case c.flags()&cellGrapheme == 0 && (c.r() > 0x10FFFF || (c.r() < 0x20 && c.r() != 0)):
					d.fail("cell rune")
				}
				l.cells[x] = c
			}
			l.recount()
			// Wide characters must be whole.
			for x, c := range l.cells {
				if c.flags()&cellWide != 0 && (x+1 >= n.cols || l.cells[x+1].flags()&cellSpacer == 0) {
					d.fail("wide cell without spacer")
				}
				if c.flags()&cellSpacer != 0 && (x == 0 || l.cells[x-1].flags()&cellWide == 0) {
					d.fail("spacer without wide cell")
				}
			}
		}
	}
	n.cur = n.main
	if d.bool() {
		n.cur = n.alt
	}
	n.x = d.uv(n.cols-1, "cursor column")
	n.y = d.uv(n.rows-1, "cursor row")
	n.wrapNext = d.bool()
	pen := d.style()
	n.top = d.uv(n.rows-1, "top margin")
	n.bot = d.uv(n.rows-1, "bottom margin")
	if n.top >= n.bot && n.rows > 1 || n.top > n.bot {
		d.fail("margins")
	}
	n.tabs = make([]bool, n.cols)
	for i := range n.tabs {
		n.tabs[i] = d.bool()
	}
	validCS := func(cs []byte) {
		for _, c := range cs {
			if c != 'B' && c != '0' && c != 'A' {
				d.fail("charset")
			}
		}
	}
	copy(n.charsets[:], d.bytes(4))
	validCS(n.charsets[:])
	n.gl, n.ss = d.u8(), d.u8()
	if n.gl > 3 || (n.ss != 0 && n.ss != 2 && n.ss != 3) {
		d.fail("charset shift")
	}
	for i := range n.saved {
		s := &n.saved[i]
		s.x = d.uv(maxDim, "saved column")
		s.y = d.uv(maxDim, "saved row")
		s.wrapNext = d.bool()
		s.pen = d.style()
		s.origin = d.bool()
		copy(s.charsets[:], d.bytes(4))
		s.gl = d.u8()
		s.valid = d.bool()
		if s.valid {
			validCS(s.charsets[:])
		}
		if s.gl > 3 {
			d.fail("saved shift")
		}
	}
	n.lastChar = rune(d.uv(0x10FFFF, "last character"))
	for _, v := range n.boolModes() {
		*v = d.bool()
	}
	n.mouse = d.uv(1003, "mouse mode")
	n.mouseEnc = d.uv(1015, "mouse encoding")
	n.cursorStyle = d.uv(6, "cursor style")
	n.title = d.str(maxOSC, "title")
	n.icon = d.str(maxOSC, "icon")
	sbn := d.uv(n.sb.max, "scrollback length")
	if d.err != nil || sbn > len(d.b) {
		d.fail("scrollback length")
		return d.err
	}
	for i := 0; i < sbn && d.err == nil; i++ {
		wrapped := d.bool()
		text := d.uv(1<<20, "scrollback text")
		b := d.bytes(d.uv(1<<22, "scrollback line"))
		if d.err == nil && !validLine(b, text) {
			d.fail("scrollback line")
		}
		if d.err == nil {
			n.sb.pushEncoded(b, text, wrapped)
		}
	}
	p := &n.p
	p.st, p.priv, p.ninter = d.u8(), d.u8(), d.u8()
	p.inter[0], p.inter[1] = d.u8(), d.u8()
	p.interOv = d.bool()
	p.np, p.ntop, p.nsub = d.u8(), d.u8(), d.u8()
	p.pDrop = d.bool()
	if p.st > psLast || p.ninter > 2 || p.np > maxFlat || p.ntop > maxParams || p.ntop > p.np || p.nsub > maxSubParams {
		d.fail("parser state")
		return d.err
	}
	for i := range p.params[:p.np] {
		p.params[i] = uint16(d.uv(maxParamVal, "parameter"))
	}
	sb := d.bytes(8)
	if sb != nil {
		p.sub = binary.LittleEndian.Uint64(sb)
	}
	copy(p.top[:p.ntop], d.bytes(int(p.ntop)))
	for _, v := range p.top[:p.ntop] {
		if v >= p.np {
			d.fail("parameter index")
		}
	}
	p.str = append(make([]byte, 0, 256), d.str(maxOSC, "string payload")...)
	p.strOv = d.bool()
	copy(p.dcsCmd[:], d.bytes(4))
	p.strBEL = d.bool()
	p.ucp = rune(d.uv(0x1FFFFF, "utf-8 state"))
	p.uneed, p.ulen = d.u8(), d.u8()
	if p.uneed > 3 || p.ulen > 4 {
		d.fail("utf-8 state")
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return d.err
	}
	n.pen = pen
	n.penIdx = n.intern(pen)
	n.blank = mkCell(0, n.intern(style{bg: pen.bg}), 0)
	*t = *n
	return nil
}

// validLine checks an encoded scrollback line (text then runs) from an
// imported state: whole runs, offsets in order inside the text, valid
// styles.
func validLine(b []byte, text int) bool {
	if text > len(b) || (len(b)-text)%runSize != 0 {
		return false
	}
	prev := 0
	for r := b[text:]; len(r) > 0; r = r[runSize:] {
		off := int(binary.LittleEndian.Uint16(r))
		s := readStyle(r[2:])
		if off < prev || off > text || s.ulStyle > 5 || !validColor(s.fg) || !validColor(s.bg) || !validColor(s.ul) {
			return false
		}
		prev = off
	}
	return true
}
