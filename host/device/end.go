package device

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// endsWait says whether an event ends a command's wait besides a prompt:
// a question, a login field, or a pager_limit after which the dialect did
// not leave the pager (with its quit key the device returns to its prompt
// and the wait goes on).
func endsWait(e *session.Event) bool {
	switch b := e.Body.(type) {
	case *abi.Question, *abi.Login:
		return true
	case *abi.PagerLimit:
		return !b.Quit
	}
	return false
}

// command is one command's wait for its end, from the mark taken before
// it was sent (finish's steps). A command that timed out keeps its state:
// the next call resumes its wait (RunCommand's pending command).
type command struct {
	s    *session.Session
	mark session.Cursor
	o    RunOptions
	sent time.Time
	// dialect: a dialect plugin is in the chain; then only its prompts
	// (and the shell integration's) count among prompt events (a Telnet
	// GA or EOR also follows a pager prompt or a question).
	dialect bool
	// col: the output, copied out as it arrives (a long one would
	// otherwise lose its head to the session's ring before it ends).
	col collector
	// anchor: a prompt on a line ends the command only after the
	// command's echo: output of an earlier exchange still arriving (after
	// send_secret or telnet_send) can bring a prompt of its own first, and
	// the prompt the command was typed at is on the screen until the echo
	// moves past it. A peer that does not echo the command as typed gets
	// the first prompt once the stream has been quiet for echoQuiet.
	anchor echoAnchor
	// line: where the output's last line, unfinished (the program waits
	// after it), ended the command: the prompt learned before the send
	// (source screen), the login prompt's shape (learned), or a new
	// prompt the program settled at (new).
	line struct {
		source string
		off    uint64
		text   string
		// before: the line's text before the prompt (output the command
		// left without a final newline, the prompt drawn after it).
		before string
	}
}

// seen is what the events after the mark said about the command.
type seen struct {
	prompt, done, cmd *session.Event
	promptBody        *abi.Prompt // prompt's body
	limited           bool        // the pager bound was reached
	end               uint64      // where the output ends so far (a question or login field cuts it)
}

// newCommand starts the wait for the end of what was sent after mark (a
// command line, or a secret).
func newCommand(s *session.Session, mark session.Cursor, o RunOptions) *command {
	if o.MaxBytes <= 0 {
		o.MaxBytes = session.DefaultMaxBytes
	}
	c := &command{s: s, mark: mark, o: o, sent: time.Now(), dialect: s.HasPlugin(session.DialectPlugin)}
	c.col = collector{s: s, off: mark.Off, limit: min(max(4*o.MaxBytes, 1<<20), 16<<20)}
	c.anchor = echoAnchor{tail: echoTail(o.Command), on: true}
	return c
}

// commandResult waits for the end of what was sent after mark (a command
// line, or a secret) and returns it as RunCommand does.
func commandResult(ctx context.Context, s *session.Session, mark session.Cursor, o RunOptions) (RunResult, error) {
	return newCommand(s, mark, o).finish(ctx)
}

// finish waits (for c.o.Timeout), reads the events, decides how the
// command ended and where its output lies, and cuts the output. Called
// again on a command that timed out, it waits on from where it was.
func (c *command) finish(ctx context.Context) (RunResult, error) {
	reason, used, err := c.wait(ctx)
	if err != nil {
		return RunResult{}, err
	}
	res := RunResult{Reason: string(reason), TimeoutMs: used.Milliseconds()}
	sn := c.scan(&res)
	c.ending(&res, &sn, reason)
	c.output(&res, &sn)
	if res.Reason == "exit" && res.ExitCode == nil {
		// The command ended the program: its exit status is the command's
		// (collected just after the session ends).
		res.ExitCode = exitCodeOf(ctx, c.s, exitWait)
	}
	return res, nil
}

// exitWait bounds the wait for a process's exit status once its session
// has ended.
const exitWait = 2 * time.Second

// endedAt is where the session stood after the command ended at a prompt:
// the next command is sent at once while nothing more came.
func (c *command) endedAt(res RunResult) *readiness {
	at := &readiness{source: c.o.at.source, prompt: c.o.at.prompt, off: c.s.Mark().Off, sends: c.s.Sends()}
	switch {
	case res.PromptSource == srcShell:
		at.source, at.prompt = srcShell, ""
	case res.PromptSource == srcDialect && res.Prompt != "":
		at.source, at.prompt, at.device = srcDialect, res.Prompt, deviceDialect(res.Dialect)
	case c.line.source != "":
		at.source, at.prompt = srcScreen, c.line.text
	case res.Prompt != "":
		at.source, at.prompt = srcScreen, res.Prompt
	}
	if at.source == srcScreen && at.prompt == "" {
		return nil
	}
	return at
}

