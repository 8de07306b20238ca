package proto

import (
	"encoding/binary"
	"math/bits"
)

// Unescaping: once a chunk holds an IAC IAC or a CR NUL (or, with DropNOP,
// an IAC NOP), its data can no longer be passed on as sub-slices of the
// input without one Data call per run, so Receive copies it into c.dbuf
// instead, undoing the escapes on the way, and hands the result to Data
// once per stretch between commands.
//
// The copy loop is written for a wasm host that guards against runaway
// plugins: there every taken branch, and every call of a function that
// branches, costs a check (a trip out of the compiled code), while
// straight-line arithmetic is cheap. So unescapeBlock handles 64 input
// bytes without a branch: it finds the IACs, CR NUL pairs, NOPs and
// commands of the block as bit masks, word by word, and pairs the IACs
// with carry arithmetic; then compact stores every byte at the output
// position, advancing the position only past the bytes kept (in the wasm
// build as 64 written-out stores; natively as a loop, see scan_*.go). The
// loop around it branches once per block.

// blockLen is the number of input bytes unescapeBlock handles per call.
const blockLen = 64

// unescape copies p[start:i] to c.dbuf and then unescapes p[i:] into it,
// to the end of p. Each stretch of data between two commands goes to
// s.Data in one call. Commands are handled on the way, except SB and a
// negotiation verb whose option byte is not in p: for those it stops with
// c.state == stIAC and returns the index of the command byte. Otherwise it
// returns len(p). cr is 1 if p[i-1] was a data CR outside BINARY mode (so
// a NUL at p[i] is dropped).
//
// c.dbuf only grows within one Receive, so every slice passed to Data stays
// valid until Receive returns.
func (c *Conn) unescape(p []byte, start, i int, cr uint64, s Sink) int {
	mark := len(c.dbuf)
	// Unescaping never makes data longer, and every byte already in dbuf
	// came from a byte of p before start, so len(p) is enough; blockLen
	// more let unescapeBlock store 64 bytes at any output position.
	if cap(c.dbuf) < mark+len(p)-start+blockLen {
		grown := make([]byte, mark, len(p)+blockLen)
		copy(grown, c.dbuf) // slices already passed to Data keep the old array
		c.dbuf = grown
	}
	d := c.dbuf[:cap(c.dbuf)]
	w := mark + copy(d[mark:], p[start:i])
	for {
		var nvt, nop uint64 // nvt is recomputed after every command: the Sink may have called Request
		if c.him[BINARY] != qYES {
			nvt = 1
		}
		if c.dropNOP {
			nop = 1
		}
		var k, n, e, cmd uint64
		for ; i+blockLen <= len(p); i += blockLen {
			k, n, e, cr, cmd = unescapeBlock((*[blockLen]byte)(d[w:]), (*[blockLen]byte)(p[i:]), blockLen, e, cr, nvt, nop)
			w += int(k)
			if cmd != 0 {
				i += int(n)
				break
			}
		}
		if cmd == 0 && i < len(p) {
			var tail [blockLen]byte
			copy(tail[:], p[i:])
			k, n, e, cr, cmd = unescapeBlock((*[blockLen]byte)(d[w:]), &tail, uint64(len(p)-i), e, cr, nvt, nop)
			w += int(k)
			i += int(n)
		}
		c.dbuf = d[:w]
		if w > mark {
			s.Data(d[mark:w])
			mark = w
		}
		if cmd == 0 { // the end of p
			if e != 0 {
				c.state = stIAC
			}
			c.crPending = cr != 0
			return i
		}
		// p[i] follows an IAC and is not an IAC: a command.
		switch b := p[i]; {
		case b < WILL || b > DONT:
			if b == SB {
				c.state = stIAC
				return i
			}
			c.command(b, s)
			i++
		case i+1 < len(p):
			c.negotiate(b, p[i+1], s)
			i += 2
		default:
			c.state = stIAC
			return i
		}
		cr = 0
	}
}

