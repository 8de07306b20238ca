package core

import (
	"encoding/binary"
	"math/bits"
)

// Parser states, after Paul Williams' DEC ANSI parser
// (https://vt100.net/emu/dec_ansi_parser). The values are part of the
// MarshalBinary format.
const (
	psGround uint8 = iota
	psEscape
	psEscInter
	psCSIEntry
	psCSIParam
	psCSIInter
	psCSIIgnore
	psDCSEntry
	psDCSParam
	psDCSInter
	psDCSPass
	psDCSIgnore
	psOSC
	psString // SOS, PM, APC: consumed and ignored
	psLast   = psString
)

// Limits on control sequences. Parameters past them are ignored, never
// buffered.
const (
	maxParams    = 32 // top-level parameters of a CSI or DCS
	maxSubParams = 16 // colon-separated subparameters of one parameter
	maxFlat      = 64 // parameters and subparameters together
	maxParamVal  = 65535
	maxOSC       = 4096 // an OSC or DCS payload longer than this is dropped
	maxReplies   = 1 << 16
)

// parser is the byte-level state of the escape sequence machine.
type parser struct {
	st      uint8
	priv    byte // private marker of a CSI/DCS: one of < = > ?, or 0
	ninter  uint8
	inter   [2]byte
	interOv bool // more intermediates than fit: the sequence is ignored

	np     uint8 // flat parameters in use
	ntop   uint8 // top-level parameters in use
	nsub   uint8 // subparameters of the current top-level parameter
	pDrop  bool  // the current parameter is past a limit: digits are dropped
	params [maxFlat]uint16
	sub    uint64           // bit i: params[i] followed a ':'
	top    [maxParams]uint8 // flat index of each top-level parameter

	str    []byte // OSC or DCS payload, at most maxOSC bytes
	strOv  bool   // payload exceeded maxOSC: dropped at dispatch
	dcsCmd [4]byte
	strBEL bool // the OSC ended with BEL (answers end the same way)

	// UTF-8 decoder state in the ground state.
	ucp   rune
	uneed uint8 // continuation bytes still expected
	ulen  uint8 // total length of the sequence being decoded
}

func (p *parser) clearParams() {
	p.priv, p.ninter, p.interOv = 0, 0, false
	p.np, p.ntop, p.nsub, p.pDrop, p.sub = 0, 0, 0, false, 0
}

// newParam starts a parameter after ';' (sub false) or ':' (sub true).
func (p *parser) newParam(sub bool) {
	if p.np == 0 {
		p.params[0] = 0
		p.top[0] = 0
		p.np, p.ntop = 1, 1
	}
	switch {
	case p.np >= maxFlat,
		!sub && p.ntop >= maxParams,
		sub && (p.nsub >= maxSubParams || p.pDrop):
		p.pDrop = true
		return
	}
	p.pDrop = false
	i := p.np
	p.params[i] = 0
	p.np++
	if sub {
		p.sub |= 1 << i
		p.nsub++
	} else {
		p.top[p.ntop] = i
		p.ntop++
		p.nsub = 0
	}
}

func (p *parser) digit(b byte) {
	if p.np == 0 {
		p.params[0] = 0
		p.top[0] = 0
		p.np, p.ntop = 1, 1
	}
	if p.pDrop {
		return
	}
	v := uint32(p.params[p.np-1])*10 + uint32(b-'0')
	if v > maxParamVal {
		v = maxParamVal
	}
	p.params[p.np-1] = uint16(v)
}

func (p *parser) collect(b byte) {
	if int(p.ninter) >= len(p.inter) {
		p.interOv = true
		return
	}
	p.inter[p.ninter] = b
	p.ninter++
}

// arg returns top-level parameter i, or def if it is absent or zero.
func (p *parser) arg(i int, def int) int {
	if i >= int(p.ntop) {
		return def
	}
	v := int(p.params[p.top[i]])
	if v == 0 {
		return def
	}
	return v
}

// raw returns top-level parameter i as given (0 if absent).
func (p *parser) raw(i int) int {
	if i >= int(p.ntop) {
		return 0
	}
	return int(p.params[p.top[i]])
}

func (p *parser) strPut(b byte) {
	if len(p.str) >= maxOSC {
		p.strOv = true
		return
	}
	p.str = append(p.str, b)
}