// isPrompt: an event that is a prompt that counts (with a dialect in the
// chain, only the dialect's and the shell integration's).
func (c *command) isPrompt(e *session.Event) bool {
	p, ok := e.Body.(*abi.Prompt)
	return ok && (!c.dialect || p.Source == abi.SourceDialect || p.Source == abi.SourceShell)
}

// promptEnds: a prompt event at off ends the command. The shell
// integration's marks need no echo (the shell marks a new prompt only
// after a command line); a dialect's prompt must follow the echo, or the
// stream was quiet without one; any other (a Telnet GA) counts as it
// always has.
func (c *command) promptEnds(e *session.Event) bool {
	p := e.Body.(*abi.Prompt)
	switch {
	case p.Source == abi.SourceShell:
		return true
	case c.dialect:
		return c.afterEcho(e.Offset)
	}
	return true
}

// afterEcho: a prompt at off comes after the command's echo, or the stream
// has been quiet without one.
func (c *command) afterEcho(off uint64) bool {
	return c.anchor.after(off) || (!c.anchor.found && c.anchor.quiet && off > c.mark.Off)
}

// linePoll: how often a wait looks again at an unfinished last line that
// may be a prompt the program settled at (its quiet time counts).
const linePoll = 20 * time.Millisecond

// wait waits until the command ended: a prompt that counts, a question,
// a login field, the pager bound, the learned prompt, the expect match,
// the session's end or the timeout.
func (c *command) wait(ctx context.Context) (session.Reason, time.Duration, error) {
	spec := session.WaitSpec{Exit: true, Timeout: c.o.Timeout, Until: c.o.Expect, Check: c.stop, Poll: linePoll}
	if c.o.Timeout <= 0 {
		// No time left (a pending command looked at once more).
		if c.stop() {
			return session.ReasonPrompt, 0, nil
		}
		if !c.s.Alive() {
			return session.ReasonExit, 0, nil
		}
		return session.ReasonTimeout, 0, nil
	}
	reason, used, err := c.s.Wait(ctx, c.mark, spec, true)
	if reason == session.ReasonMatched && c.o.Expect == nil {
		reason = session.ReasonPrompt
	}
	return reason, used, err
}

// stop is the wait's check: it copies out what came and says whether an
// event or the output's unfinished last line ended the command. Only
// events about bytes that came after the send count: a plugin may report a
// prompt it saw before late (a dialect decides about a held line when
// more arrives).
func (c *command) stop() bool {
	c.col.pull()
	c.anchor.find(&c.col)
	quiet := time.Since(c.s.LastRx())
	c.anchor.quiet = quiet >= echoQuiet
	evs := c.s.Events(c.mark.Seq)
	for i := range evs {
		e := &evs[i]
		if e.Offset <= c.mark.Off && !(e.Offset == c.mark.Off && isShellPrompt(e)) {
			continue
		}
		if endsWait(e) || c.isPrompt(e) && c.promptEnds(e) {
			return true
		}
	}
	if c.line.source != "" {
		return true
	}
	if c.o.Expect != nil {
		return false // the caller's pattern ends it
	}
	line, off, ok := partialLine(c.s, c.mark.Off)
	if !ok || off <= c.mark.Off || !c.afterEcho(off) {
		return false
	}
	switch {
	case c.o.at.source == srcScreen && c.o.at.prompt != "" && sameLine(line, c.o.at.prompt):
		c.line.source = srcScreen
	case c.o.shape != nil && c.o.shape.matches(line):
		c.line.source = srcLearned
	case promptish(line) && settled(c.s, quiet, c.o.at.source == srcShell, endsBlank(c.s) || strongEnd(line)):
		c.line.source = srcNew
	case !c.dialect && asks(line) != "" && settled(c.s, quiet, false, true):
		// A login field or a question the program waits at (a dialect
		// reports its own as events).
		c.line.source = srcAsk
	default:
		return false
	}
	c.line.off, c.line.text = off, strings.TrimRight(line, " \t")
	if c.line.source == srcScreen {
		// The prompt ends the line: what is before it is output.
		p := strings.TrimRight(c.o.at.prompt, " \t")
		c.line.before = strings.TrimSuffix(c.line.text, p)
		c.line.text = p
	}
	return true
}

// isShellPrompt: the shell integration's prompt (drawn after the command
// line was read: its offset may be the mark's when nothing was echoed).
func isShellPrompt(e *session.Event) bool {
	p, ok := e.Body.(*abi.Prompt)
	return ok && p.Source == abi.SourceShell
}

// sameLine: the output's unfinished last line is the prompt learned before
// the send (the same text; a program's output left unfinished before it,
// as `printf x` leaves, is allowed in front).
func sameLine(line, prompt string) bool {
	l, p := strings.TrimRight(line, " \t"), strings.TrimRight(prompt, " \t")
	return p != "" && strings.HasSuffix(l, p)
}

