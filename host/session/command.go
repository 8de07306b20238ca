package session

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/termhost/termhost/host/ansi"
)

// RunOptions run one command and collect its output (run_command, SPEC
// DEV-2).
type RunOptions struct {
	Command  string
	Timeout  time.Duration
	MaxBytes int
	// Expect, if set, ends the command where it first matches the output
	// (for sessions without a dialect or shell integration).
	Expect *Pattern
}

// RunResult is a command's output and how it ended.
type RunResult struct {
	Output    string `json:"output"`
	Prompt    string `json:"prompt,omitempty"`
	Mode      string `json:"mode,omitempty"`
	Submode   string `json:"submode,omitempty"`
	Hostname  string `json:"hostname,omitempty"`
	Dialect   string `json:"dialect,omitempty"`
	ExitCode  *int   `json:"exitCode,omitempty"`
	Error     string `json:"error,omitempty"`
	Pages     int    `json:"pages"`
	Question  string `json:"question,omitempty"`
	Field     string `json:"field,omitempty"` // reason login: the field asked for (send_secret types it)
	Reason    string `json:"reason"`          // done | prompt | matched | question | login | pager_limit | exit | timeout
	Truncated bool   `json:"truncated,omitempty"`
	Bytes     int    `json:"bytes,omitempty"` // the whole output's size when truncated
	TimeoutMs int64  `json:"timeoutMs"`
}

// enter is what Enter sends: CR. On Telnet the plugin sends it as CR NUL,
// one line end; CR LF would be two on a host that maps CR to NL (an empty
// command after each one, or a newline left behind after a password).
const enter = "\r"

// endEvents end a command's wait besides a prompt.
var endEvents = map[string]bool{"question": true, "pager_limit": true, "login": true}

// RunCommand sends a command line, waits for the end of its output (the
// dialect's or the shell's prompt, an expect match, a question, the
// pager bound, the session's end or the timeout), and returns the output
// alone: without the echoed command, the pager prompts (the dialect
// removes them) or the prompt after it, escape sequences removed.
func (s *Session) RunCommand(ctx context.Context, o RunOptions) (RunResult, error) {
	if !s.Alive() {
		return RunResult{}, s.disconnectedErr()
	}
	mark := s.Mark()
	if err := s.Send(ctx, []byte(o.Command+enter)); err != nil {
		return RunResult{}, err
	}
	return s.commandResult(ctx, mark, o)
}

// commandResult waits for the end of what was sent after mark (a command
// line, or a secret) and returns it as RunCommand does.
func (s *Session) commandResult(ctx context.Context, mark Cursor, o RunOptions) (RunResult, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	// Only events about bytes that came after the send count: a plugin may
	// report a prompt it saw before late (a dialect decides about a held
	// line when more arrives).
	// With a dialect in the chain only its prompts count: a Telnet GA or
	// EOR also follows a pager prompt or a question.
	dialect := s.hasPlugin(DialectPlugin)
	isPrompt := func(e *Event) bool {
		if e.Type != "prompt" {
			return false
		}
		_, fromDialect := e.Fields["dialect"]
		return !dialect || fromDialect
	}
	stop := func() bool {
		evs := s.Events(mark.Seq)
		for i := range evs {
			if e := &evs[i]; e.Offset > mark.Off && (endEvents[e.Type] || isPrompt(e)) {
				return true
			}
		}
		return false
	}
	spec := WaitSpec{Exit: true, Timeout: o.Timeout, Until: o.Expect, Check: stop}
	reason, used, err := s.Wait(ctx, mark, spec, true)
	if reason == ReasonMatched && o.Expect == nil {
		reason = ReasonPrompt
	}
	if err != nil {
		return RunResult{}, err
	}
	res := RunResult{Reason: string(reason), TimeoutMs: used.Milliseconds()}
	start, end := mark.Off, s.buf.Head()
	var promptEv, doneEv, cmdEv *Event
	evs := s.Events(mark.Seq)
	for i := range evs {
		e := &evs[i]
		if e.Offset <= mark.Off && e.Type != "dialect" {
			continue
		}
		switch e.Type {
		case "command":
			if cmdEv == nil {
				cmdEv = e
			}
		case "pager":
			res.Pages++
		case "question":
			if res.Question == "" {
				res.Question, _ = e.Fields["text"].(string)
				res.Reason = "question"
				end = e.Offset
			}
		case "pager_limit":
			res.Reason = "pager_limit"
		case "login":
			if res.Question == "" && res.Field == "" {
				res.Field, _ = e.Fields["field"].(string)
				res.Reason = "login"
				end = e.Offset
			}
		case "error":
			if res.Error == "" {
				res.Error, _ = e.Fields["text"].(string)
			}
		case "done":
			if doneEv == nil {
				doneEv = e
			}
		case "prompt":
			if promptEv == nil && isPrompt(e) {
				promptEv = e
			}
		case "dialect":
			res.Dialect, _ = e.Fields["name"].(string)
		}
	}
	shell := promptEv != nil && promptEv.Fields["source"] == "shell"
	switch {
	case res.Question != "", res.Field != "":
	case promptEv != nil:
		res.Reason = "prompt"
		if doneEv != nil && !shell {
			res.Reason = "done"
		}
		end = promptEv.Offset
		if shell && doneEv != nil {
			end = doneEv.Offset // the end of the output, before the prompt is drawn
		}
		res.Prompt, _ = promptEv.Fields["prompt"].(string)
		res.Mode, _ = promptEv.Fields["mode"].(string)
		res.Submode, _ = promptEv.Fields["submode"].(string)
		res.Hostname, _ = promptEv.Fields["hostname"].(string)
		if d, ok := promptEv.Fields["dialect"].(string); ok && d != "" {
			res.Dialect = d
		}
		if c, ok := promptEv.Fields["exitCode"].(float64); ok {
			n := int(c)
			res.ExitCode = &n
		}
	case reason == ReasonMatched && o.Expect != nil:
		res.Reason = "matched"
	}
	if shell && cmdEv != nil && cmdEv.Offset >= start && cmdEv.Offset <= end {
		start = cmdEv.Offset // the shell marked where the command's output starts
	}
	if end < start {
		end = start
	}
	const limit = 16 << 20
	raw, _, _ := s.buf.Read(start, int(min(end-start, limit)))
	out := strings.ToValidUTF8(clean(raw), "\uFFFD")
	if !(shell && cmdEv != nil) {
		out = dropEcho(out, o.Command)
	}
	if res.Prompt != "" || (promptEv != nil && !shell) {
		out = dropPrompt(out, res.Prompt)
	}
	if o.Expect != nil && res.Reason == "matched" {
		if loc := o.Expect.re.FindStringIndex(out); loc != nil {
			out = out[:loc[0]]
		}
	}
	if len(out) > o.MaxBytes {
		res.Truncated, res.Bytes = true, len(out)
		out = strings.ToValidUTF8(out[:o.MaxBytes], "")
	}
	res.Output = out
	return res, nil
}

