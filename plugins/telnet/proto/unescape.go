package proto

import (
	"encoding/binary"
	"math/bits"
)

// Unescaping: once a chunk holds an IAC IAC or a CR NUL, its data can no
// longer be passed on as sub-slices of the input without one Data call per
// run, so Receive copies it into c.dbuf instead, undoing the escapes on the
// way, and hands the result to Data once per stretch between commands.
//
// The copy loop is written for a wasm host that guards against runaway
// plugins: there every taken branch, and every call of a function that
// branches, costs a check (a trip out of the compiled code), while
// straight-line arithmetic is cheap. So unescapeBlock handles 64 input
// bytes without a single branch: it finds the IACs, CR NUL pairs and
// commands of the block as bit masks, word by word, pairs the IACs with
// carry arithmetic, and then stores every byte at the output position,
// advancing the position only past the bytes it keeps. The loop around it
// branches once per block.

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
	// Unescaping never makes data longer; blockLen more bytes let
	// unescapeBlock store 64 bytes at any output position.
	if need := mark + len(p) - start + blockLen; cap(c.dbuf) < need {
		grown := make([]byte, mark, max(need, 2*cap(c.dbuf)))
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
				break
			}
		}
		if cmd == 0 && i < len(p) {
			var tail [blockLen]byte
			copy(tail[:], p[i:])
			k, n, e, cr, cmd = unescapeBlock((*[blockLen]byte)(d[w:]), &tail, uint64(len(p)-i), e, cr, nvt, nop)
			w += int(k)
		}
		i += int(n)
		if w > mark {
			s.Data(d[mark:w])
			mark = w
		}
		if cmd == 0 { // the end of p
			c.dbuf = d[:w]
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
				c.dbuf = d[:w]
				c.state = stIAC
				return i
			}
			c.command(b, s)
			i++
		case i+1 < len(p):
			c.negotiate(b, p[i+1], s)
			i += 2
		default:
			c.dbuf = d[:w]
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
	var ff, crnul, nops, f, z, o uint64
	f, z, o, carry = maskWord(binary.LittleEndian.Uint64(in[0:]), carry, crs)
	ff, crnul, nops = f, z, o
	f, z, o, carry = maskWord(binary.LittleEndian.Uint64(in[8:]), carry, crs)
	ff, crnul, nops = ff|f<<8, crnul|z<<8, nops|o<<8
	f, z, o, carry = maskWord(binary.LittleEndian.Uint64(in[16:]), carry, crs)
	ff, crnul, nops = ff|f<<16, crnul|z<<16, nops|o<<16
	f, z, o, carry = maskWord(binary.LittleEndian.Uint64(in[24:]), carry, crs)
	ff, crnul, nops = ff|f<<24, crnul|z<<24, nops|o<<24
	f, z, o, carry = maskWord(binary.LittleEndian.Uint64(in[32:]), carry, crs)
	ff, crnul, nops = ff|f<<32, crnul|z<<32, nops|o<<32
	f, z, o, carry = maskWord(binary.LittleEndian.Uint64(in[40:]), carry, crs)
	ff, crnul, nops = ff|f<<40, crnul|z<<40, nops|o<<40
	f, z, o, carry = maskWord(binary.LittleEndian.Uint64(in[48:]), carry, crs)
	ff, crnul, nops = ff|f<<48, crnul|z<<48, nops|o<<48
	f, z, o, _ = maskWord(binary.LittleEndian.Uint64(in[56:]), carry, crs)
	ff, crnul, nops = ff|f<<56, crnul|z<<56, nops|o<<56

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

	keep := ^(firsts | crnul | quiet) & (uint64(1)<<used - 1)
	k, keep = put(out, 0, in[0], keep)
	k, keep = put(out, k, in[1], keep)
	k, keep = put(out, k, in[2], keep)
	k, keep = put(out, k, in[3], keep)
	k, keep = put(out, k, in[4], keep)
	k, keep = put(out, k, in[5], keep)
	k, keep = put(out, k, in[6], keep)
	k, keep = put(out, k, in[7], keep)
	k, keep = put(out, k, in[8], keep)
	k, keep = put(out, k, in[9], keep)
	k, keep = put(out, k, in[10], keep)
	k, keep = put(out, k, in[11], keep)
	k, keep = put(out, k, in[12], keep)
	k, keep = put(out, k, in[13], keep)
	k, keep = put(out, k, in[14], keep)
	k, keep = put(out, k, in[15], keep)
	k, keep = put(out, k, in[16], keep)
	k, keep = put(out, k, in[17], keep)
	k, keep = put(out, k, in[18], keep)
	k, keep = put(out, k, in[19], keep)
	k, keep = put(out, k, in[20], keep)
	k, keep = put(out, k, in[21], keep)
	k, keep = put(out, k, in[22], keep)
	k, keep = put(out, k, in[23], keep)
	k, keep = put(out, k, in[24], keep)
	k, keep = put(out, k, in[25], keep)
	k, keep = put(out, k, in[26], keep)
	k, keep = put(out, k, in[27], keep)
	k, keep = put(out, k, in[28], keep)
	k, keep = put(out, k, in[29], keep)
	k, keep = put(out, k, in[30], keep)
	k, keep = put(out, k, in[31], keep)
	k, keep = put(out, k, in[32], keep)
	k, keep = put(out, k, in[33], keep)
	k, keep = put(out, k, in[34], keep)
	k, keep = put(out, k, in[35], keep)
	k, keep = put(out, k, in[36], keep)
	k, keep = put(out, k, in[37], keep)
	k, keep = put(out, k, in[38], keep)
	k, keep = put(out, k, in[39], keep)
	k, keep = put(out, k, in[40], keep)
	k, keep = put(out, k, in[41], keep)
	k, keep = put(out, k, in[42], keep)
	k, keep = put(out, k, in[43], keep)
	k, keep = put(out, k, in[44], keep)
	k, keep = put(out, k, in[45], keep)
	k, keep = put(out, k, in[46], keep)
	k, keep = put(out, k, in[47], keep)
	k, keep = put(out, k, in[48], keep)
	k, keep = put(out, k, in[49], keep)
	k, keep = put(out, k, in[50], keep)
	k, keep = put(out, k, in[51], keep)
	k, keep = put(out, k, in[52], keep)
	k, keep = put(out, k, in[53], keep)
	k, keep = put(out, k, in[54], keep)
	k, keep = put(out, k, in[55], keep)
	k, keep = put(out, k, in[56], keep)
	k, keep = put(out, k, in[57], keep)
	k, keep = put(out, k, in[58], keep)
	k, keep = put(out, k, in[59], keep)
	k, keep = put(out, k, in[60], keep)
	k, keep = put(out, k, in[61], keep)
	k, keep = put(out, k, in[62], keep)
	k, keep = put(out, k, in[63], keep)
	return k, used, eOut, crOut, cmd
}

// put stores b at out[k] and returns k advanced if bit 0 of keep is set,
// and the next bit of keep. (Shifting keep one bit per byte, rather than by
// the byte's index, keeps the compiler from computing all 64 shifts first
// and spilling them.)
func put(out *[blockLen]byte, k uint64, b byte, keep uint64) (uint64, uint64) {
	out[k&(blockLen-1)] = b
	return k + keep&1, keep >> 1
}

// maskWord returns, one bit per byte of the little-endian word x, its
// IACs, its NULs after a CR (where crs is hiBits) and its NOPs; carry is
// hiBits&0xff if the byte before x was a CR, and carryOut the same for the
// next word.
func maskWord(x, carry, crs uint64) (ff, crnul, nop, carryOut uint64) {
	cr := zeroBytes(x^crBytes) & crs
	ff = gather(x & (x&low7 + loBits) & hiBits)
	return ff, gather((cr<<8 | carry) & zeroBytes(x)), gather(zeroBytes(x ^ nopBytes)), cr >> 56
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
