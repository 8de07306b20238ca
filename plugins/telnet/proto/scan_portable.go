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
	return k
}

// put stores b at out[k] and returns k advanced if bit 0 of keep is set,
// and keep shifted to the next byte's bit.
func put(out *[blockLen]byte, k uint64, b byte, keep uint64) (uint64, uint64) {
	out[k&(blockLen-1)] = b
	return k + keep&1, keep >> 1
}
