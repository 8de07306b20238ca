package core

import "strconv"

// cpr appends a cursor position report.
func (t *Terminal) cpr(dst []byte, pre, suf string) []byte {
	if len(dst) > maxReplies {
		return dst
	}
	y := t.y
	if t.origin {
		y -= t.top
	}
	dst = append(dst, pre...)
	dst = strconv.AppendInt(dst, int64(y+1), 10)
	dst = append(dst, ';')
	dst = strconv.AppendInt(dst, int64(t.x+1), 10)
	return append(dst, suf...)
}

func (t *Terminal) windowOp() {
	var b [48]byte
	var s []byte
	switch t.p.raw(0) {
	case 14:
		s = append(b[:0], "\x1b[4;"...)
		s = strconv.AppendInt(s, int64(t.rows*16), 10)
		s = append(s, ';')
		s = strconv.AppendInt(s, int64(t.cols*8), 10)
	case 16:
		s = append(b[:0], "\x1b[6;16;8"...)
	case 18:
		s = append(b[:0], "\x1b[8;"...)
		s = strconv.AppendInt(s, int64(t.rows), 10)
		s = append(s, ';')
		s = strconv.AppendInt(s, int64(t.cols), 10)
	default:
		return
	}
	s = append(s, 't')
	t.replyString(string(s))
}

func (t *Terminal) modeReport(pre string, mode, v int) {
	var b [32]byte
	s := append(b[:0], pre...)
	s = strconv.AppendInt(s, int64(mode), 10)
	s = append(s, ';')
	s = strconv.AppendInt(s, int64(v), 10)
	s = append(s, "$y"...)
	t.replyString(string(s))
}

func boolMode(b bool) int {
	if b {
		return 1
	}
	return 2
}

func (t *Terminal) csiGT(final, inter byte) {
	switch {
	case final == 'c' && inter == 0:
		if t.p.raw(0) == 0 {
			t.replyString("\x1b[>1;10;0c")
		}
	case final == 'q' && inter == 0:
		if t.p.raw(0) == 0 {
			t.replyString("\x1bP>|termhost(1.0)\x1b\\")
		}
	}
}
