// Package core is the device-dialect scanner behind termhost's dialect
// plugin: sans-IO and pure, it reads a device's output stream chunk by chunk
// and reports to a Sink prompts (with mode, sub-mode and hostname), pagers
// (answered and removed from the stream), questions, login fields, CLI
// errors, command completion and the detected dialect — all from one
// pattern table per dialect (dialects/*.json). It knows no wire format: the
// plugin's main serialises what the Sink receives.
//
// Only the trailing partial line (no newline after it yet) can be a prompt,
// pager, question or login field, so bulk output costs one LastIndexByte
// per chunk: regular expressions run on that tail only, and on whole lines
// only inside short windows (the first lines after a command, for errors;
// the first kilobytes of a session, for banners). Everything kept between
// chunks is bounded.
//
// The parts, one file each: the chunk's flow and the partial line
// (scanner.go), detection (detect.go), the erase run after a pager
// (erase.go), pagers (pager.go), prompts, login fields and questions
// (prompt.go), what the user sends and the error window (command.go),
// the state kept between chunks (state.go) and the Sink (sink.go).
package core

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

const (
	// MaxLine bounds the partial line kept between chunks.
	MaxLine = 4096
	// maxTail: a longer partial line is no prompt, pager, question or
	// login field and is not looked at.
	maxTail = 512
	// DefaultMaxPages: pager answers per command before giving up.
	DefaultMaxPages = 1000
	// Error window: CLI errors are looked for in the first lines after a
	// command (devices report them at once, right under the echo).
	errWindowLines = 16
	errWindowBytes = 4096
	// Banner detection window: the start of the session, and the start of
	// each command's output while no dialect is certain.
	detectStart    = 64 << 10
	detectAfterCmd = 8 << 10
	maxErase       = 256
	maxText        = 256
	maxOutLine     = 16
	// maxBanner bounds the start of the session kept for detecting again
	// with the tables of a new version of the plugin (Import).
	maxBanner = 8 << 10
)

// Scanner reads one session's inbound stream.
type Scanner struct {
	st   State
	tab  *tables
	d    *Dialect // the dialect's table, or tab.any while none is known
	emit emitter
	tmp  []byte // a complete line joined to the partial line before it
	vis  []byte // visible text of a line
	// spare: the partial line's other buffer. A partial line passed on
	// in a chunk that also ends it must stay intact until the next call
	// (Sink's contract): the next line goes to the other buffer.
	spare []byte
	// erased: what is left of a chunk after an erase run put blanks back
	// in front of it.
	erased []byte
	// joined: Pend and the chunk after it; contBuf: CBuf given back in
	// front of a chunk; brk: a CR LF in front of one (lineBreak).
	joined, contBuf, brk []byte
	found                []bool // detectLine's: which banner texts a line holds
}

// New returns a Scanner with no dialect (auto-detection on).
func New() *Scanner { return newScanner(builtin) }

func newScanner(t *tables) *Scanner {
	s := &Scanner{tab: t, d: t.any}
	s.st.MaxPages = DefaultMaxPages
	s.st.Auto = true
	s.st.DetectBudget = detectStart
	return s
}

// ErrUnknown is returned for a dialect name that has no table.
var ErrUnknown = errors.New("unknown dialect")

// Force sets the dialect and turns auto-detection off.
func (s *Scanner) Force(name string) error {
	d, ok := s.tab.lookup(name)
	if !ok {
		return fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(s.tab.names, ", "))
	}
	s.d = d
	s.st.Dialect, s.st.Forced, s.st.Level = d.Name, true, levelConfident
	return nil
}

// SetPager sets the pager bound and whether pagers are answered.
func (s *Scanner) SetPager(maxPages int, auto bool) {
	s.st.MaxPages, s.st.Auto = maxPages, auto
}

// CommandPagers limits pager answers to the commands ArmCommand marks:
// anything else the user types gets the device's pagers as they come.
func (s *Scanner) CommandPagers(on bool) { s.st.CmdPagers = on }

// ArmCommand marks the next line sent as a command whose pagers are
// answered (with CommandPagers; without it every command's are).
func (s *Scanner) ArmCommand() { s.st.Armed = true }