// Write feeds bytes from the peer. It never panics and does not allocate in
// steady state. Any split of a stream into Writes gives the same result.
func (t *Terminal) Write(b []byte) {
	p := &t.p
	for i := 0; i < len(b); {
		c := b[i]
		if p.st == psGround {
			if p.uneed == 0 {
				if c-0x20 < 0x5f {
					i = t.printASCII(b, i)
					continue
				}
				if c == 0x1B {
					if n := t.csiFast(b, i); n > 0 {
						i = n
						continue
					}
					t.ground(c)
					i++
					continue
				}
				switch c {
				case '\r':
					t.x, t.wrapNext, t.lastChar = 0, false, 0
					i++
					continue
				case '\n':
					t.lastChar = 0
					t.wrapNext = false
					if t.y != t.bot {
						if t.y < t.rows-1 {
							t.y++
						}
					} else {
						t.scrollUp1()
					}
					if t.lnm {
						t.x = 0
					}
					i++
					continue
				}
				if c >= 0xC2 {
					if n := t.printUTF8(b, i); n != i {
						i = n
						continue
					}
				} else if c < 0x80 {
					t.ground(c)
					i++
					continue
				}
			}
			t.utf8Byte(c)
			i++
			continue
		}
		t.advance(c)
		i++
	}
}

// csiFast runs the control sequence starting with the ESC at b[i] in one
// pass and returns the index after it, when it is a CSI whole in b made of
// an optional private marker, at most maxParams decimal parameters
// separated by ';' and a final byte: what SGR, cursor motion and erasing
// look like. Anything else (a colon, an intermediate, a control inside,
// the sequence cut by the end of b) returns 0 having changed nothing the
// state machine does not reset, and the bytes go through it one by one.
//
// The parameters are stored only where a handler reads them (SGR, and
// csiDispatch for the rest): what a finished sequence leaves in the parser
// is dead, and MarshalBinary writes it cleared.
func (t *Terminal) csiFast(b []byte, i int) int {
	j := i + 2
	if j >= len(b) || b[i+1] != '[' {
		return 0
	}
	p := &t.p
	var priv byte
	n := 0        // parameters stored
	seen := false // a digit or ';' was seen: at least one parameter
	v := uint32(0)
	// The short forms, most of what full-screen and colouring programs
	// send (CUP "12;1H", SGR "0m", "33m", "44;37m", EL "K"): at most
	// two parameters of at most three digits and the final byte within
	// the eight bytes after '[', parsed with word arithmetic instead of
	// a branch per byte.
	if j+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[j : j+8 : j+8])
		g := uint(bits.TrailingZeros64(swarNonDigit(x))) >> 3
		v0, v1 := shortNum(x, g), uint32(0)
		c := byte(x >> (8 * g))
		end := g
		if g > 0 {
			n = 1
		}
		if c == ';' && g <= 3 {
			x2 := x >> (8 * (g + 1))
			g = uint(bits.TrailingZeros64(swarNonDigit(x2))) >> 3
			v1 = shortNum(x2, g)
			c = byte(x2 >> (8 * g))
			n = 2
			end += 1 + g
		}
		if g <= 3 && c >= 0x40 && c <= 0x7E {
			p.params[0], p.params[1] = uint16(v0), uint16(v1)
			j += int(end)
			goto dispatch
		}
		n = 0
	}
	if c := b[j]; c >= 0x3C && c <= 0x3F {
		priv = c
		j++
	}
	// One iteration per parameter, not per byte: up to three digits are
	// read without going round the loop (a loop's back edge is an
	// indirect jump through the function's dispatch table in Go's
	// WebAssembly, a forward branch is not).
	for j < len(b) {
		if d := uint32(b[j]) - '0'; d < 10 {
			v = d
			j++
			seen = true
			if j < len(b) {
				if d := uint32(b[j]) - '0'; d < 10 {
					v = v*10 + d
					j++
					if j < len(b) {
						if d := uint32(b[j]) - '0'; d < 10 {
							v = v*10 + d
							j++
							for j < len(b) {
								d := uint32(b[j]) - '0'
								if d >= 10 {
									break
								}
								v = min(v*10+d, maxParamVal)
								j++
							}
						}
					}
				}
			}
			if j >= len(b) {
				break
			}
		}
		if b[j] != ';' {
			break
		}
		if n >= maxParams-1 {
			return 0
		}
		p.params[n] = uint16(v)
		n++
		v = 0
		seen = true
		j++
	}
	if j >= len(b) || b[j] < 0x40 || b[j] > 0x7E {
		return 0
	}
	if seen {
		p.params[n] = uint16(v)
		n++
	}
