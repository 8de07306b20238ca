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

	// shape: the learned prompt a command ends at when the dialect knows
	// none (learned.go).
	shape *promptShape
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

// echoQuiet: without an echo of the command, how long the stream must be
// quiet before a prompt counts.
const echoQuiet = 500 * time.Millisecond

// echoAnchor finds where the echo of a command line ends in its raw output:
// the end of the line holding the command's last characters.
type echoAnchor struct {
	tail  []byte
	on    bool
	found bool
	end   uint64 // offset just past the echo line's LF
	quiet bool
	// scanned: how much of the collected data was searched in vain.
	scanned int
}

// echoTail is what identifies the echo: the command's last characters
// (a long line may be scrolled by the device's line editor, its start
// replaced by "$").
func echoTail(cmd string) []byte {
	t := strings.TrimSpace(cmd)
	if len(t) > 16 {
		t = t[len(t)-16:]
	}
	return []byte(t)
}

// echoWindow bounds the search: an echo is among the first bytes after
// the command was sent.
const echoWindow = 64 << 10

func (a *echoAnchor) find(c *collector) {
	if !a.on || a.found || len(a.tail) == 0 {
		return
	}
	d := c.data[:min(len(c.data), echoWindow)]
	for i := max(0, a.scanned-echoSlack); i < len(d); i++ {
		if d[i] != a.tail[0] {
			continue
		}
		k := matchSkippingEscapes(d[i:], a.tail)
		if k < 0 {
			continue
		}
		j := bytes.IndexByte(d[i+k:], '\n')
		if j < 0 {
			return // the echo's line is not complete yet
		}
		a.found, a.end = true, c.off+uint64(i+k+j+1)
		return
	}
	a.scanned = len(d)
	if len(c.data) >= echoWindow {
		a.on = false // no echo to be found: every prompt counts
	}
}

// echoSlack: how far back a search resumes, so that an echo cut by the
// end of the data is found whole when the rest comes.
const echoSlack = 512

// matchSkippingEscapes matches want at the start of d, skipping escape
// sequences between its characters (a line editor that colours what is
// typed), and returns the length of d it spans, or -1.
func matchSkippingEscapes(d, want []byte) int {
	j := 0
	for k := 0; k < len(want); {
		if j >= len(d) {
			return -1
		}
		if d[j] == 0x1b && k > 0 {
			n := ansi.SeqLen(d[j:])
			if n <= 0 {
				return -1 // cut: decided when more comes
			}
			j += n
			continue
		}
		if d[j] != want[k] {
			return -1
		}
		j, k = j+1, k+1
	}
	return j
}

// after says whether a prompt at offset counts: after the echo, or
// always when no echo is looked for.
func (a *echoAnchor) after(off uint64) bool {
	return !a.on || len(a.tail) == 0 || a.found && off >= a.end
}

// collector copies a command's raw output out of the session's ring as it
// arrives, up to limit bytes, through a private reader starting at off: the
// head of the output is what run_command returns, so it must outlive the
// ring.
type collector struct {
	r     *Reader
	off   uint64 // offset of data[0]
	data  []byte
	limit int
	full  bool // limit reached, or bytes were evicted before they were copied
}

func (c *collector) pull() {
	if c.full {
		return
	}
	p, evicted := c.r.take(c.limit - len(c.data))
	if evicted > 0 {
		if len(c.data) > 0 {
			c.full = true // a gap: keep the head
			return
		}
		c.off += evicted
	}
	c.data = append(c.data, p...)
	c.full = len(c.data) >= c.limit
}

// slice returns the collected bytes in [start, end) and how many bytes of
// that range were not collected.
func (c *collector) slice(start, end uint64) ([]byte, uint64) {
	lo := max(start, c.off)
	hi := min(end, c.off+uint64(len(c.data)))
	if hi <= lo {
		return nil, end - start
	}
	return c.data[lo-c.off : hi-c.off], (end - start) - (hi - lo)
}

// leftPager: a pager_limit after which the dialect left the pager (its
// quit key), so the device returns to its prompt and the wait goes on.
func leftPager(e *Event) bool {
	q, _ := e.Fields["quit"].(bool)
	return e.Type == "pager_limit" && q
}