// Info is what the scanner knows about the device.
type Info struct {
	Dialect   string `json:"dialect"`
	Detected  bool   `json:"detected"`
	Confident bool   `json:"confident"`
	Mode      string `json:"mode"`
	Submode   string `json:"submode"`
	Hostname  string `json:"hostname"`
	Prompt    string `json:"prompt"`
	MaxPages  int    `json:"maxPages"`
	Auto      bool   `json:"auto"`
	// Login (the field) or Question (its text): what the device waits
	// for instead of a command, if anything.
	Login    string `json:"login,omitempty"`
	Question string `json:"question,omitempty"`
	// Modes: the dialect's mode commands (Spec.Modes), once it is known.
	Modes map[string]map[string]string `json:"modes,omitempty"`
}

// Info reports the dialect and the last prompt.
func (s *Scanner) Info() Info {
	return Info{Dialect: s.st.Dialect, Detected: s.st.Dialect != "" && !s.st.Forced, Confident: s.st.Level == levelConfident,
		Mode: s.st.Mode, Submode: s.st.Submode, Hostname: s.st.Hostname, Prompt: s.st.Prompt,
		MaxPages: s.st.MaxPages, Auto: s.st.Auto, Login: s.st.Login, Question: s.st.Question, Modes: s.d.Modes}
}

// Held reports whether bytes are held back (a partial line that may yet
// become a pager prompt, or the end of one that may be the start of a
// pager cutting it) or a pager answered early waits for its rest: the
// plugin calls Quiet once the stream has been quiet for a while.
func (s *Scanner) Held() bool { return s.st.Held || len(s.st.Pend) > 0 || s.st.Cont != "" }

// Flush passes held bytes on to sink: the plugin calls it when the
// session closes, so a lone "-" is not lost.
func (s *Scanner) Flush(sink Sink) {
	s.emit.start(sink)
	if s.st.Cont != "" {
		s.emit.user(s.contEnd(nil, nil))
	}
	s.flushHeld()
	if len(s.st.Pend) > 0 {
		s.emit.user(s.st.Pend)
		s.st.Pend = nil
	}
	s.emit.end(nil)
}

// flushHeld passes held bytes on; the partial line is then settled (not
// looked at again until it ends).
func (s *Scanner) flushHeld() {
	if s.st.Held {
		s.emit.user(s.st.Line)
		s.st.Held, s.st.Classed = false, true
	}
}

// Quiet is called when the stream has been quiet for a while with bytes
// held: a pager prompt that was waiting for a possible continuation is
// answered now; anything else held is passed on.
func (s *Scanner) Quiet(sink Sink) {
	s.emit.start(sink)
	if s.st.Cont != "" {
		// The rest of a pager answered early did not come (whole).
		s.inbound(s.contEnd(nil, nil), true)
	}
	if s.st.Held {
		v := visible(s.vis[:0], s.st.Line, true)
		s.vis = v[:0]
		if !s.pager(bytes.TrimSpace(v), true) {
			s.flushHeld()
		}
	}
	if len(s.st.Pend) > 0 {
		s.feed(nil, true)
	}
	s.emit.end(nil)
}

// Inbound scans one inbound chunk, passing its bytes on and reporting its
// events to sink. plain is true when p passes on unchanged and nothing
// else was reported: p itself then went to sink.User in exactly one call
// (or none, p being empty), and the plugin may let the chunk through as
// it is.
func (s *Scanner) Inbound(p []byte, sink Sink) (plain bool) {
	s.emit.start(sink)
	data := p
	if s.st.Cont != "" {
		data = s.cont(p)
	}
	s.inbound(data, false)
	return s.emit.end(p)
}

// inbound scans data: the wipe of an answered pager removed, a line
// broken after a pager left at the bound, a pager cutting a line looked
// for (feed).
func (s *Scanner) inbound(data []byte, quiet bool) {
	if s.st.Erase && len(data) > 0 {
		data = s.st.run(data, &s.erased)
	}
	if s.st.Break && !s.st.Erase && len(data) > 0 {
		data = s.lineBreak(data)
	}
	if len(data) > 0 {
		s.feed(data, quiet)
	}
}

