//go:build wasm || portablescan

package proto

import (
	"encoding/binary"
	"math/bits"
)

// indexByte is bytes.IndexByte for WebAssembly. Build natively with
// -tags portablescan to benchmark the same code outside wasm. Go's wasm IndexByte is a
// byte-at-a-time loop, and a host that guards against runaway plugins
// (wazero's WithCloseOnContextDone) pays a check on every loop iteration;
// testing eight bytes per iteration ("has a zero byte" on x ^ c·0x01…01)
// cuts both costs eightfold.
func indexByte(p []byte, c byte) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	rep := uint64(c) * lo
	i := 0
	for ; i+32 <= len(p); i += 32 {
		a := binary.LittleEndian.Uint64(p[i:]) ^ rep
		b := binary.LittleEndian.Uint64(p[i+8:]) ^ rep
		d := binary.LittleEndian.Uint64(p[i+16:]) ^ rep
		e := binary.LittleEndian.Uint64(p[i+24:]) ^ rep
		if (a-lo)&^a&hi|(b-lo)&^b&hi|(d-lo)&^d&hi|(e-lo)&^e&hi != 0 {
			break // the 8-byte loop below finds the exact position
		}
	}
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:]) ^ rep
		// The lowest flagged byte is always a true match (false flags can
		// only appear above a true zero byte).
		if m := (x - lo) &^ x & hi; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(p); i++ {
		if p[i] == c {
			return i
		}
	}
	return -1
}

