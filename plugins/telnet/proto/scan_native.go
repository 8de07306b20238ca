//go:build !wasm && !portablescan

package proto

import "bytes"

// indexByte is bytes.IndexByte, which is vectorized on native targets.
func indexByte(p []byte, c byte) int { return bytes.IndexByte(p, c) }

// indexSpecial returns the index of the first byte of p that keeps p from
// being passed on as data unchanged: an IAC or, if nvt, a NUL right after a
// CR. It returns -1 if there is none.
func indexSpecial(p []byte, nvt bool) int {
	iac := bytes.IndexByte(p, IAC)
	if nvt {
		q := p
		if iac >= 0 {
			q = p[:iac]
		}
		// One IndexByte per CR (bytes.Index costs more per line).
		for i := 0; ; {
			j := bytes.IndexByte(q[i:], '\r')
			if j < 0 {
				break
			}
			i += j + 1
			if i < len(q) && q[i] == 0 {
				return i
			}
		}
	}
	return iac
}

// compact stores the bytes of in[:used] whose bit is set in keep at out[0],
// out[1], ... and returns how many; it may store garbage in the rest of
// out. Natively a loop is cheap, and one that stops at used saves most of
// the work when commands are close together.
func compact(out, in *[blockLen]byte, keep, used uint64) (k uint64) {
	for j := range used {
		out[k&(blockLen-1)] = in[j&(blockLen-1)]
		k += keep >> j & 1
	}
	return k
}
