package core

import (
	"bytes"
	"strings"
)

const (
	// maxMid bounds a pager's midLine literal.
	maxMid = 64
	// maxMidTail: how far past a midLine literal the prompt may run (a
	// percentage, a key list) and still be held back as one.
	maxMidTail = 64
	// maxCont bounds the rest of a pager prompt answered early (wait).
	maxCont = 64
	// maxPend bounds Pend.
	maxPend = maxMid + maxMidTail
)

// pagers are the pager prompts looked for: the dialect's, once it is
// named, confidently detected or has parsed a prompt. Before that nothing
// is held back or answered, so a service that is no device (a BBS, a
// menu) gets its stream as it is, whatever it prints.
//
// With CommandPagers, only the output of an armed command is looked at.
func (s *Scanner) pagers() []pager {
	if s.st.CmdPagers && !s.st.CmdActive {
		return nil
	}
	if s.st.Forced || s.st.Level >= levelPrompt {
		return s.d.pagers
	}
	return nil
}

// holdable: lt (the partial line without its leading blanks) could still
// become one of pagers.
func holdable(pagers []pager, lt []byte) bool {
	for _, p := range pagers {
		if len(lt) <= len(p.lead) {
			if strings.HasPrefix(p.lead, string(lt)) {
				return true
			}
		} else if len(lt) <= 64 && bytes.HasPrefix(lt, []byte(p.lead)) {
			return true
		}
	}
	return false
}

// answers: a pager prompt seen now would be answered, or left with the
// quit key.
func (s *Scanner) answers(p *pager) bool {
	return s.st.Auto && (s.st.Pages < s.st.MaxPages || len(p.quit) > 0 && !s.st.LimitHit)
}

// pager answers (or reports) a pager prompt that the whole partial line,
// still held back, makes up (v: its visible text, trimmed). quiet: the
// stream has gone quiet, so a pager that could still grow is complete.
func (s *Scanner) pager(v []byte, quiet bool) bool {
	if len(v) == 0 {
		return false
	}
	ps := s.pagers()
	for i := range ps {
		p := &ps[i]
		if !bytes.HasPrefix(v, []byte(p.lead)) || !p.re.Match(v) {
			continue
		}
		// A prompt that may still grow ("--More--", then "(45%)") is
		// answered at once all the same (waiting for the stream to go
		// quiet would cost every page that long); the rest, if it comes,
		// is dropped (cont). Left for the user, it is held until more
		// comes or the stream goes quiet, and reported whole.
		early := p.wait != "" && !quiet && len(v) == len(p.lead)
		if early && !s.answers(p) {
			return false
		}
		s.act(p, v, s.st.Line, early, false)
		return true
	}
	return false
}

// act deals with pager prompt raw (not passed on yet; v its visible text,
// trimmed), at the start of the partial line or, mid, after text on it:
// answered while under the bound, left with the quit key at the bound,
// else passed on and reported. early: answered before it was complete (see
// pager).
func (s *Scanner) act(p *pager, v, raw []byte, early, mid bool) {
	switch {
	case s.st.Auto && s.st.Pages < s.st.MaxPages:
		s.st.Pages++
		s.emit.peer(p.answer)
		if early {
			// Reported when the rest has come (or not): cont.
			s.st.Cont, s.st.ContPages = p.lead, s.st.Pages
		} else {
			s.emit.event().Pager(Pager{Text: text(v), Pages: s.st.Pages, Answered: true})
		}
		s.dropPager(mid)
	case s.st.Auto && len(p.quit) > 0 && !s.st.LimitHit:
		// The bound: leave the pager so that the device returns to its
		// prompt; the output so far stays, the prompt goes.
		s.st.LimitHit = true
		s.emit.peer(p.quit)
		s.emit.event().PagerLimit(PagerLimit{Pages: s.st.Pages, Quit: true})
		if early {
			s.st.Cont, s.st.ContPages = p.lead, 0
		}
		s.dropPager(mid)
		// A pager that cut a line was left at the end of a full row: the
		// device's prompt comes on the next one.
		s.st.Break = mid
	default:
		// Not answered: the prompt stays in the stream for the user.
		t := text(v) // v may share scan's buffer
		if mid {
			s.scan(raw)
		} else {
			s.emit.user(raw)
			s.st.Held, s.st.Classed = false, true
		}
		if !s.st.Auto {
			s.emit.event().Pager(Pager{Text: t, Pages: s.st.Pages})
		} else if !s.st.LimitHit {
			s.st.LimitHit = true
			s.emit.event().PagerLimit(PagerLimit{Pages: s.st.Pages})
		}
	}
}

