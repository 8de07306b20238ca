// Package ansi removes terminal escape sequences from text, for matching
// and for clients that ask for plain output. It recognises CSI, OSC, DCS,
// SOS/PM/APC strings and two- and three-byte ESC sequences; anything else
// passes through unchanged. 8-bit C1 controls are left alone: in UTF-8 text
// those bytes are continuation bytes of ordinary characters.
package ansi

// Strip returns p without escape sequences. It never modifies p. A sequence
// cut off at the end of p is dropped.
func Strip(p []byte) []byte {
	i := indexEsc(p)
	if i < 0 {
		return p
	}
	out := make([]byte, 0, len(p))
	for i >= 0 {
		out = append(out, p[:i]...)
		p = p[i+skip(p[i:]):]
		i = indexEsc(p)
	}
	return append(out, p...)
}

func indexEsc(p []byte) int {
	for i, c := range p {
		if c == 0x1b {
			return i
		}
	}
	return -1
}

// skip returns the length of the escape sequence at the start of p.
func skip(p []byte) int {
	if len(p) < 2 {
		return len(p)
	}
	switch p[1] {
	case '[':
		return 2 + csiLen(p[2:])
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: until BEL or ST
		for j := 2; j < len(p); j++ {
			if p[j] == 0x07 {
				return j + 1
			}
			if p[j] == 0x1b && j+1 < len(p) && p[j+1] == '\\' {
				return j + 2
			}
		}
		return len(p)
	case '(', ')', '*', '+', '#', '%', ' ': // designate charset etc.: one more byte
		return min(3, len(p))
	}
	return 2
}

// csiLen is the length of CSI parameters, intermediates and final byte.
func csiLen(p []byte) int {
	for j, c := range p {
		if c >= 0x40 && c <= 0x7e {
			return j + 1
		}
		if c < 0x20 || c > 0x3f && c < 0x40 {
			return j
		}
	}
	return len(p)
}

// SeqLen returns the length of the escape sequence at the start of p (which
// starts with ESC), or 0 when p ends inside it.
func SeqLen(p []byte) int {
	n := skip(p)
	if n < len(p) {
		return n
	}
	if len(p) < 2 {
		return 0
	}
	last := p[len(p)-1]
	switch p[1] {
	case '[':
		if len(p) > 2 && last >= 0x40 && last <= 0x7e {
			return n
		}
		return 0
	case ']', 'P', 'X', '^', '_':
		if last == 0x07 || len(p) > 3 && last == '\\' && p[len(p)-2] == 0x1b {
			return n
		}
		return 0
	case '(', ')', '*', '+', '#', '%', ' ':
		if len(p) < 3 {
			return 0
		}
	}
	return n
}
