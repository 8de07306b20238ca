package device

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// Ready before send (SPEC DONE-1): a command typed before the program
// waits at its prompt is read by whatever reads the terminal then (a
// shell's rc file, a login, a banner still arriving), and the prompt the
// program draws afterwards would be taken for the command's end. So
// run_command first waits, within its timeout, until the session is at a
// prompt, and learns that prompt:
//   - a shell with integration: its prompt mark is the newest of its marks
//     (nothing started since); until it drew its first, nothing else counts;
//   - the last command ended at a prompt and nothing came since;
//   - a dialect's prompt is the cursor's line;
//   - the cursor's line on the screen looks like a prompt and the program
//     waits there: a local PTY says its foreground program is blocked
//     reading the terminal (at once), or the line has been still for
//     readyQuiet (Telnet, SSH, a program that cannot be told).
// A login field or a question at the cursor stops the call at once, with
// nothing sent; no prompt by the deadline gives reason not_ready.

// Sources of a prompt: where the session stood (readiness.source) and,
// in RunResult.PromptSource, what ended a command.
const (
	srcShell   = string(abi.SourceShell)   // the shell integration's mark
	srcDialect = string(abi.SourceDialect) // the device dialect's
	srcScreen  = "screen"                  // the cursor's line before the send
	srcNew     = "new"                     // a prompt the program settled at
	srcLearned = "learned"                 // the prompt learned at login
)

// readiness is where a session stood when a command was sent.
type readiness struct {
	source string // srcShell, srcDialect or srcScreen
	prompt string // the prompt's text (the cursor's line up to the cursor)
	// device: the dialect is a network device's (not linux): ^U is sent
	// there only to erase what the screen shows was typed.
	device bool
	off    uint64 // the output's end when it was seen
	sends  uint64 // the session's count of sends then (session.Sends)
	// dirty: the prompt line holds text that was not the prompt's (typed
	// by the session itself: late answers to terminal queries), erased
	// before the command.
	dirty bool
}

// readyQuiet: how long a line that looks like a prompt must stay still
// where nobody can say the program waits at it.
const readyQuiet = 300 * time.Millisecond

// readyPoll: how often readiness looks again while nothing arrives (a
// line's quiet time counts).
const readyPoll = 10 * time.Millisecond

// interruptQuiet: after an interrupt, how long readiness waits for the
// program to answer it (a new prompt) before it takes the session as it is.
const interruptQuiet = 500 * time.Millisecond

// ready waits until the session is at a prompt (see above). since, after
// an interrupt, is the mark taken before it: a prompt must come after it.
// A non-nil result ends the call without sending (not_ready, login,
// question, exit).
func ready(ctx context.Context, s *session.Session, r *runner, deadline time.Time, since *session.Cursor) (readiness, *RunResult, error) {
	if since == nil && r.ended != nil && s.Sends() == r.ended.sends && blanksSince(s, r.ended.off) {
		// Nothing came (but the prompt's own blank, in a read of its own)
		// and nobody typed since the last command ended at its prompt.
		return *r.ended, nil, nil
	}
	p := prober{s: s, r: r, since: since, start: time.Now()}
	if left := time.Until(deadline); left > 0 {
		spec := session.WaitSpec{Exit: true, Timeout: left, Check: p.check, Poll: readyPoll}
		reason, _, err := s.Wait(ctx, s.Mark(), spec, false)
		if err != nil {
			return readiness{}, nil, err
		}
		if p.at.source != "" || p.stop != nil {
			return p.at, p.stop, nil
		}
		switch reason {
		case session.ReasonExit, session.ReasonEOF:
			return readiness{}, &RunResult{Reason: "exit", ExitCode: exitCodeOf(ctx, s, exitWait)}, nil
		case session.ReasonHuman:
			return readiness{}, &RunResult{Reason: "human"}, nil
		}
	} else if p.check() {
		return p.at, p.stop, nil
	}
	row, _, _ := CursorLine(ctx, s)
	return readiness{}, &RunResult{Reason: "not_ready", LastLine: strings.TrimRight(row, " ")}, nil
}

// prober looks at a session for a prompt, as often as the wait asks.
type prober struct {
	s     *session.Session
	r     *runner
	since *session.Cursor
	start time.Time

	at   readiness
	stop *RunResult

	// What the screen and the dialect said when the output was at seen:
	// asked again only once more output or events came (a wait for quiet
	// looks often at a screen that has not changed).
	seen   session.Cursor
	looked bool
	row    string
	alt    bool
	rowOK  bool
	info   DialectInfo
	infoOK bool
}

// look asks the screen for the cursor's line and the dialect what it
// knows, unless nothing came since they were last asked.
func (p *prober) look(head session.Cursor) {
	if p.looked && head == p.seen {
		return
	}
	p.seen, p.looked = head, true
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p.row, p.alt, p.rowOK = CursorLine(ctx, p.s)
	p.infoOK = false
	if p.s.HasPlugin(session.DialectPlugin) {
		info, err := Info(ctx, p.s)
		p.info, p.infoOK = info, err == nil
	}
}

