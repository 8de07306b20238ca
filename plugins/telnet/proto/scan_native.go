//go:build !wasm && !portablescan

package proto

import "bytes"

// indexByte is bytes.IndexByte, which is vectorized on native targets.
func indexByte(p []byte, c byte) int { return bytes.IndexByte(p, c) }

var crNUL = []byte{'\r', 0}

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
		if j := bytes.Index(q, crNUL); j >= 0 {
			return j + 1
		}
	}
	return iac
}
