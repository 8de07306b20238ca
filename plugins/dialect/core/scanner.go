// Package core is the device-dialect scanner behind termhost's dialect
// plugin: sans-IO and pure, it reads a device's output stream chunk by chunk
// and reports prompts (with mode, sub-mode and hostname), pagers (answered
// and removed from the stream), questions, login fields, CLI errors,
// command completion and the detected dialect — all from one pattern table
// per dialect (dialects/*.json).
//
// Only the trailing partial line (no newline after it yet) can be a prompt,
// pager, question or login field, so bulk output costs one LastIndexByte
// per chunk: regular expressions run on that tail only, and on whole lines
// only inside short windows (the first lines after a command, for errors;
// the first kilobytes of a session, for banners). Everything kept between
// chunks is bounded.
package core

import (
	"bytes"
	"encoding/json"
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

// Detection levels.
const (
	levelNone = iota
	levelWeak
	levelPrompt
	levelConfident
)

// Event is something to emit at offset At of the output: an event (JSON),
// bytes toward the peer (Peer, the pager's answer), or both.
type Event struct {
	At   int
	JSON []byte
	Peer []byte
}

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

	Erase  bool   `json:"erase,omitempty"`
	EBuf   []byte `json:"ebuf,omitempty"`
	EscLen int    `json:"escLen,omitempty"`

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

// Scanner reads one session's inbound stream.
type Scanner struct {
	st      State
	d       *Dialect
	out     []byte
	evs     []Event
	tmp     []byte
	vis     []byte
	changed bool
}

// New returns a Scanner with no dialect (auto-detection on).
func New() *Scanner {
	s := &Scanner{d: anyDialect}
	s.st.MaxPages = DefaultMaxPages
	s.st.Auto = true
	s.st.DetectBudget = detectStart
	return s
}

// ErrUnknown is returned for a dialect name that has no table.
var ErrUnknown = errors.New("unknown dialect")

// Force sets the dialect and turns auto-detection off.
func (s *Scanner) Force(name string) error {
	d, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
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

// Export returns the scanner's state.
func (s *Scanner) Export() ([]byte, error) { return json.Marshal(&s.st) }

// Import restores a state from Export.
func (s *Scanner) Import(b []byte) error {
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	d := anyDialect
	if st.Dialect != "" {
		var ok bool
		if d, ok = Lookup(st.Dialect); !ok {
			return fmt.Errorf("%w %q", ErrUnknown, st.Dialect)
		}
	}
	if len(st.Line) > MaxLine || len(st.EBuf) > maxErase+16 || len(st.OutLine) > maxOutLine ||
		len(st.Question) > maxText || len(st.Login) > 16 || len(st.Banner) > maxBanner {
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
// or linux; equal evidence keeps what was found first). The last prompt
// is read again with the dialect chosen. Nothing is emitted: the next
// prompt event names the dialect.
func (s *Scanner) redetect() {
	if s.st.Forced || s.st.Answered || len(s.st.Banner) == 0 {
		return
	}
	was := s.d
	for rest := s.st.Banner; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		s.detectLine(line, 0)
	}
	s.evs = s.evs[:0]
	if s.d == was || s.st.Prompt == "" {
		return
	}
	if m, ok := parsePrompt(s.d, []byte(s.st.Prompt), s.st.Hostname, s.st.Edit); ok {
		s.st.Mode, s.st.Submode, s.st.Hostname, s.st.User = m.mode, m.sub, m.host, m.user
		return
	}
	s.st.Mode, s.st.Submode, s.st.Hostname, s.st.User, s.st.Prompt = "", "", "", "", ""
}

// Held reports whether bytes are held back (a partial line that may yet
// become a pager prompt).
func (s *Scanner) Held() bool { return s.st.Held }

// Flush releases held bytes (appended to dst): the plugin calls it when the
// stream has been quiet for a while, so a lone "-" is not kept forever.
func (s *Scanner) Flush(dst []byte) []byte {
	if !s.st.Held {
		return dst
	}
	s.st.Held = false
	s.st.Classed = true
	return append(dst, s.st.Line...)
}

// Quiet is called when the stream has been quiet for a while with bytes
// held: a pager prompt that was waiting for a possible continuation is
// answered now; anything else held is released. Results as Inbound's.
func (s *Scanner) Quiet() (out []byte, evs []Event) {
	s.out, s.evs, s.changed = s.out[:0], s.evs[:0], false
	if !s.st.Held {
		return s.out, s.evs
	}
	v := visible(s.vis[:0], s.st.Line, true)
	s.vis = v[:0]
	if !s.pager(bytes.TrimSpace(v), true) {
		s.out = s.Flush(s.out)
	}
	return s.out, s.evs
}

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
	if s.detecting() || (!s.st.Forced && (s.st.Level < levelConfident || s.st.Dialect == "linux")) {
		s.st.DetectBudget = max(s.st.DetectBudget, detectAfterCmd)
	}
}

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

func (s *Scanner) detecting() bool {
	return !s.st.Forced && s.st.DetectBudget > 0 && (s.st.Level < levelConfident || s.st.Dialect == "linux")
}

// Inbound scans one inbound chunk. It returns the bytes to pass on, the
// events at their offsets in them, and whether the bytes differ from p
// (when not, and there are no events, p passes on as it is). The results
// are valid until the next call.
func (s *Scanner) Inbound(p []byte) (out []byte, evs []Event, changed bool) {
	s.out, s.evs, s.changed = s.out[:0], s.evs[:0], false
	data := p
	if s.st.Erase {
		data = s.erase(p)
		s.changed = true
	}
	tail := data
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		body := data[:i+1]
		if s.st.Held {
			s.out = append(s.out, s.st.Line...)
			s.st.Held = false
			s.changed = true
		}
		if s.st.ErrLines > 0 || s.detecting() || s.keepBanner() {
			s.lines(body)
		}
		if s.d == anyDialect || s.d.Name == "juniper_junos" {
			s.edit(body)
		}
		s.out = append(s.out, body...)
		s.st.Line, s.st.LineOver, s.st.Classed = s.st.Line[:0], false, false
		tail = data[i+1:]
	}
	s.tail(tail)
	return s.out, s.evs, s.changed
}

// keepBanner: the session's start is still being kept for detecting
// again (Import).
func (s *Scanner) keepBanner() bool {
	return !s.st.Forced && !s.st.Answered && len(s.st.Banner) < maxBanner
}

// lines looks at the complete lines of body for errors and banners, while
// either window is open, and keeps the session's start.
func (s *Scanner) lines(body []byte) {
	base := len(s.out)
	defer func() { s.st.DetectBudget -= len(body) }()
	first := true
	for start := 0; start < len(body); {
		if s.st.ErrLines <= 0 && !s.detecting() && !s.keepBanner() {
			break
		}
		j := start + bytes.IndexByte(body[start:], '\n')
		line := body[start:j]
		if first && len(s.st.Line) > 0 && !s.st.LineOver {
			s.tmp = append(append(s.tmp[:0], s.st.Line...), line...)
			line = s.tmp
		}
		first = false
		if len(line) > MaxLine {
			line = line[:MaxLine]
		}
		if s.keepBanner() {
			n := min(len(line), maxBanner-len(s.st.Banner)-1)
			s.st.Banner = append(append(s.st.Banner, line[:n]...), '\n')
		}
		s.checkLine(line, base+j+1)
		start = j + 1
	}
}

func (s *Scanner) checkLine(line []byte, at int) {
	if s.st.DetectBudget > 0 {
		s.detectLine(line, at)
	}
	if s.st.ErrLines <= 0 {
		return
	}
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
			s.event(at, map[string]any{"type": "error", "text": text(v)}, nil)
			return
		}
	}
}

