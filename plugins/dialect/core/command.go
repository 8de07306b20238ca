package core

import (
	"bytes"
	"strings"
)

// Outbound notes what the user sends: a line end is a command (done comes
// at the next prompt; the pager count and the error window restart).
// Nothing typed after a password field is kept.
func (s *Scanner) Outbound(p []byte) {
	for _, c := range p {
		switch c {
		case '\n':
			if s.st.LastCR {
				s.st.LastCR = false
				continue
			}
			s.command()
		case '\r':
			s.command()
			s.st.LastCR = true
			continue
		case 0x7f, '\b':
			if n := len(s.st.OutLine); n > 0 {
				s.st.OutLine = s.st.OutLine[:n-1]
			}
		case 0x15: // ^U
			s.st.OutLine = s.st.OutLine[:0]
		default:
			if !s.st.Secret && len(s.st.OutLine) < maxOutLine {
				s.st.OutLine = append(s.st.OutLine, c)
			}
		}
		s.st.LastCR = false
	}
}

// command: a line was sent.
func (s *Scanner) command() {
	cmd := strings.TrimSpace(string(s.st.OutLine))
	s.st.OutLine = s.st.OutLine[:0]
	// A login field's answer or an empty line is no command: the dialect
	// may still be detected again after them (Import).
	s.st.Counts = cmd != "" && s.st.Login == "" && !s.st.Secret
	s.st.CmdActive, s.st.Armed = s.st.Armed, false
	// After the enable secret, a password asked again is the enable
	// secret again (a wrong one).
	s.st.Enable = s.st.Secret && s.st.Login == "enable" || !s.st.Secret && isEnable(s.d, cmd)
	s.st.Secret = false
	s.st.Login, s.st.Question = "", ""
	s.st.Awaiting = true
	s.st.Pages, s.st.LimitHit = 0, false
	s.st.ErrLines, s.st.ErrBytes = errWindowLines, errWindowBytes
	if s.detecting() || (!s.st.Forced && (s.st.Level < levelConfident || s.d.keepDetecting)) {
		s.st.DetectBudget = max(s.st.DetectBudget, detectAfterCmd)
	}
}

// isEnable: cmd (or an abbreviation of two letters or more) is one of
// d's commands whose password is the enable secret.
func isEnable(d *Dialect, cmd string) bool {
	w, _, _ := strings.Cut(cmd, " ")
	if len(w) < 2 {
		return false
	}
	for _, e := range d.enable {
		if strings.HasPrefix(e, w) {
			return true
		}
	}
	return false
}

// errorLine looks for a CLI error in a complete line inside the error
// window (the first lines after a command), and narrows the window.
func (s *Scanner) errorLine(line []byte) {
	s.st.ErrLines--
	s.st.ErrBytes -= len(line) + 1
	if s.st.ErrBytes <= 0 {
		s.st.ErrLines = 0
	}
	// Cheap test first: every error pattern starts with or holds a letter
	// or '%'; blank and caret lines are skipped without decoding.
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	raw := visible(s.vis[:0], line, true)
	s.vis = raw[:0]
	v := bytes.TrimSpace(raw)
	for _, e := range s.d.errors {
		if (e.prefix != "" && bytes.HasPrefix(v, []byte(e.prefix))) || (e.contains != "" && bytes.Contains(v, []byte(e.contains))) {
			s.emit.event().Error(text(v))
			return
		}
	}
}
