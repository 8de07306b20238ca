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