dispatch:
	if priv == 0 {
		// SGR, CUP and EL, the most frequent, without csiDispatch's
		// checks and search for the final byte.
		switch b[j] {
		case 'm':
			t.lastChar = 0
			if n == 0 || n == 1 && p.params[0] == 0 {
				// SGR 0, the most frequent: the default style is
				// always index 0, and its erase cell the zero cell.
				t.pen, t.penIdx = style{}, 0
				t.blank, t.blankStale = 0, false
				return j + 1
			}
			p.np, p.sub = uint8(n), 0
			t.sgr()
			if j+1 < len(b) && b[j+1]-0x20 < 0x5f {
				// The text the SGR colours, without the way back
				// through Write (its loop's back edge is an indirect
				// jump in Go's WebAssembly): dense colour output
				// takes 6% less CPU.
				return t.printASCII(b, j+1)
			}
			return j + 1
		case 'H':
			t.lastChar = 0
			y, x := 1, 1
			if n > 0 && p.params[0] != 0 {
				y = int(p.params[0])
			}
			if n > 1 && p.params[1] != 0 {
				x = int(p.params[1])
			}
			t.moveTo(x-1, y-1+t.homeRow()) // cup, inline
			return j + 1
		case 'K':
			t.lastChar = 0
			mode := 0
			if n > 0 {
				mode = int(p.params[0])
			}
			if mode == 0 && !t.wrapNext {
				t.eraseToEnd()
			} else {
				t.eraseLine(mode, false)
			}
			return j + 1
		}
	}
	p.clearParams()
	p.priv = priv
	p.np, p.ntop = uint8(n), uint8(n)
	for k := range n {
		p.top[k] = uint8(k)
	}
	t.csiDispatch(b[j])
	return j + 1
}

// swarNonDigit marks (0x80) the bytes of x that are not a decimal digit,
// exact up to and including the first marked byte (as swarNonPrintable):
// for bytes below 0x80, which do not carry, x+0x50 has its top bit set
// iff the byte is >= '0' and x+0x46 iff it is > '9'.
func swarNonDigit(x uint64) uint64 {
	const hi = 0x8080808080808080
	return (x | ^(x + 0x5050505050505050) | (x + 0x4646464646464646)) & hi
}

// shortNum is the number the first g (at most 3) bytes of x spell, all
// digits; 0 for g == 0.
func shortNum(x uint64, g uint) uint32 {
	d := x - 0x3030303030303030 // no borrow reaches a byte after digits only
	d0, d1, d2 := uint32(d&0xff), uint32(d>>8&0xff), uint32(d>>16&0xff)
	switch g {
	case 0:
		return 0
	case 1:
		return d0
	case 2:
		return d0*10 + d1
	}
	return d0*100 + d1*10 + d2
}

// utf8Byte decodes one byte of UTF-8 text in the ground state. Invalid
// sequences print U+FFFD.
func (t *Terminal) utf8Byte(c byte) {
	p := &t.p
	if p.uneed > 0 {
		if c&0xC0 == 0x80 {
			p.ucp = p.ucp<<6 | rune(c&0x3F)
			p.uneed--
			if p.uneed == 0 {
				r := p.ucp
				var min rune
				switch p.ulen {
				case 2:
					min = 0x80
				case 3:
					min = 0x800
				default:
					min = 0x10000
				}
				if r < min || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF) {
					r = 0xFFFD
				}
				t.print(r)
			}
			return
		}
		// Truncated sequence: replace it, then handle c afresh.
		p.uneed = 0
		t.print(0xFFFD)
		if c < 0x80 {
			if c >= 0x20 && c < 0x7f {
				t.print(rune(c))
			} else {
				t.ground(c)
			}
			return
		}
	}
	switch {
	case c >= 0xC2 && c <= 0xDF:
		p.ucp, p.uneed, p.ulen = rune(c&0x1F), 1, 2
	case c >= 0xE0 && c <= 0xEF:
		p.ucp, p.uneed, p.ulen = rune(c&0x0F), 2, 3
	case c >= 0xF0 && c <= 0xF4:
		p.ucp, p.uneed, p.ulen = rune(c&0x07), 3, 4
	default:
		t.print(0xFFFD)
	}
}