// Quiet times after which an unfinished last line that looks like a
// prompt is taken for one the program settled at: where the terminal says
// its program waits for input (a local PTY), almost at once; where it
// cannot say (Telnet, SSH, a program polling more than its terminal),
// after newPromptQuiet; an integrated shell's own prompt without its mark
// (PS1 replaced by the user), after shellQuiet.
const (
	waitingQuiet   = 10 * time.Millisecond
	newPromptQuiet = 500 * time.Millisecond
	shellQuiet     = time.Second
)

// settled: the program waits at the unfinished last line (which looks
// like a prompt). Where nobody can say whether the program waits (Telnet,
// SSH, a program polling more than its terminal), the line must also end
// with a blank, as prompts do and a stalled progress bar ("[###  ] 45%",
// "[Working]") does not, or with a device's bare >, # or $ ("edge-r1>").
func settled(s *session.Session, quiet time.Duration, shell, blank bool) bool {
	need := newPromptQuiet
	known := false
	if aw, ok := s.Awaiting(); ok {
		switch aw.State {
		case link.InputBusy, link.InputGone:
			return false
		case link.InputWaiting:
			need, known = waitingQuiet, true
		}
		if shell && aw.Leader {
			need = shellQuiet // its own mark is on the way
		}
	}
	return quiet >= need && (known || blank)
}

// strongEnd: a line that ends with >, # or $ itself (a device's prompt
// has no blank after it), not with ], % or ) that a program's progress
// or status line may end with.
func strongEnd(line string) bool {
	t := strings.TrimRight(line, " \t")
	return t != "" && strings.IndexByte(">#$", t[len(t)-1]) >= 0
}

// srcAsk: the line that ended a command is a login field or a question.
const srcAsk = "ask"

// asks says what a line the program waits at asks for: "username" or
// "password" (a login field: su, sudo, ssh), "question" (yes or no), or
// "".
func asks(line string) string {
	t := strings.TrimRight(line, " \t")
	switch {
	case len(t) > maxLearned:
		return ""
	case loginPass.MatchString(t):
		return "password"
	case loginUser.MatchString(t):
		return "username"
	case questionLine.MatchString(t):
		return "question"
	}
	return ""
}

// promptEnd: how a prompt's last characters look: a shell's $, # or % (not
// a percentage), a REPL's or CLI's >, ], a debugger's (gdb), and Python's
// continuation "...".
var promptEnd = regexp.MustCompile(`(?:[>#$\]]|(?:^|[^\d.])%|\((?:gdb|Pdb|lldb)\)|^\.\.\.)\s*$`)

// promptish: text that looks like a prompt and is no login field.
func promptish(t string) bool {
	t = strings.TrimRight(t, " \t")
	return t != "" && endsLike(t, promptEnd)
}

// scan reads the events after the mark into res (pages, question, login
// field, error line, dialect) and returns the prompt, done and command
// events that bound the output.
func (c *command) scan(res *RunResult) seen {
	sn := seen{end: c.s.Mark().Off}
	evs := c.s.Events(c.mark.Seq)
	for i := range evs {
		e := &evs[i]
		if e.Offset <= c.mark.Off && e.Type != abi.TypeDialect && !(e.Offset == c.mark.Off && isShellPrompt(e)) {
			continue
		}
		switch b := e.Body.(type) {
		case *abi.Command:
			if sn.cmd == nil && b.Source == abi.SourceShell {
				sn.cmd = e
			}
		case *abi.Pager:
			// The dialect counts the pages of a command: a long run of
			// pages outlives the session's event ring.
			if b.Pages > 0 {
				res.Pages = max(res.Pages, b.Pages)
			} else {
				res.Pages++
			}
		case *abi.PagerLimit:
			res.Pages = max(res.Pages, b.Pages)
			sn.limited = true
		case *abi.Question:
			if res.Question == "" && sn.prompt == nil {
				res.Question = b.Text
				res.Reason = "question"
				sn.end = e.Offset
			}
		case *abi.Login:
			if res.Question == "" && res.Field == "" && sn.prompt == nil {
				res.Field = b.Field
				res.Reason = "login"
				sn.end = e.Offset
			}
		case *abi.Error:
			if res.Error == "" {
				res.Error = b.Text
			}
		case *abi.Done:
			if sn.done == nil && (sn.prompt == nil || e.Offset <= sn.prompt.Offset) {
				sn.done = e
			}
		case *abi.Prompt:
			if sn.prompt == nil && res.Question == "" && res.Field == "" && c.isPrompt(e) && c.promptEnds(e) {
				sn.prompt, sn.promptBody = e, b
			}
		case *abi.Dialect:
			res.Dialect = b.Name
		}
	}
	return sn
}