// detectLine looks for the dialects' banner texts in a complete line.
func (s *Scanner) detectLine(line []byte, at int) {
	if s.st.Forced || (s.st.Level == levelConfident && s.st.Dialect != "linux") {
		return
	}
	for _, d := range byPriority {
		for _, x := range d.detect {
			if bytes.Contains(line, x.contains) {
				lv := levelWeak
				if x.confident {
					lv = levelConfident
				}
				s.detected(d, lv, at)
			}
		}
	}
}

// detected records evidence that the device speaks d.
func (s *Scanner) detected(d *Dialect, level, at int) {
	if s.st.Forced {
		return
	}
	cur := s.st.Dialect
	switch {
	case cur == d.Name:
		s.st.Level = max(s.st.Level, level)
		return
	case cur == "":
	case cur == "linux" && level == levelConfident:
		// a device CLI started from a shell (vtysh) says who it is
	case level > s.st.Level:
	case level == levelPrompt && s.st.Level == levelPrompt:
		// the prompt no longer fits the guessed dialect
	default:
		return
	}
	s.d = d
	s.st.Dialect, s.st.Level = d.Name, level
	s.event(at, map[string]any{"type": "dialect", "name": d.Name, "detected": true, "confident": level == levelConfident}, nil)
}

// edit keeps the last complete line's [edit ...] banner (Junos shows it
// above a configuration-mode prompt).
func (s *Scanner) edit(body []byte) {
	end := len(body) - 1
	k := bytes.LastIndexByte(body[:end], '\n')
	line := body[k+1 : end]
	if k < 0 && len(s.st.Line) > 0 && !s.st.LineOver {
		s.tmp = append(append(s.tmp[:0], s.st.Line...), line...)
		line = s.tmp
	}
	if len(line) > maxTail {
		s.st.Edit = ""
		return
	}
	i := bytes.Index(line, []byte("[edit"))
	if i < 0 {
		if len(bytes.TrimSpace(line)) > 0 {
			s.st.Edit = ""
		}
		return
	}
	v := visible(s.vis[:0], line[i+5:], false)
	s.vis = v[:0]
	if j := bytes.IndexByte(v, ']'); j >= 0 {
		s.st.Edit = strings.TrimSpace(string(v[:j]))
	}
}