// scan passes data on: its complete lines (looked at inside the error and
// banner windows) and the partial line at its end (tail).
func (s *Scanner) scan(data []byte) {
	if len(data) == 0 {
		return
	}
	tail := data
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		body := data[:i+1]
		if s.st.Held {
			s.emit.user(s.st.Line)
			s.st.Held = false
		}
		if s.st.ErrLines > 0 || s.detecting() || s.keepBanner() {
			s.lines(body)
		} else {
			s.emit.user(body)
		}
		if len(s.d.subLines) > 0 {
			s.subLine(body)
		}
		s.st.Line, s.spare = s.spare[:0], s.st.Line
		s.st.LineOver, s.st.Classed = false, false
		tail = data[i+1:]
	}
	s.tail(tail)
}

// lines passes body on, looking at its complete lines for errors and
// banners while either window is open, and keeps the session's start.
func (s *Scanner) lines(body []byte) {
	from := 0
	for start := 0; start < len(body); {
		if s.st.ErrLines <= 0 && !s.detecting() && !s.keepBanner() {
			break
		}
		j := start + bytes.IndexByte(body[start:], '\n')
		line := body[start:j]
		if start == 0 && len(s.st.Line) > 0 && !s.st.LineOver {
			s.tmp = append(append(s.tmp[:0], s.st.Line...), line...)
			line = s.tmp
		}
		if len(line) > MaxLine {
			line = line[:MaxLine]
		}
		if s.keepBanner() {
			n := min(len(line), maxBanner-len(s.st.Banner)-1)
			s.st.Banner = append(append(s.st.Banner, line[:n]...), '\n')
		}
		// What the line reports comes right after it.
		s.emit.user(body[from : j+1])
		from = j + 1
		if s.st.DetectBudget > 0 {
			s.detectLine(line)
		}
		if s.st.ErrLines > 0 {
			s.errorLine(line)
		}
		start = j + 1
	}
	s.emit.user(body[from:])
	s.st.DetectBudget -= len(body)
}

// tail handles the partial line at the end of the chunk: held back while
// it may become a pager prompt, else passed on and classified.
func (s *Scanner) tail(tail []byte) {
	newLine := len(s.st.Line) == 0 && !s.st.LineOver
	if s.st.LineOver {
		s.emit.user(tail)
		return
	}
	if len(s.st.Line)+len(tail) > MaxLine {
		if s.st.Held {
			s.emit.user(s.st.Line)
			s.st.Held = false
		}
		s.emit.user(tail)
		s.st.Line, s.st.LineOver = s.st.Line[:0], true
		return
	}
	s.st.Line = append(s.st.Line, tail...)
	if s.st.Classed || len(s.st.Line) == 0 || len(s.st.Line) > maxTail {
		s.release(tail)
		return
	}
	if len(tail) == 0 && !s.st.Held {
		return
	}
	v := visible(s.vis[:0], s.st.Line, true)
	s.vis = v[:0]
	if escCut(s.st.Line) {
		// Wait for the end of the escape sequence before deciding.
		if s.st.Held || (newLine && holdable(s.pagers(), bytes.TrimLeft(v, " \t\r"))) {
			s.st.Held = true
			return
		}
		s.release(tail)
		return
	}
	if s.st.Held || newLine {
		lt := bytes.TrimLeft(v, " \t\r")
		if s.pager(bytes.TrimRight(lt, " \t\r"), false) {
			return
		}
		if s.st.Classed {
			s.release(tail)
			return
		}
		if holdable(s.pagers(), lt) {
			s.st.Held = true
			return
		}
	}
	s.release(tail)
	tv := v
	if i := bytes.LastIndexByte(tv, '\r'); i >= 0 {
		tv = tv[i+1:]
	}
	s.classify(tv)
}

// release passes the partial line on: the whole of it if it was held,
// else the part that came in this chunk (tail).
func (s *Scanner) release(tail []byte) {
	if s.st.Held {
		s.emit.user(s.st.Line)
		s.st.Held = false
		return
	}
	s.emit.user(tail)
}
