package core

// eraser removes what a device sends after a pager was answered to wipe
// the pager prompt: backspaces, CRs, blanks, NULs (FRR's prompt ends with
// one) and cursor/erase escape sequences (ESC[K, ESC[nD ..., and SGR
// resets). Blanks are only dropped when an erase element follows them:
// indentation of the next line stays.
// It lives in State (its fields are the state's "erase", "ebuf" and
// "escLen"), so a run split across chunks goes on in the next.
type eraser struct {
	Erase  bool   `json:"erase,omitempty"`  // a run is under way
	EBuf   []byte `json:"ebuf,omitempty"`   // blanks (and a CR) that may yet go back, or the escape sequence so far
	EscLen int    `json:"escLen,omitempty"` // inside an escape sequence: its length so far
}

// start begins a run (a pager was just answered).
func (e *eraser) start() { e.Erase, e.EBuf, e.EscLen = true, e.EBuf[:0], 0 }

// run consumes the erase run at the start of p and returns the bytes left
// to scan (nil if the run takes all of p). Blanks that turn out to be
// text go back in front of them, in a copy made in *buf.
func (e *eraser) run(p []byte, buf *[]byte) []byte {
	for k := 0; k < len(p); k++ {
		c := p[k]
		if e.EscLen > 0 {
			if e.EscLen == 1 {
				if c == '[' && len(e.EBuf) < maxErase {
					e.EBuf = append(e.EBuf, c)
					e.EscLen = 2
					continue
				}
				return e.end(p[k:], buf)
			}
			switch {
			case c >= '0' && c <= '?' && e.EscLen < 12:
				e.EBuf = append(e.EBuf, c)
				e.EscLen++
				continue
			case c == 'K' || c == 'D' || c == 'J' || c == 'C' || c == 'G' || c == 'm':
				e.EBuf, e.EscLen = e.EBuf[:0], 0
				continue
			}
			return e.end(p[k:], buf)
		}
		switch c {
		case 0:
			continue
		case '\b':
			e.EBuf = e.EBuf[:0]
			continue
		case '\r':
			e.EBuf = append(e.EBuf[:0], '\r')
			continue
		case ' ':
			if len(e.EBuf) < maxErase {
				e.EBuf = append(e.EBuf, ' ')
				continue
			}
		case 0x1b:
			if len(e.EBuf) < maxErase {
				e.EBuf = append(e.EBuf, c)
				e.EscLen = 1
				continue
			}
		}
		return e.end(p[k:], buf)
	}
	return nil
}

// end ends the run before rest: pending blanks go back in front of it (a
// pending CR only before a LF).
func (e *eraser) end(rest []byte, buf *[]byte) []byte {
	pend := e.EBuf
	if len(pend) > 0 && pend[0] == '\r' && (len(pend) > 1 || rest[0] != '\n') {
		pend = pend[1:]
	}
	e.Erase, e.EscLen = false, 0
	e.EBuf = e.EBuf[:0]
	if len(pend) == 0 {
		return rest
	}
	*buf = append(append((*buf)[:0], pend...), rest...)
	return *buf
}