// erase removes what a device sends after a pager was answered to wipe the
// pager prompt: backspaces, CRs, blanks and cursor/erase escape sequences
// (ESC[K, ESC[nD ..., and SGR resets). Blanks are only dropped when an erase element
// follows them: indentation of the next line stays. It returns the bytes
// left to scan.
func (s *Scanner) erase(p []byte) []byte {
	for k := 0; k < len(p); k++ {
		c := p[k]
		if s.st.EscLen > 0 {
			if s.st.EscLen == 1 {
				if c == '[' && len(s.st.EBuf) < maxErase {
					s.st.EBuf = append(s.st.EBuf, c)
					s.st.EscLen = 2
					continue
				}
				return s.endErase(p[k:])
			}
			switch {
			case c >= '0' && c <= '?' && s.st.EscLen < 12:
				s.st.EBuf = append(s.st.EBuf, c)
				s.st.EscLen++
				continue
			case c == 'K' || c == 'D' || c == 'J' || c == 'C' || c == 'G' || c == 'm':
				s.st.EBuf, s.st.EscLen = s.st.EBuf[:0], 0
				continue
			}
			return s.endErase(p[k:])
		}
		switch c {
		case '\b':
			s.st.EBuf = s.st.EBuf[:0]
			continue
		case '\r':
			s.st.EBuf = append(s.st.EBuf[:0], '\r')
			continue
		case ' ':
			if len(s.st.EBuf) < maxErase {
				s.st.EBuf = append(s.st.EBuf, ' ')
				continue
			}
		case 0x1b:
			if len(s.st.EBuf) < maxErase {
				s.st.EBuf = append(s.st.EBuf, c)
				s.st.EscLen = 1
				continue
			}
		}
		return s.endErase(p[k:])
	}
	return nil
}

// endErase ends the erase run before rest: pending blanks go back in front
// of it (a pending CR only before a LF).
func (s *Scanner) endErase(rest []byte) []byte {
	pend := s.st.EBuf
	if len(pend) > 0 && pend[0] == '\r' && (len(pend) > 1 || rest[0] != '\n') {
		pend = pend[1:]
	}
	s.st.Erase, s.st.EscLen = false, 0
	if len(pend) == 0 {
		s.st.EBuf = s.st.EBuf[:0]
		return rest
	}
	s.tmp = append(append(s.tmp[:0], pend...), rest...)
	s.st.EBuf = s.st.EBuf[:0]
	// s.tmp is reused by lines/edit: scan a copy.
	return append([]byte(nil), s.tmp...)
}