// shell: the command ended at a shell integration's prompt.
func (sn *seen) shell() bool {
	return sn.promptBody != nil && sn.promptBody.Source == abi.SourceShell
}

// ending decides the reason the command ended for and where its output
// ends (sn.end): a question or login field, the prompt (the shell's done
// mark before it), the unfinished last line that ended it, or the expect
// match.
func (c *command) ending(res *RunResult, sn *seen, reason session.Reason) {
	shell := sn.shell()
	switch {
	case res.Question != "", res.Field != "":
	case sn.prompt != nil && (c.line.source == "" || sn.prompt.Offset <= c.line.off):
		res.Reason = "prompt"
		if sn.done != nil && !shell {
			res.Reason = "done"
		}
		res.PromptSource = string(sn.promptBody.Source)
		sn.end = sn.prompt.Offset
		if shell && sn.done != nil {
			sn.end = sn.done.Offset // the end of the output, before the prompt is drawn
		}
		promptInto(res, sn.promptBody)
		// A dialect reads its prompt from the line's start: output left
		// without a final newline is before it ("M-4root@vm:~#" after
		// `printf M-4` at "root@vm:~#"). The prompt the command was typed
		// at, ending the line, tells where it starts.
		if p := strings.TrimRight(c.o.at.prompt, " \t"); !shell && p != "" && len(res.Prompt) > len(p) && strings.HasSuffix(res.Prompt, p) {
			c.line.before, res.Prompt = strings.TrimSuffix(res.Prompt, p), p
		}
	case c.line.source == srcAsk:
		switch f := asks(c.line.text); f {
		case "question":
			res.Reason, res.Question = "question", c.line.text
		default:
			res.Reason, res.Field = "login", f
		}
		sn.end = c.line.off
		sn.prompt = nil
	case c.line.source != "":
		res.Reason, res.PromptSource, res.Prompt = "prompt", c.line.source, c.line.text
		sn.end = c.line.off
		sn.prompt = nil
	case reason == session.ReasonMatched && c.o.Expect != nil:
		res.Reason = "matched"
	}
	if sn.limited && res.Question == "" && res.Field == "" {
		res.Reason = "pager_limit" // and the prompt, if the pager was left
	}
}

// promptInto takes what a prompt event says into res.
func promptInto(res *RunResult, p *abi.Prompt) {
	res.Prompt, res.Mode, res.Submode, res.Hostname = p.Prompt, p.Mode, p.Submode, p.Hostname
	if p.Dialect != "" {
		res.Dialect = p.Dialect
	}
	if p.ExitCode != nil {
		n := *p.ExitCode
		res.ExitCode = &n
	}
}

// output cuts the command's output out of what was collected: from the
// shell's command mark or the end of the echo's line (else the echo is
// dropped from the text) to sn.end, the prompt and an expect match left
// out, at most MaxBytes.
func (c *command) output(res *RunResult, sn *seen) {
	shell := sn.shell()
	start, end := c.mark.Off, sn.end
	marked := false
	if sn.cmd != nil && sn.cmd.Offset >= start && sn.cmd.Offset <= end && (!c.anchor.found || sn.cmd.Offset >= c.anchor.end) {
		start, marked = sn.cmd.Offset, true // the shell marked where the command's output starts
	}
	echoCut := false
	if !marked && c.anchor.found && c.anchor.end <= end {
		start, echoCut = c.anchor.end, true // after the echo's line: nothing before it is this command's
	}
	if end < start {
		end = start
	}
	c.col.pull()
	raw, missing := c.col.slice(start, end)
	out := strings.ToValidUTF8(clean(raw), "\uFFFD")
	if !marked && !echoCut {
		out = dropEcho(out, c.o.Command)
	}
	if res.Prompt != "" || (sn.prompt != nil && !shell) || (shell && sn.done == nil) {
		// The prompt's line ends the output (a shell's prompt mark with no
		// command's end before it, as after a line that did not parse:
		// the prompt was drawn after the output).
		out = dropPrompt(out, res.Prompt)
	}
	out += c.line.before // the output's unfinished last line, before the prompt on it
	if c.o.Expect != nil && res.Reason == "matched" {
		if loc := c.o.Expect.FindStringIndex(out); loc != nil {
			out = out[:loc[0]]
		}
	}
	if len(out) > c.o.MaxBytes || missing > 0 {
		// Bytes: the whole output's size (raw bytes never collected
		// counted as they came).
		res.Truncated, res.Bytes = true, len(out)+int(missing)
		out = strings.ToValidUTF8(out[:min(len(out), c.o.MaxBytes)], "")
	}
	res.Output = out
}