// unescapeBlock unescapes the first n (1 ≤ n ≤ 64) bytes of in into out,
// up to the first command. e is 1 if the byte before in[0] was an IAC that
// starts an escape or command; cr is 1 if it was a data CR and nvt is 1
// (outside BINARY mode, where CR NUL stands for CR). nop is 1 to drop IAC
// NOP like an escape that stands for nothing. It returns the number
// of bytes stored in out, the number of input bytes used, and either
// cmd == 1 (in[used] is a command byte: it follows an unpaired IAC and is
// not an IAC) or the states after in[n-1].
//
// No branches, no bounds checks (see the top of the file). Bytes past
// out[k] are overwritten with garbage.
func unescapeBlock(out, in *[blockLen]byte, n, e, cr, nvt, nop uint64) (k, used, eOut, crOut, cmd uint64) {
	// Bit j of ff: in[j] is an IAC. Bit j of crnul: in[j] is a NUL after
	// a data CR (nvt only). Bit j of nops: in[j] is a NOP.
	crs := -nvt & hiBits
	carry := cr & nvt << 7
	var ff, nops, crnul uint64
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[0:]), 0, ff, nops)
	crnul, carry = crNULs(binary.LittleEndian.Uint64(in[0:]), 0, crnul, carry, crs)
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[8:]), 8, ff, nops)
	crnul, carry = crNULs(binary.LittleEndian.Uint64(in[8:]), 8, crnul, carry, crs)
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[16:]), 16, ff, nops)
	crnul, carry = crNULs(binary.LittleEndian.Uint64(in[16:]), 16, crnul, carry, crs)
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[24:]), 24, ff, nops)
	crnul, carry = crNULs(binary.LittleEndian.Uint64(in[24:]), 24, crnul, carry, crs)
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[32:]), 32, ff, nops)
	crnul, carry = crNULs(binary.LittleEndian.Uint64(in[32:]), 32, crnul, carry, crs)
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[40:]), 40, ff, nops)
	crnul, carry = crNULs(binary.LittleEndian.Uint64(in[40:]), 40, crnul, carry, crs)
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[48:]), 48, ff, nops)
	crnul, carry = crNULs(binary.LittleEndian.Uint64(in[48:]), 48, crnul, carry, crs)
	ff, nops = iacsNOPs(binary.LittleEndian.Uint64(in[56:]), 56, ff, nops)
	crnul, _ = crNULs(binary.LittleEndian.Uint64(in[56:]), 56, crnul, carry, crs)

	// Pair the IACs of each run from its start: the first of each pair is
	// dropped, the second is a 0xFF data byte. So the dropped IACs of a run
	// that starts at an even bit are its even bits, those of a run that
	// starts at an odd bit its odd bits; with e, the run at bit 0 continues
	// a pair begun at bit -1 and counts as starting at an odd bit. Adding
	// the start bits of the even-start runs to ff clears exactly those runs
	// (the carry runs through each), which tells the two kinds apart (as
	// simdjson finds odd-length backslash sequences).
	const even = 0x5555555555555555
	starts := ff &^ (ff << 1)
	evenRuns := ff &^ (ff + starts&(even^e))
	firsts := evenRuns&even | ff&^evenRuns&^even
	// A command byte follows an unpaired IAC and is not an IAC. One at or
	// past n (in bytes that do not count) leaves used == n. With nop, a
	// NOP there is dropped like the IAC before it.
	pending := firsts<<1 | e
	quiet := pending & nops & -nop
	cmds := pending &^ ff &^ quiet
	used = min(uint64(bits.TrailingZeros64(cmds)), n)
	cmd = (used - n) >> 63
	eOut = firsts >> ((n - 1) & (blockLen - 1)) & 1
	last := uint64(in[(n-1)&(blockLen-1)]) ^ '\r' // 0 if in[n-1] is a CR
	crOut = (last - 1) >> 63 & nvt

	k = compact(out, in, ^(firsts | crnul | quiet), used)
	return k, used, eOut, crOut, cmd
}

// iacsNOPs adds to ff and nops, from bit at on, one bit per byte of the
// little-endian word x: its IACs and its NOPs. (Two small functions rather
// than one, so that both are inlined.)
func iacsNOPs(x uint64, at uint, ff, nops uint64) (uint64, uint64) {
	return ff | gather(x&(x&low7+loBits)&hiBits)<<at, nops | gather(zeroBytes(x^nopBytes))<<at
}

// crNULs adds to crnul, from bit at on, one bit per byte of the
// little-endian word x that is a NUL after a CR, if crs is hiBits. carry is
// hiBits&0xff if the byte before x was a CR; the carry for the next word is
// returned.
func crNULs(x uint64, at uint, crnul, carry, crs uint64) (uint64, uint64) {
	cr := zeroBytes(x^crBytes) & crs
	return crnul | gather((cr<<8|carry)&zeroBytes(x))<<at, cr >> 56
}

// gather packs the high bits of the eight bytes of m (all other bits
// clear) into the low eight bits: the multiplication moves byte j's bit to
// bit 56+j, and no two partial products meet, so nothing carries.
func gather(m uint64) uint64 { return (m >> 7) * 0x0102040810204080 >> 56 }

const (
	loBits   = 0x0101010101010101
	hiBits   = 0x8080808080808080
	low7     = 0x7f7f7f7f7f7f7f7f
	crBytes  = '\r' * loBits
	nopBytes = uint64(NOP) * loBits
)

// zeroBytes sets the high bit of exactly the zero bytes of x: no borrow
// crosses a byte, unlike the classic (x-0x01…)&^x&0x80… test.
func zeroBytes(x uint64) uint64 { return ^(x&low7 + low7 | x | low7) }