// tail handles the partial line at the end of the chunk.
func (s *Scanner) tail(tail []byte) {
	newLine := len(s.st.Line) == 0 && !s.st.LineOver
	if s.st.LineOver {
		s.out = append(s.out, tail...)
		return
	}
	if len(s.st.Line)+len(tail) > MaxLine {
		if s.st.Held {
			s.out = append(s.out, s.st.Line...)
			s.st.Held = false
			s.changed = true
		}
		s.out = append(s.out, tail...)
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
			s.changed = true
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
			if !s.st.Held {
				s.st.Held = true
			}
			s.changed = true
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
// else the part that came in this chunk.
func (s *Scanner) release(tail []byte) {
	if s.st.Held {
		s.out = append(s.out, s.st.Line...)
		s.st.Held = false
		s.changed = true
		return
	}
	s.out = append(s.out, tail...)
}

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
// still unemitted, makes up.
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
			s.event(len(s.out), map[string]any{"type": "pager", "text": text(v), "pages": s.st.Pages}, p.answer)
			s.dropPager()
			return true
		}
		if s.st.Auto && len(p.quit) > 0 && !s.st.LimitHit {
			// The bound: leave the pager so that the device returns to
			// its prompt; the output so far stays, the prompt goes.
			s.st.LimitHit = true
			s.event(len(s.out), map[string]any{"type": "pager_limit", "pages": s.st.Pages, "quit": true}, p.quit)
			s.dropPager()
			return true
		}
		// Not answered: the prompt stays in the stream for the user (all
		// of the line is unemitted: pager is only asked then).
		s.out = append(s.out, s.st.Line...)
		s.st.Held, s.changed = false, true
		s.st.Classed = true
		if !s.st.Auto {
			s.event(len(s.out), map[string]any{"type": "pager", "text": text(v), "pages": s.st.Pages, "answered": false}, nil)
		} else if !s.st.LimitHit {
			s.st.LimitHit = true
			s.event(len(s.out), map[string]any{"type": "pager_limit", "pages": s.st.Pages}, nil)
		}
		return true
	}
	return false
}

// dropPager removes an answered pager prompt and whatever the device sends
// to wipe it.
func (s *Scanner) dropPager() {
	s.st.Line, s.st.Held, s.st.Classed = s.st.Line[:0], false, false
	s.st.Erase, s.st.EBuf, s.st.EscLen = true, s.st.EBuf[:0], 0
	s.changed = true
}

// classify looks at the visible tail (after its last CR): a login field, a
// question or a prompt.
func (s *Scanner) classify(tv []byte) {
	t := bytes.TrimRight(tv, " \t")
	if len(t) == 0 || strings.IndexByte(":>#$]?)%", t[len(t)-1]) < 0 {
		return
	}
	at := len(s.out)
	for _, l := range s.d.login {
		if l.re.Match(tv) && (l.unless == "" || !bytes.HasPrefix(tv, []byte(l.unless))) {
			field := l.field
			if field == "password" && s.st.Enable {
				field = "enable"
			}
			s.st.Classed, s.st.Secret = true, field != "username"
			s.st.Login, s.st.Question = field, ""
			s.event(at, map[string]any{"type": "login", "field": field}, nil)
			return
		}
	}
	for _, q := range s.d.questions {
		if q.Match(tv) {
			s.st.Classed = true
			s.st.Login, s.st.Question = "", text(bytes.TrimSpace(tv))
			s.event(at, map[string]any{"type": "question", "text": s.st.Question}, nil)
			return
		}
	}
	if s.prompt(s.d, tv, at) {
		return
	}
	if s.st.Forced || s.st.Level == levelConfident {
		return
	}
	for _, d := range byPriority {
		if d == s.d {
			continue
		}
		for _, g := range d.guess {
			if g.Match(tv) {
				s.detected(d, levelPrompt, at)
				if s.d == d {
					s.prompt(d, tv, at)
				}
				return
			}
		}
	}
}

// parsed is a prompt read by a dialect's patterns.
type parsed struct {
	mode, sub, host, user, cwd string
}