// dropPager removes an answered pager prompt and starts removing
// whatever the device sends to wipe it. A pager after text on its line
// (mid) leaves that text as the partial line: the device goes on with the
// rest of the line after the wipe.
func (s *Scanner) dropPager(mid bool) {
	if !mid {
		s.st.Line, s.st.Held, s.st.Classed = s.st.Line[:0], false, false
	}
	s.st.start()
}

// midPagers: the pagers looked for after text on a line (Spec.MidLine),
// or nil.
func (s *Scanner) midPagers() []pager {
	if !s.d.mids {
		return nil
	}
	return s.pagers()
}

// feed scans data (what is left of a chunk after an answered pager's wipe)
// with a pager that cuts a line looked for at its end: the bytes before
// such a pager are scanned, then the pager is dealt with (act); the start
// of one, or bytes that may grow into one, are held back in Pend (not
// yet scanned) until more comes or the stream goes quiet.
func (s *Scanner) feed(data []byte, quiet bool) {
	if len(s.st.Pend) > 0 {
		s.joined = append(append(s.joined[:0], s.st.Pend...), data...)
		data, s.st.Pend = s.joined, s.st.Pend[:0]
	}
	mp := s.midPagers()
	if len(mp) == 0 || len(data) == 0 {
		s.scan(data)
		return
	}
	cut, p, hold := s.findMid(mp, data, quiet)
	s.scan(data[:cut])
	rest := data[cut:]
	switch {
	case p != nil:
		v := visible(s.vis[:0], rest, false)
		s.vis = v[:0]
		v = bytes.TrimSpace(v)
		s.act(p, v, rest, p.wait != "" && !quiet && len(v) == len(p.lead), true)
	case hold:
		s.st.Pend = append(s.st.Pend[:0], rest...)
	}
}

// findMid looks at the end of data for a pager that follows text on its
// line (ps' midLine literals). It returns where the bytes left to scan
// end (cut): before a complete pager prompt (p), before the bytes held
// back (hold), or at the end of data.
func (s *Scanner) findMid(ps []pager, data []byte, quiet bool) (cut int, p *pager, hold bool) {
	start := bytes.LastIndexByte(data, '\n') + 1
	seg := data[start:]
	for i := range ps {
		m := ps[i].mid
		if m == nil {
			continue
		}
		lo := max(0, len(seg)-len(m)-maxMidTail)
		if j := bytes.LastIndex(seg[lo:], m); j >= 0 {
			j += lo
			after := seg[j:]
			if bytes.IndexByte(after, '\r') >= 0 || !s.textBefore(data, start, start+j) {
				continue
			}
			v := visible(s.vis[:0], after, false)
			s.vis = v[:0]
			v = bytes.TrimSpace(v)
			pg := &ps[i]
			if pg.re.Match(v) && !escCut(after) {
				if pg.wait != "" && !quiet && len(v) == len(pg.lead) && !s.answers(pg) {
					return start + j, nil, true
				}
				return start + j, pg, false
			}
			if !quiet {
				return start + j, nil, true // it may grow into one
			}
			continue
		}
		if quiet {
			continue
		}
		// The end of the data may be the start of m.
		for k := min(len(m)-1, len(seg)); k > 0; k-- {
			if !bytes.HasSuffix(seg, m[:k]) || !s.textBefore(data, start, start+len(seg)-k) {
				continue
			}
			if len(bytes.TrimLeft(m[:k], " ")) == 0 && s.promptBlanks(data, start) {
				break // a prompt's blanks: passed on with it
			}
			return start + len(seg) - k, nil, true
		}
	}
	return len(data), nil, false
}

