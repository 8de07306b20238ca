package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// State is everything a Scanner keeps between chunks; it is what the plugin
// exports for hot swap and fail-over.
type State struct {
	Dialect  string `json:"dialect,omitempty"`
	Forced   bool   `json:"forced,omitempty"`
	Level    int    `json:"level,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Submode  string `json:"submode,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	User     string `json:"user,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	Edit     string `json:"edit,omitempty"`

	MaxPages int  `json:"maxPages"`
	Auto     bool `json:"auto"`
	// CmdPagers: pagers are answered only for commands the host armed
	// (ArmCommand: run_command's); other lines' output passes as the
	// device sends it. Armed: the next line sent is one; CmdActive: the
	// last line sent was one.
	CmdPagers bool `json:"cmdPagers,omitempty"`
	Armed     bool `json:"armed,omitempty"`
	CmdActive bool `json:"cmdActive,omitempty"`

	Pages    int  `json:"pages,omitempty"`
	LimitHit bool `json:"limitHit,omitempty"`

	Awaiting bool `json:"awaiting,omitempty"`
	Enable   bool `json:"enable,omitempty"`
	Secret   bool `json:"secret,omitempty"`
	// Login, Question: the device waits at a login field or a question
	// (since the last prompt, until something is sent).
	Login    string `json:"login,omitempty"`
	Question string `json:"question,omitempty"`
	OutLine  []byte `json:"outLine,omitempty"`
	LastCR   bool   `json:"lastCR,omitempty"`

	Line     []byte `json:"line,omitempty"`
	LineOver bool   `json:"lineOver,omitempty"`
	Held     bool   `json:"held,omitempty"`
	Classed  bool   `json:"classed,omitempty"`
	// Pend: the end of the stream, after text on its line, held back
	// because it may be the start of a pager that cuts the line
	// (Spec.MidLine); not scanned yet.
	Pend []byte `json:"pend,omitempty"`
	// Cont: the lead of a pager answered as soon as it equalled it (its
	// table's wait): the rest of the prompt, if it comes, is dropped.
	// ContPages: the page whose Pager event waits for that (0: none);
	// CBuf: the rest so far.
	Cont      string `json:"cont,omitempty"`
	ContPages int    `json:"contPages,omitempty"`
	CBuf      []byte `json:"cbuf,omitempty"`
	// Break: a pager that cut a line was left with the quit key; the
	// device's prompt comes on the next row, so a CR LF goes in front of
	// the next text unless it starts a line itself.
	Break bool `json:"break,omitempty"`

	eraser

	ErrLines     int `json:"errLines,omitempty"`
	ErrBytes     int `json:"errBytes,omitempty"`
	DetectBudget int `json:"detectBudget,omitempty"`

	// Banner: the complete lines of the session's start, kept (up to
	// maxBanner) until a command is answered, so a new version of the
	// plugin, with tables this one lacks, can detect again (Import).
	Banner []byte `json:"banner,omitempty"`
	// Counts: the command awaiting its prompt is a command (not an empty
	// line or a login field's answer). Answered: one such command has
	// reached its prompt; the dialect is no longer detected again on
	// import.
	Counts   bool `json:"counts,omitempty"`
	Answered bool `json:"answered,omitempty"`
}

// Export returns the scanner's state.
func (s *Scanner) Export() ([]byte, error) { return json.Marshal(&s.st) }

// Import restores a state from Export.
func (s *Scanner) Import(b []byte) error {
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	d := s.tab.any
	if st.Dialect != "" {
		var ok bool
		if d, ok = s.tab.lookup(st.Dialect); !ok {
			return fmt.Errorf("%w %q", ErrUnknown, st.Dialect)
		}
	}
	if len(st.Line) > MaxLine || len(st.EBuf) > maxErase+16 || len(st.OutLine) > maxOutLine ||
		len(st.Question) > maxText || len(st.Login) > 16 || len(st.Banner) > maxBanner ||
		len(st.Pend) > maxPend || len(st.CBuf) > maxCont || len(st.Cont) > maxText {
		return errors.New("state out of bounds")
	}
	s.st, s.d = st, d
	s.redetect()
	return nil
}

// redetect runs banner detection again over the kept start of the
// session, with this version's tables: a dialect added or changed since
// the state was exported applies to a session that has not had a command
// answered yet, by the usual rules (a confident match overrules a guess
// or a keepDetecting dialect; equal evidence keeps what was found first).
// The last prompt is read again with the dialect chosen. Nothing is
// emitted: the next prompt event names the dialect.
func (s *Scanner) redetect() {
	if s.st.Forced || s.st.Answered || len(s.st.Banner) == 0 {
		return
	}
	was := s.d
	s.emit.start(discard{})
	for rest := s.st.Banner; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		s.detectLine(line)
	}
	s.emit.end(nil)
	if s.d == was || s.st.Prompt == "" {
		return
	}
	if m, ok := parsePrompt(s.d, []byte(s.st.Prompt), s.st.Hostname, s.st.Edit); ok {
		s.st.Mode, s.st.Submode, s.st.Hostname, s.st.User = m.mode, m.sub, m.host, m.user
		return
	}
	s.st.Mode, s.st.Submode, s.st.Hostname, s.st.User, s.st.Prompt = "", "", "", "", ""
}