// indexSpecial returns the index of the first byte of p that keeps p from
// being passed on as data unchanged: an IAC or, if nvt, a NUL right after a
// CR. It returns -1 if there is none.
//
// Both tests are one pass, 32 bytes per iteration, so that a line's CR LF
// costs nothing (stopping at every CR to look at the next byte would cost a
// check per line under a guard). The per-byte tests are exact (no borrow
// crosses a byte), so a CR flag can be shifted onto the next byte and
// carried into the next word.
func indexSpecial(p []byte, nvt bool) int {
	var crs uint64 // CR flags count only outside BINARY mode
	if nvt {
		crs = hiBits
	}
	var carry uint64 // hiBits&0xff if the byte before the current word was a CR
	i := 0
	for ; i+32 <= len(p); i += 32 {
		q := (*[32]byte)(p[i:])
		a, ca := specialWord(binary.LittleEndian.Uint64(q[0:]), carry, crs)
		b, cb := specialWord(binary.LittleEndian.Uint64(q[8:]), ca, crs)
		d, cd := specialWord(binary.LittleEndian.Uint64(q[16:]), cb, crs)
		e, ce := specialWord(binary.LittleEndian.Uint64(q[24:]), cd, crs)
		if a|b|d|e != 0 {
			switch {
			case a != 0:
				return i + bits.TrailingZeros64(a)/8
			case b != 0:
				return i + 8 + bits.TrailingZeros64(b)/8
			case d != 0:
				return i + 16 + bits.TrailingZeros64(d)/8
			}
			return i + 24 + bits.TrailingZeros64(e)/8
		}
		carry = ce
	}
	for ; i+8 <= len(p); i += 8 {
		var m uint64
		if m, carry = specialWord(binary.LittleEndian.Uint64(p[i:]), carry, crs); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	prevCR := carry != 0
	for ; i < len(p); i++ {
		if p[i] == IAC || p[i] == 0 && prevCR {
			return i
		}
		prevCR = nvt && p[i] == '\r'
	}
	return -1
}

// specialWord flags (high bit of the byte) the IACs in the little-endian
// word x and, where crs is hiBits, the NULs after a CR; carry flags byte 0
// as following a CR. It returns the flags and the carry for the next word.
func specialWord(x, carry, crs uint64) (m, carryOut uint64) {
	ff := x & (x&low7 + loBits) & hiBits
	cr := zeroBytes(x^crBytes) & crs
	return ff | (cr<<8|carry)&zeroBytes(x), cr >> 56
}

// compact stores the bytes of in[:used] whose bit is set in keep at out[0],
// out[1], ... and returns how many; it may store garbage in the rest of
// out. Under a wasm guard a loop would cost a check per byte, so all 64
// stores are written out, each at the output position, which only advances
// past the bytes kept: no branch.
func compact(out, in *[blockLen]byte, keep, used uint64) (k uint64) {
	keep &= uint64(1)<<used - 1
	out[0], k = in[0], keep&1
	out[k&(blockLen-1)], k = in[1], k+keep>>1&1
	out[k&(blockLen-1)], k = in[2], k+keep>>2&1
	out[k&(blockLen-1)], k = in[3], k+keep>>3&1
	out[k&(blockLen-1)], k = in[4], k+keep>>4&1
	out[k&(blockLen-1)], k = in[5], k+keep>>5&1
	out[k&(blockLen-1)], k = in[6], k+keep>>6&1
	out[k&(blockLen-1)], k = in[7], k+keep>>7&1
	out[k&(blockLen-1)], k = in[8], k+keep>>8&1
	out[k&(blockLen-1)], k = in[9], k+keep>>9&1
	out[k&(blockLen-1)], k = in[10], k+keep>>10&1
	out[k&(blockLen-1)], k = in[11], k+keep>>11&1
	out[k&(blockLen-1)], k = in[12], k+keep>>12&1
	out[k&(blockLen-1)], k = in[13], k+keep>>13&1
	out[k&(blockLen-1)], k = in[14], k+keep>>14&1
	out[k&(blockLen-1)], k = in[15], k+keep>>15&1
	out[k&(blockLen-1)], k = in[16], k+keep>>16&1
	out[k&(blockLen-1)], k = in[17], k+keep>>17&1
	out[k&(blockLen-1)], k = in[18], k+keep>>18&1
	out[k&(blockLen-1)], k = in[19], k+keep>>19&1
	out[k&(blockLen-1)], k = in[20], k+keep>>20&1
	out[k&(blockLen-1)], k = in[21], k+keep>>21&1
	out[k&(blockLen-1)], k = in[22], k+keep>>22&1
	out[k&(blockLen-1)], k = in[23], k+keep>>23&1
	out[k&(blockLen-1)], k = in[24], k+keep>>24&1
	out[k&(blockLen-1)], k = in[25], k+keep>>25&1
	out[k&(blockLen-1)], k = in[26], k+keep>>26&1
	out[k&(blockLen-1)], k = in[27], k+keep>>27&1
	out[k&(blockLen-1)], k = in[28], k+keep>>28&1
	out[k&(blockLen-1)], k = in[29], k+keep>>29&1
	out[k&(blockLen-1)], k = in[30], k+keep>>30&1
	out[k&(blockLen-1)], k = in[31], k+keep>>31&1
	out[k&(blockLen-1)], k = in[32], k+keep>>32&1
	out[k&(blockLen-1)], k = in[33], k+keep>>33&1
	out[k&(blockLen-1)], k = in[34], k+keep>>34&1
	out[k&(blockLen-1)], k = in[35], k+keep>>35&1
	out[k&(blockLen-1)], k = in[36], k+keep>>36&1
	out[k&(blockLen-1)], k = in[37], k+keep>>37&1
	out[k&(blockLen-1)], k = in[38], k+keep>>38&1
	out[k&(blockLen-1)], k = in[39], k+keep>>39&1
	out[k&(blockLen-1)], k = in[40], k+keep>>40&1
	out[k&(blockLen-1)], k = in[41], k+keep>>41&1
	out[k&(blockLen-1)], k = in[42], k+keep>>42&1
	out[k&(blockLen-1)], k = in[43], k+keep>>43&1
	out[k&(blockLen-1)], k = in[44], k+keep>>44&1
	out[k&(blockLen-1)], k = in[45], k+keep>>45&1
	out[k&(blockLen-1)], k = in[46], k+keep>>46&1
	out[k&(blockLen-1)], k = in[47], k+keep>>47&1
	out[k&(blockLen-1)], k = in[48], k+keep>>48&1
	out[k&(blockLen-1)], k = in[49], k+keep>>49&1
	out[k&(blockLen-1)], k = in[50], k+keep>>50&1
	out[k&(blockLen-1)], k = in[51], k+keep>>51&1
	out[k&(blockLen-1)], k = in[52], k+keep>>52&1
	out[k&(blockLen-1)], k = in[53], k+keep>>53&1
	out[k&(blockLen-1)], k = in[54], k+keep>>54&1
	out[k&(blockLen-1)], k = in[55], k+keep>>55&1
	out[k&(blockLen-1)], k = in[56], k+keep>>56&1
	out[k&(blockLen-1)], k = in[57], k+keep>>57&1
	out[k&(blockLen-1)], k = in[58], k+keep>>58&1
	out[k&(blockLen-1)], k = in[59], k+keep>>59&1
	out[k&(blockLen-1)], k = in[60], k+keep>>60&1
	out[k&(blockLen-1)], k = in[61], k+keep>>61&1
	out[k&(blockLen-1)], k = in[62], k+keep>>62&1
	out[k&(blockLen-1)], k = in[63], k+keep>>63&1
	return k
}