// check is the wait's condition: true once the session is at a prompt
// (p.at), or waits at something that stops the call (p.stop).
func (p *prober) check() bool {
	s := p.s
	head := s.Mark()
	quiet := time.Since(s.LastRx())
	if s.HasPlugin(session.ShellPlugin) {
		st := s.Shell()
		if st.AtPrompt() && (p.since == nil || st.Prompt.Seq > p.since.Seq) {
			p.at = readiness{source: srcShell, off: head.Off, dirty: typedAfter(s, st.Prompt.Offset, head.Off)}
			return true
		}
		if st.Prompt.Seq == 0 {
			return false // the shell has not drawn its first prompt: its rc files run
		}
	}
	if p.since != nil && head.Off == p.since.Off && time.Since(p.start) < interruptQuiet {
		return false // the interrupt's answer is on its way
	}
	if quiet < waitingQuiet {
		return false // output is arriving: looked at again once it pauses (readyPoll)
	}
	p.look(head)
	row := p.row
	if !p.rowOK {
		return false
	}
	if p.alt && quiet >= readyQuiet {
		// A full-screen program (the alternate screen) has no command line.
		p.stop = &RunResult{Reason: "not_ready", LastLine: "(a full-screen program is running: use send_keys, or interrupt: true)"}
		return true
	}
	if info := p.info; p.infoOK {
		switch {
		case info.Question != "":
			p.stop = &RunResult{Reason: "question", Question: info.Question, LastLine: row}
			return true
		case info.Login != "":
			p.stop = &RunResult{Reason: "login", Field: info.Login, LastLine: row}
			return true
		case info.Prompt != "" && strings.TrimRight(row, " ") == strings.TrimRight(info.Prompt, " "):
			p.at = readiness{source: srcDialect, prompt: info.Prompt, off: head.Off, device: deviceDialect(info.Dialect)}
			return true
		}
	}
	if e := p.r.ended; e != nil && p.since == nil && e.prompt != "" {
		// The last command's prompt, with text typed after it that nobody
		// typed (an answer to a terminal query the program that asked
		// never read).
		if rest, ok := strings.CutPrefix(row, e.prompt); ok && strings.TrimSpace(rest) != "" && waits(s, quiet, true) {
			p.at = readiness{source: e.source, prompt: e.prompt, off: head.Off, dirty: true}
			return true
		}
	}
	switch {
	case promptish(row):
		if waits(s, quiet, strings.HasSuffix(row, " ") || strongEnd(row) || s.HasPlugin(session.DialectPlugin)) {
			p.at = readiness{source: srcScreen, prompt: row, off: head.Off}
			return true
		}
	case quiet >= readyQuiet:
		switch f := asks(row); f {
		case "":
		case "question":
			p.stop = &RunResult{Reason: "question", Question: strings.TrimSpace(row), LastLine: strings.TrimRight(row, " ")}
			return true
		default:
			p.stop = &RunResult{Reason: "login", Field: f, LastLine: strings.TrimRight(row, " ")}
			return true
		}
	}
	return false
}

// deviceDialect: a dialect of a network device's CLI, not a Linux
// shell's (^U goes there only to erase what the screen shows was typed).
func deviceDialect(name string) bool { return name != "linux" }

// questionLine: a yes/no question a program waits at.
var questionLine = regexp.MustCompile(`(?i)(\[(y/n|yes/no|y/n/q)\]|\((y/n|yes/no|y or n)[^()]{0,24}\))[?:]?\s*$`)

// waits says whether the program waits at the line now on the cursor: a
// local PTY's foreground program blocked reading its terminal (after a
// moment for the rest of a burst), else a line still for readyQuiet that
// looks enough like a prompt (plausible: it ends with a blank or a bare
// >, # or $, or the session is a device's).
func waits(s *session.Session, quiet time.Duration, plausible bool) bool {
	if aw, ok := s.Awaiting(); ok {
		switch aw.State {
		case link.InputWaiting:
			return quiet >= waitingQuiet
		case link.InputBusy, link.InputGone:
			return false
		}
	}
	return quiet >= readyQuiet && plausible
}

// blanksSince says whether the output since off is nothing but blanks.
func blanksSince(s *session.Session, off uint64) bool {
	head := s.Mark().Off
	if head == off {
		return true
	}
	if head < off || head-off > 16 {
		return false
	}
	p, start := s.ReadRange(off, head)
	return start == off && len(strings.Trim(string(p), " \t")) == 0
}

// typedAfter says whether the output after a shell's prompt mark holds
// text: something was typed at the prompt (and echoed) since.
func typedAfter(s *session.Session, from, to uint64) bool {
	if to <= from {
		return false
	}
	p, _ := s.ReadRange(from, min(to, from+4096))
	return strings.TrimSpace(clean(p)) != ""
}

// CursorLine is the screen's line at the cursor, up to the cursor (the
// blank a prompt ends with kept), and whether the alternate screen is
// shown; without a screen, the output's unfinished last line.
func CursorLine(ctx context.Context, s *session.Session) (line string, alt, ok bool) {
	if !s.HasScreen() {
		line, _, ok := partialLine(s, 0)
		return line, false, ok
	}
	b, err := s.Screen(ctx, []byte(`{"op":"screen","format":"plain"}`))
	if err != nil {
		return "", false, false
	}
	var rep struct {
		Cursor    struct{ Row, Col int } `json:"cursor"`
		AltScreen bool                   `json:"altScreen"`
		Lines     []string               `json:"lines"`
	}
	if json.Unmarshal(b, &rep) != nil || rep.Cursor.Row < 0 || rep.Cursor.Row >= len(rep.Lines) {
		return "", false, false
	}
	return upToColumn(rep.Lines[rep.Cursor.Row], rep.Cursor.Col), rep.AltScreen, true
}

// upToColumn is a row's text in its first col cells, blank-padded.
func upToColumn(row string, col int) string {
	w := 0
	for i, r := range row {
		cw := session.Cells(string(r))
		if w+cw > col {
			return row[:i]
		}
		w += cw
	}
	if w < col {
		row += strings.Repeat(" ", col-w)
	}
	return row
}
