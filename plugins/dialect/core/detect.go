package core

import "bytes"

// Detection levels: how sure the scanner is of the dialect.
const (
	levelNone = iota
	// levelWeak: a banner hint (a detect entry not marked confident).
	levelWeak
	// levelPrompt: a prompt this dialect's patterns parse or guess.
	levelPrompt
	// levelConfident: a confident banner, or the dialect was named.
	levelConfident
)

// detecting: banner lines are still looked at (the window is open and
// the dialect not certain, or it is a shell a device CLI may start from).
func (s *Scanner) detecting() bool {
	return !s.st.Forced && s.st.DetectBudget > 0 && (s.st.Level < levelConfident || s.d.keepDetecting)
}

// keepBanner: the session's start is still being kept for detecting
// again (Import).
func (s *Scanner) keepBanner() bool {
	return !s.st.Forced && !s.st.Answered && len(s.st.Banner) < maxBanner
}

// detectLine looks for the dialects' banner texts in a complete line.
func (s *Scanner) detectLine(line []byte) {
	if s.st.Forced || (s.st.Level == levelConfident && !s.d.keepDetecting) {
		return
	}
	for _, d := range s.tab.byPriority {
		for _, x := range d.detect {
			if bytes.Contains(line, x.contains) {
				lv := levelWeak
				if x.confident {
					lv = levelConfident
				}
				s.detected(d, lv)
			}
		}
	}
}

// guess looks for another dialect whose prompt shapes fit tv (a partial
// line no pattern of the current dialect parsed), in priority order.
func (s *Scanner) guess(tv []byte) {
	for _, d := range s.tab.byPriority {
		if d == s.d {
			continue
		}
		for _, g := range d.guess {
			if g.Match(tv) {
				s.detected(d, levelPrompt)
				if s.d == d {
					s.prompt(d, tv)
				}
				return
			}
		}
	}
}

// detected records evidence that the device speaks d.
func (s *Scanner) detected(d *Dialect, level int) {
	if s.st.Forced {
		return
	}
	switch {
	case s.d == d:
		s.st.Level = max(s.st.Level, level)
		return
	case s.st.Dialect == "":
	case s.d.keepDetecting && level == levelConfident:
		// a device CLI started from a shell (vtysh) says who it is
	case level > s.st.Level:
	case level == levelPrompt && s.st.Level == levelPrompt:
		// the prompt no longer fits the guessed dialect
	default:
		return
	}
	s.d = d
	s.st.Dialect, s.st.Level = d.Name, level
	s.emit.event().Dialect(Detection{Name: d.Name, Confident: level == levelConfident})
}