// RunCommand sends a command line, waits for the end of its output (the
// dialect's or the shell's prompt, an expect match, a question, the
// pager bound, the session's end or the timeout), and returns the output
// alone: without the echoed command, the pager prompts (the dialect
// removes them) or the prompt after it, escape sequences removed.
func (s *Session) RunCommand(ctx context.Context, o RunOptions) (RunResult, error) {
	if !s.Alive() {
		return RunResult{}, s.disconnectedErr()
	}
	if s.hasPlugin(DialectPlugin) {
		o.shape = s.prepareCommand(ctx, o.Timeout, o.Expect != nil)
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
	// The output is copied out as it arrives: a long one would otherwise
	// lose its head to the session's ring before the command ends.
	col := collector{r: s.privateReader(mark), off: mark.Off, limit: min(max(4*o.MaxBytes, 1<<20), 16<<20)}
	// A dialect's prompt ends the command only after the command's echo:
	// output of an earlier exchange still arriving (after send_secret or
	// telnet_send) can bring a prompt of its own first. A device that does
	// not echo the command as typed gets the first prompt once the stream
	// has been quiet for echoQuiet.
	anchor := echoAnchor{tail: echoTail(o.Command), on: dialect}
	endsAt := func(off uint64) bool {
		return anchor.after(off) || (!anchor.found && anchor.quiet)
	}
	ends := func(e *Event) bool { return endsAt(e.Offset) }
	// learned: where the output's last line took the learned prompt's
	// shape (o.shape), when no dialect prompt came.
	var learned struct {
		found bool
		off   uint64
		line  string
	}
	stop := func() bool {
		col.pull()
		anchor.find(&col)
		anchor.quiet = time.Since(s.LastRx()) >= echoQuiet
		evs := s.Events(mark.Seq)
		for i := range evs {
			e := &evs[i]
			if e.Offset <= mark.Off {
				continue
			}
			if endEvents[e.Type] && !leftPager(e) || isPrompt(e) && ends(e) {
				return true
			}
		}
		if o.shape != nil {
			if line, off, ok := s.partialLine(mark.Off); ok && off > mark.Off && endsAt(off) && o.shape.matches(line) {
				learned.found, learned.off, learned.line = true, off, line
				return true
			}
		}
		return false
	}
	spec := WaitSpec{Exit: true, Timeout: o.Timeout, Until: o.Expect, Check: stop}
	if anchor.on {
		spec.Poll = echoQuiet / 2
	}
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
	limited := false // the pager bound was reached
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
		case "pager", "pager_limit":
			// The dialect counts the pages of a command: a long run of
			// pages outlives the session's event ring.
			if n, ok := e.Fields["pages"].(float64); ok {
				res.Pages = max(res.Pages, int(n))
			} else if e.Type == "pager" {
				res.Pages++
			}
			limited = limited || e.Type == "pager_limit"
		case "question":
			if res.Question == "" {
				res.Question, _ = e.Fields["text"].(string)
				res.Reason = "question"
				end = e.Offset
			}
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
			if promptEv == nil && isPrompt(e) && ends(e) {
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
	case learned.found:
		// No dialect knows this device: its prompt, as learned, ends it.
		res.Reason, res.Prompt = "prompt", strings.TrimRight(learned.line, " \t")
		end = learned.off
	case reason == ReasonMatched && o.Expect != nil:
		res.Reason = "matched"
	}
	if limited && res.Question == "" && res.Field == "" {
		res.Reason = "pager_limit" // and the prompt, if the pager was left
	}
	if shell && cmdEv != nil && cmdEv.Offset >= start && cmdEv.Offset <= end {
		start = cmdEv.Offset // the shell marked where the command's output starts
	}
	echoCut := false
	if anchor.found && anchor.end <= end && !shell {
		start, echoCut = anchor.end, true // after the echo's line: nothing before it is this command's
	}
	if end < start {
		end = start
	}
	col.pull()
	raw, missing := col.slice(start, end)
	out := strings.ToValidUTF8(clean(raw), "\uFFFD")
	if !(shell && cmdEv != nil) && !echoCut {
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
	if len(out) > o.MaxBytes || missing > 0 {
		// Bytes: the whole output's size (raw bytes never collected
		// counted as they came).
		res.Truncated, res.Bytes = true, len(out)+int(missing)
		out = strings.ToValidUTF8(out[:min(len(out), o.MaxBytes)], "")
	}
	res.Output = out
	return res, nil
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