// ground handles a C0 control or DEL in the ground state.
func (t *Terminal) ground(c byte) {
	switch c {
	case 0x1B:
		t.p.clearParams()
		t.p.st = psEscape
	case 0x7F:
	default:
		t.execute(c)
	}
}

// advance runs the state machine for one byte outside the ground state.
func (t *Terminal) advance(c byte) {
	p := &t.p
	// Transitions from anywhere.
	switch c {
	case 0x18, 0x1A: // CAN, SUB abort the sequence
		t.strAbort()
		p.st = psGround
		return
	case 0x1B:
		t.strEnd()
		p.clearParams()
		p.st = psEscape
		return
	}
	switch p.st {
	case psOSC:
		switch {
		case c == 0x07:
			p.strBEL = true
			t.strEnd()
			p.st = psGround
		case c < 0x20:
		default:
			p.strPut(c)
		}
		return
	case psDCSPass:
		if c != 0x7F {
			p.strPut(c)
		}
		return
	case psDCSIgnore, psString:
		return
	}
	if c < 0x20 {
		if p.st >= psDCSEntry { // DCS entry/param/intermediate ignore C0
			return
		}
		t.execute(c)
		return
	}
	if c == 0x7F || c >= 0x80 {
		return
	}
	switch p.st {
	case psEscape:
		switch {
		case c < 0x30:
			p.collect(c)
			p.st = psEscInter
		case c == '[':
			p.st = psCSIEntry
		case c == ']':
			p.str = p.str[:0]
			p.strOv, p.strBEL = false, false
			p.st = psOSC
		case c == 'P':
			p.st = psDCSEntry
		case c == 'X', c == '^', c == '_':
			p.st = psString
		default:
			p.st = psGround
			t.escDispatch(c)
		}
	case psEscInter:
		if c < 0x30 {
			p.collect(c)
			return
		}
		p.st = psGround
		t.escDispatch(c)
	case psCSIEntry, psCSIParam, psDCSEntry, psDCSParam:
		dcs := p.st >= psDCSEntry
		switch {
		case c >= '0' && c <= '9':
			p.digit(c)
		case c == ';':
			p.newParam(false)
		case c == ':':
			p.newParam(true)
		case c >= 0x3C && c <= 0x3F:
			if p.st == psCSIEntry || p.st == psDCSEntry {
				p.priv = c
			} else if dcs {
				p.st = psDCSIgnore
				return
			} else {
				p.st = psCSIIgnore
				return
			}
		case c < 0x30:
			p.collect(c)
			if dcs {
				p.st = psDCSInter
			} else {
				p.st = psCSIInter
			}
			return
		default:
			if dcs {
				t.dcsHook(c)
			} else {
				p.st = psGround
				t.csiDispatch(c)
			}
			return
		}
		if dcs {
			p.st = psDCSParam
		} else {
			p.st = psCSIParam
		}
	case psCSIInter, psDCSInter:
		dcs := p.st == psDCSInter
		switch {
		case c < 0x30:
			p.collect(c)
		case c < 0x40:
			if dcs {
				p.st = psDCSIgnore
			} else {
				p.st = psCSIIgnore
			}
		default:
			if dcs {
				t.dcsHook(c)
			} else {
				p.st = psGround
				t.csiDispatch(c)
			}
		}
	case psCSIIgnore:
		if c >= 0x40 {
			p.st = psGround
		}
	}
}

func (t *Terminal) dcsHook(final byte) {
	p := &t.p
	p.str = p.str[:0]
	p.strOv = false
	p.dcsCmd = [4]byte{p.priv, 0, 0, final}
	if p.ninter > 0 {
		p.dcsCmd[1] = p.inter[0]
	}
	if p.ninter > 1 {
		p.dcsCmd[2] = p.inter[1]
	}
	if p.interOv {
		p.st = psDCSIgnore
		return
	}
	p.st = psDCSPass
}

// strEnd finishes an OSC or DCS string that ESC (as in ST) or BEL ended.
func (t *Terminal) strEnd() {
	p := &t.p
	switch p.st {
	case psOSC:
		if !p.strOv {
			t.oscDispatch(p.str)
		}
	case psDCSPass:
		if !p.strOv {
			t.dcsDispatch(p.dcsCmd, p.str)
		}
	}
	p.str = p.str[:0]
	p.strBEL = false
}

func (t *Terminal) strAbort() {
	t.p.str = t.p.str[:0]
	t.p.strBEL = false
}