// parsePrompt reads tv with d's prompt patterns; known is the hostname
// seen so far (Huawei's views are split from it), edit the Junos [edit]
// line above.
func parsePrompt(d *Dialect, tv []byte, known, edit string) (parsed, bool) {
	for _, pr := range d.prompts {
		m := pr.re.FindSubmatchIndex(tv)
		if m == nil {
			continue
		}
		group := func(i int) string {
			if i < 0 || m[2*i] < 0 {
				return ""
			}
			return string(tv[m[2*i]:m[2*i+1]])
		}
		host, sub := group(pr.host), strings.TrimSpace(group(pr.sub))
		if pr.splitSub != "" {
			if known != "" && strings.HasPrefix(host, known+pr.splitSub) {
				host, sub = known, host[len(known)+len(pr.splitSub):]
			} else if host != known {
				if h, rest, ok := strings.Cut(host, pr.splitSub); ok && h != "" {
					host, sub = h, rest
				}
			}
		}
		if pr.subFromEdit {
			sub = edit
		}
		if sub == "config" {
			sub = ""
		}
		return parsed{mode: pr.mode, sub: sub, host: host, user: group(pr.user), cwd: group(pr.cwd)}, true
	}
	return parsed{}, false
}

// prompt parses tv with d's prompt patterns.
func (s *Scanner) prompt(d *Dialect, tv []byte, at int) bool {
	p, ok := parsePrompt(d, tv, s.st.Hostname, s.st.Edit)
	if !ok {
		return false
	}
	if s.st.Dialect == "" {
		// A prompt parsed by a table before any detection: that
		// table's dialect is the guess.
		s.detected(d, levelPrompt, at)
	} else if d == s.d && s.st.Level < levelPrompt {
		s.st.Level = levelPrompt
	}
	s.st.Mode, s.st.Submode, s.st.Hostname, s.st.User = p.mode, p.sub, p.host, p.user
	s.st.Prompt = string(bytes.TrimRight(tv, " \t"))
	s.st.Classed, s.st.Secret, s.st.Enable = true, false, false
	s.st.Login, s.st.Question = "", ""
	ev := map[string]any{"type": "prompt", "dialect": d.Name, "hostname": p.host, "mode": p.mode, "submode": p.sub, "prompt": s.st.Prompt}
	if s.st.User != "" {
		ev["user"] = s.st.User
	}
	if p.cwd != "" {
		ev["cwd"] = p.cwd
	}
	s.event(at, ev, nil)
	if s.st.Awaiting {
		s.st.Awaiting = false
		s.event(at, map[string]any{"type": "done"}, nil)
		if s.st.Counts && !s.st.Answered {
			s.st.Answered, s.st.Banner = true, nil
		}
	}
	return true
}

func (s *Scanner) event(at int, v map[string]any, peer []byte) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.evs = append(s.evs, Event{At: at, JSON: b, Peer: peer})
	s.changed = true
}

// text bounds an event's text and makes it valid UTF-8 for JSON.
func text(v []byte) string {
	if len(v) > maxText {
		v = v[:maxText]
	}
	return strings.ToValidUTF8(string(v), "?")
}

// escCut reports whether p ends inside an escape sequence.
func escCut(p []byte) bool {
	i := bytes.LastIndexByte(p, 0x1b)
	if i < 0 {
		return false
	}
	if i+1 >= len(p) {
		return true
	}
	switch p[i+1] {
	case '[':
		for _, c := range p[i+2:] {
			if c >= 0x40 && c <= 0x7e {
				return false
			}
		}
		return true
	case ']':
		return bytes.IndexByte(p[i+2:], 0x07) < 0
	}
	return false
}

// visible appends p as a terminal shows it on one line: escape sequences
// (CSI, OSC, two-byte) and control characters dropped, backspace applied;
// CR is kept when keepCR (callers look after the last one), tab kept. An
// escape sequence cut off at the end is dropped.
func visible(dst, p []byte, keepCR bool) []byte {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == 0x1b:
			if i+1 >= len(p) {
				return dst
			}
			switch p[i+1] {
			case '[':
				j := i + 2
				for j < len(p) && (p[j] < 0x40 || p[j] > 0x7e) {
					j++
				}
				if j >= len(p) {
					return dst
				}
				i = j
			case ']':
				j := i + 2
				for j < len(p) && p[j] != 0x07 && !(p[j] == 0x1b && j+1 < len(p) && p[j+1] == '\\') {
					j++
				}
				if j >= len(p) {
					return dst
				}
				if p[j] == 0x1b {
					j++
				}
				i = j
			default:
				i++
			}
		case c == '\b':
			if n := len(dst); n > 0 && dst[n-1] != '\r' {
				dst = dst[:n-1]
			}
		case c == '\r':
			if keepCR {
				dst = append(dst, c)
			}
		case c == '\t':
			dst = append(dst, c)
		case c < 0x20 || c == 0x7f:
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
