// Package marks finds and removes OSC 133 shell-integration marks (the
// FinalTerm / iTerm2 / VS Code convention) in a terminal byte stream:
//
//	ESC ] 133 ; A ST        prompt starts
//	ESC ] 133 ; B ST        prompt ends, input starts
//	ESC ] 133 ; C ST        the command starts running
//	ESC ] 133 ; D ; code ST the command finished with an exit code
//	ESC ] 133 ; S ; code ST termhost's own, where a shell has no hook around
//	                        a command (POSIX sh): $? as the prompt is drawn,
//	                        before its A, whether or not a command ran
//
// ST is ESC \ or BEL. The scanner is sans-IO: Scan takes one chunk and
// reports the bytes to keep and the marks at their positions in them; a
// mark split across chunks is held back (at most MaxMark bytes) until it is
// complete. Anything that is not an OSC 133 mark passes through unchanged,
// including other OSC strings.
package marks

import "bytes"

// MaxMark bounds a mark's length. A longer OSC 133 string is not one of
// ours: it passes through as it is.
const MaxMark = 128

// Mark is one shell-integration mark.
type Mark struct {
	Kind byte // 'A', 'B', 'C', 'D', 'S' (others are reported as they come)
	// Code is D's or S's exit code; HasCode says whether it carried one.
	Code    int
	HasCode bool
	// At is the mark's position in the output Scan returned.
	At int
}

// Scanner carries a partial mark between chunks.
type Scanner struct {
	held []byte
}

var intro = []byte("\x1b]133;")

// Scan appends the bytes of p to keep to dst and the marks found to ms.
// A mark cut off at the end of p is held until the next call (or Flush).
func (s *Scanner) Scan(dst []byte, ms []Mark, p []byte) ([]byte, []Mark) {
	if len(s.held) > 0 {
		// Rare: a chunk ended inside a possible mark. Settle it with the
		// new chunk (one copy of this chunk only).
		p = append(s.held, p...)
		s.held = nil
	}
	var rest []byte
	dst, ms, rest = scan(dst, ms, p)
	if len(rest) > 0 {
		s.held = append([]byte(nil), rest...)
	}
	return dst, ms
}

// Flush gives back held bytes (the stream ended inside what looked like a
// mark).
func (s *Scanner) Flush(dst []byte) []byte {
	dst = append(dst, s.held...)
	s.held = s.held[:0]
	return dst
}

// Held reports how many bytes are held back.
func (s *Scanner) Held() int { return len(s.held) }

// scan processes p. A possible mark cut off at the end of p is returned
// as rest, to hold.
func scan(dst []byte, ms []Mark, p []byte) ([]byte, []Mark, []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0x1b)
		if i < 0 {
			return append(dst, p...), ms, nil
		}
		dst = append(dst, p[:i]...)
		p = p[i:]
		// p starts with ESC.
		if len(p) < len(intro) {
			if bytes.HasPrefix(intro, p) {
				return dst, ms, p
			}
			dst = append(dst, p[0])
			p = p[1:]
			continue
		}
		if !bytes.HasPrefix(p, intro) {
			dst = append(dst, p[0])
			p = p[1:]
			continue
		}
		end, stLen := terminator(p[len(intro):])
		if end == -1 && len(p) < MaxMark {
			return dst, ms, p // may complete in the next chunk
		}
		if end < 0 {
			// Too long, or interrupted: not ours.
			dst = append(dst, p[0])
			p = p[1:]
			continue
		}
		body := p[len(intro) : len(intro)+end]
		total := len(intro) + end + stLen
		if total > MaxMark {
			dst = append(dst, p[0])
			p = p[1:]
			continue
		}
		ms = append(ms, parse(body, len(dst)))
		p = p[total:]
	}
	return dst, ms, nil
}

// terminator finds BEL or ESC \ in p: the index where the body ends and the
// terminator's length; -1 if p ends first, -2 if something else
// interrupts it.
func terminator(p []byte) (int, int) {
	for i := 0; i < len(p) && i < MaxMark; i++ {
		switch p[i] {
		case 0x07:
			return i, 1
		case 0x1b:
			if i+1 < len(p) {
				if p[i+1] == '\\' {
					return i, 2
				}
				return -2, 0 // another escape sequence starts: not a mark
			}
			return -1, 0
		case 0x18, 0x1a: // CAN, SUB abort a string
			return -2, 0
		}
	}
	return -1, 0
}

// parse reads "A", "B", "C", "D;code", "S;code" and their optional extra
// ";k=v" parameters.
func parse(body []byte, at int) Mark {
	m := Mark{At: at}
	if len(body) == 0 {
		return m
	}
	m.Kind = body[0]
	if (m.Kind == 'D' || m.Kind == 'S') && len(body) > 2 && body[1] == ';' {
		code, neg, ok := 0, false, false
		for _, c := range body[2:] {
			if c == '-' && !ok && !neg {
				neg = true
				continue
			}
			if c < '0' || c > '9' {
				break
			}
			if code < 1<<20 {
				code = code*10 + int(c-'0')
			}
			ok = true
		}
		if ok {
			if neg {
				code = -code
			}
			m.Code, m.HasCode = code, true
		}
	}
	return m
}
