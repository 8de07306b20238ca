package core

import "bytes"

// Detection levels: how sure the scanner is of the dialect.
const (
	_ = iota // no dialect detected yet (level 0)
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
	det := &s.tab.det
	if len(s.found) < len(det.texts) {
		s.found = make([]bool, len(det.texts))
	}
	if !det.find(line, s.found) {
		return
	}
	// Every text found counts, in priority then table order, as if each
	// had been looked for in turn.
	for j, x := range det.texts {
		if s.found[j] {
			s.found[j] = false
			s.detected(x.d, x.level)
		}
	}
}

// detector finds every dialect's banner texts in a line in one pass. A
// bitset of the texts' first two bytes passes over most positions with
// one test: a bytes.Contains per text per line was most of the cost of a
// command's output while detection is on (BenchmarkScanner), and more
// in wasm, which has no vector search.
type detector struct {
	texts  []detText          // in priority then table order
	pairs  [1 << 10]uint64    // bit b0<<8|b1: some text starts with b0 b1
	byPair map[uint16][]int32 // the texts starting with a pair
	single []int32            // texts of one byte
}

type detText struct {
	d        *Dialect
	contains []byte
	level    int
}

func newDetector(byPriority []*Dialect) detector {
	det := detector{byPair: map[uint16][]int32{}}
	for _, d := range byPriority {
		for _, x := range d.detect {
			lv := levelWeak
			if x.confident {
				lv = levelConfident
			}
			j := int32(len(det.texts))
			det.texts = append(det.texts, detText{d, x.contains, lv})
			if len(x.contains) == 1 {
				det.single = append(det.single, j)
				continue
			}
			k := uint16(x.contains[0])<<8 | uint16(x.contains[1])
			det.pairs[k>>6] |= 1 << (k & 63)
			det.byPair[k] = append(det.byPair[k], j)
		}
	}
	return det
}

// find marks in found (one per text) the texts line holds, and reports
// whether it holds any.
func (det *detector) find(line []byte, found []bool) bool {
	hit := false
	for _, j := range det.single {
		if bytes.IndexByte(line, det.texts[j].contains[0]) >= 0 {
			found[j], hit = true, true
		}
	}
	for i := 0; i+1 < len(line); i++ {
		k := uint16(line[i])<<8 | uint16(line[i+1])
		if det.pairs[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, j := range det.byPair[k] {
			if bytes.HasPrefix(line[i:], det.texts[j].contains) {
				found[j], hit = true, true
			}
		}
	}
	return hit
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
