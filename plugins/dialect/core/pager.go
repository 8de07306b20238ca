package core

import (
	"bytes"
	"strings"
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

// pager answers (or reports) a pager prompt that the whole partial line,
// still held back, makes up (v: its visible text, trimmed). quiet: the
// stream has gone quiet, so a pager that could still grow is complete.
func (s *Scanner) pager(v []byte, quiet bool) bool {
	if len(v) == 0 {
		return false
	}
	for _, p := range s.pagers() {
		if !bytes.HasPrefix(v, []byte(p.lead)) || !p.re.Match(v) {
			continue
		}
		if p.wait != "" && !quiet && len(v) == len(p.lead) {
			return false // it may grow: held until more comes or Quiet
		}
		if s.st.Auto && s.st.Pages < s.st.MaxPages {
			s.st.Pages++
			s.emit.peer(p.answer)
			s.emit.event().Pager(Pager{Text: text(v), Pages: s.st.Pages, Answered: true})
			s.dropPager()
			return true
		}
		if s.st.Auto && len(p.quit) > 0 && !s.st.LimitHit {
			// The bound: leave the pager so that the device returns to
			// its prompt; the output so far stays, the prompt goes.
			s.st.LimitHit = true
			s.emit.peer(p.quit)
			s.emit.event().PagerLimit(PagerLimit{Pages: s.st.Pages, Quit: true})
			s.dropPager()
			return true
		}
		// Not answered: the prompt stays in the stream for the user (all
		// of the line is not yet passed on: pager is only asked then).
		s.emit.user(s.st.Line)
		s.st.Held, s.st.Classed = false, true
		if !s.st.Auto {
			s.emit.event().Pager(Pager{Text: text(v), Pages: s.st.Pages})
		} else if !s.st.LimitHit {
			s.st.LimitHit = true
			s.emit.event().PagerLimit(PagerLimit{Pages: s.st.Pages})
		}
		return true
	}
	return false
}

// dropPager removes an answered pager prompt and starts removing
// whatever the device sends to wipe it.
func (s *Scanner) dropPager() {
	s.st.Line, s.st.Held, s.st.Classed = s.st.Line[:0], false, false
	s.st.start()
}