// hasPlugin reports whether the session's chain has the named plugin.
func (s *Session) hasPlugin(name string) bool {
	for _, b := range s.chain {
		if n, _ := b.Plugin(); n == name {
			return true
		}
	}
	return false
}

// clean turns a terminal byte stream into text as a terminal would show
// it line by line: escape sequences removed, CR LF and LF end a line, a
// lone CR returns to the start of the line (what follows overwrites it),
// backspace moves back one column; trailing blanks of each line dropped,
// and a last line left blank (a shell's redraw) dropped.
func clean(p []byte) string {
	p = ansi.Strip(p)
	var b strings.Builder
	b.Grow(len(p))
	var line []byte
	col := 0
	flush := func(nl bool) {
		l := bytes.TrimRight(line, " \t")
		if nl || len(l) > 0 {
			b.Write(l)
		}
		if nl {
			b.WriteByte('\n')
		}
		line, col = line[:0], 0
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\n':
			flush(true)
		case '\r':
			if i+1 < len(p) && p[i+1] == '\n' {
				continue
			}
			col = 0
		case '\b':
			if col > 0 {
				col--
			}
		case 0, 0x07:
		default:
			if col < len(line) {
				line[col] = c
			} else {
				line = append(line, c)
			}
			col++
		}
	}
	flush(false)
	return b.String()
}

// dropEcho removes the echoed command line at the start of the output.
func dropEcho(out, cmd string) string {
	first, rest, found := strings.Cut(out, "\n")
	if strings.TrimSpace(first) == "" && found {
		// The echo may come after an empty line (a redraw).
		f2, r2, ok := strings.Cut(rest, "\n")
		if ok && strings.HasSuffix(strings.TrimRight(f2, " "), strings.TrimSpace(cmd)) {
			return r2
		}
	}
	if strings.HasSuffix(strings.TrimRight(first, " "), strings.TrimSpace(cmd)) && strings.TrimSpace(cmd) != "" {
		if !found {
			return ""
		}
		return rest
	}
	if strings.TrimSpace(first) == "" && found {
		// No echo of the text, only of the Enter (a peer echoing in its own
		// way, or not at all): that empty line is not output.
		return rest
	}
	return out
}

// dropPrompt removes the prompt the output ends with: the last line when
// it holds the prompt's text (or, without one, when it has no newline
// after it).
func dropPrompt(out, prompt string) string {
	i := strings.LastIndexByte(out, '\n')
	last := out[i+1:]
	if prompt == "" || strings.Contains(last, strings.TrimSpace(prompt)) {
		return out[:i+1]
	}
	return out
}

// String describes a result for logs.
func (r RunResult) String() string {
	return fmt.Sprintf("%s, %d bytes, %d pages", r.Reason, len(r.Output), r.Pages)
}