// promptBlanks: the partial line, whose part in data starts at start, is
// a prompt, login field or question (classify will report it): blanks at
// its end are no pager's, and holding them back would put its event
// before them.
func (s *Scanner) promptBlanks(data []byte, start int) bool {
	line := data[start:]
	if start == 0 && len(s.st.Line) > 0 {
		if s.st.LineOver {
			return false
		}
		s.tmp = append(append(s.tmp[:0], s.st.Line...), line...)
		line = s.tmp
	}
	if len(line) > maxTail {
		return false
	}
	v := visible(s.vis[:0], line, true)
	s.vis = v[:0]
	if i := bytes.LastIndexByte(v, '\r'); i >= 0 {
		v = v[i+1:]
	}
	return s.classifiable(v)
}

// textBefore: the line holding data[start:end] shows text before end (a
// pager there follows text on its line; one at the start of a line is
// the partial line's, see tail).
func (s *Scanner) textBefore(data []byte, start, end int) bool {
	v := visible(s.vis[:0], data[start:end], false)
	s.vis = v[:0]
	if len(bytes.TrimSpace(v)) > 0 {
		return true
	}
	if start > 0 {
		return false // the line starts in data
	}
	if s.st.LineOver {
		return true
	}
	v = visible(s.vis[:0], s.st.Line, false)
	s.vis = v[:0]
	return len(bytes.TrimSpace(v)) > 0
}

// contPager: the pager answered early whose rest may still come.
func (s *Scanner) contPager() *pager {
	ps := s.d.pagers
	for i := range ps {
		if ps[i].lead == s.st.Cont && ps[i].wait != "" {
			return &ps[i]
		}
	}
	return nil
}

// cont drops the rest of a pager prompt answered as soon as it equalled its
// lead (Cont), if the start of p completes it: text starting with the
// pager's wait, before anything that wipes it (CR, LF, backspace), that
// makes the whole match the pager's pattern. Then the pager is reported
// with its whole text; else as its lead, and the bytes go on as they are.
// It returns what is left of p (nil: all of it held, the rest may yet
// come).
func (s *Scanner) cont(p []byte) []byte {
	pg := s.contPager()
	if pg == nil {
		return s.contEnd(p, nil)
	}
	for k, c := range p {
		if c == '\r' || c == '\n' || c == '\b' || len(s.st.CBuf) >= maxCont {
			return s.contEnd(p[k:], nil)
		}
		s.st.CBuf = append(s.st.CBuf, c)
		v := visible(s.vis[:0], s.st.CBuf, false)
		s.vis = v[:0]
		t := bytes.TrimLeft(v, " ")
		if len(t) == 0 {
			continue // blanks or escape sequences so far
		}
		if !bytes.HasPrefix(t, []byte(pg.wait)) && !strings.HasPrefix(pg.wait, string(t)) {
			return s.contEnd(p[k+1:], nil)
		}
		full := append([]byte(pg.lead), bytes.TrimRight(v, " ")...)
		if !escCut(s.st.CBuf) && pg.re.Match(full) {
			s.st.CBuf = s.st.CBuf[:0]
			return s.contEnd(p[k+1:], full)
		}
	}
	return nil
}

// contEnd ends the wait for a pager's rest: its Pager event, with text
// (the whole prompt, its rest dropped) or its lead; and the bytes kept in
// CBuf go back in front of rest.
func (s *Scanner) contEnd(rest, whole []byte) []byte {
	if s.st.ContPages > 0 {
		if whole == nil {
			whole = []byte(s.st.Cont)
		}
		s.emit.event().Pager(Pager{Text: text(whole), Pages: s.st.ContPages, Answered: true})
	}
	s.st.Cont, s.st.ContPages = "", 0
	if len(s.st.CBuf) == 0 {
		return rest
	}
	s.contBuf = append(append(s.contBuf[:0], s.st.CBuf...), rest...)
	s.st.CBuf = s.st.CBuf[:0]
	return s.contBuf
}

// lineBreak: after a pager that cut a line was left with the quit key, a
// CR LF goes in front of the next text unless it starts a line itself.
func (s *Scanner) lineBreak(p []byte) []byte {
	s.st.Break = false
	if p[0] == '\r' || p[0] == '\n' {
		return p
	}
	s.brk = append(append(s.brk[:0], '\r', '\n'), p...)
	return s.brk
}
