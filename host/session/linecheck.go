package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/termhost/termhost/sdk/abi"
)

// LineCheck vets the command line as the screen shows it when Enter is
// pressed (SPEC TRUST-6: SSH shells, Telnet sessions, local programs):
// what the line editor made of the keys (Home, C-a, history, completion)
// is what the screen shows, so no model of the keys can be fooled by
// editing. Send splits its input at each Enter, sends what comes before,
// lets the echo settle, reads the logical line at the cursor (soft-wrapped
// rows joined), leaves out the prompt (the text before the cursor when the
// line's first key was typed) and asks Check before the Enter goes out.
type LineCheck struct {
	// Active says whether there is anything to check (rules in force);
	// when false, input passes as it always did.
	Active func() bool
	// Check vets one command line.
	Check func(line string) error
	// Refuse makes the error for a line that cannot be checked (the
	// screen cannot be read, or does not show the line whole); nil gives
	// ErrLineUnchecked.
	Refuse func(reason string) error
}

func (lc *LineCheck) refuse(format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if lc.Refuse != nil {
		return lc.Refuse(reason)
	}
	return fmt.Errorf("%w: %s", ErrLineUnchecked, reason)
}

// enterKeys submit a line in a shell's line editor: CR (Enter, C-m), LF
// (C-j) and C-o (bash's operate-and-get-next). resetKeys leave nothing of
// the line before the cursor: C-c abandons it, C-u kills back to the
// prompt; after them the prompt is read again.
const (
	enterKeys = "\r\n\x0f"
	resetKeys = "\x03\x15"
)

// lineState is a session's LineCheck bookkeeping.
type lineState struct {
	mu     sync.Mutex // one checked send at a time
	open   bool       // a line is being typed
	prompt string     // the logical line before the cursor when it began
	sent   time.Time  // when the last keys of the line went out
	edited bool       // keys beyond the typed-line model's were sent on the line
	// typed is the text of the line when every key sent on it was a
	// printable character (plain); the screen showing the prompt and
	// exactly that text has the line whole, with no need to wait for
	// quiet.
	typed []byte
	plain bool
	// last is when the check last sent anything (a line's keys, its
	// Enter, a secret): a prompt drawn after it is the new line's.
	last time.Time
}

// note records keys sent on the open line.
func (ls *lineState) note(p []byte, now time.Time) {
	ls.sent, ls.last = now, now
	ls.edited = ls.edited || beyondModel(p)
	if !ls.plain {
		return
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			ls.plain = false
			return
		}
	}
	ls.typed = append(ls.typed, p...)
}

// beyondModel says whether keys hold anything but text and the editing
// keys the typed-line model follows (policy.Typed): history, completion
// (Tab), yanking, word moves… which only the line editor knows the effect
// of.
func beyondModel(p []byte) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= 0x20: // text, and DEL
		case c == 0x1b:
			// CSI or SS3 cursor keys the model follows: C D H F, 1~ 3~ 4~ 7~ 8~.
			if i+2 < len(p) && (p[i+1] == '[' || p[i+1] == 'O') && strings.IndexByte("CDHF", p[i+2]) >= 0 {
				i += 2
				continue
			}
			if i+3 < len(p) && p[i+1] == '[' && strings.IndexByte("13478", p[i+2]) >= 0 && p[i+3] == '~' {
				i += 3
				continue
			}
			return true
		case strings.IndexByte("\x01\x02\x04\x05\x06\x08\x0b\x15\x17\x03\x07", c) >= 0:
		default:
			return true // Tab, C-y, C-r, C-p, C-n, C-t…
		}
	}
	return false
}

// Timing of the echo a checked line waits for.
const (
	lineQuiet     = 60 * time.Millisecond  // output quiet this long: the screen has settled
	lineEchoWait  = 400 * time.Millisecond // no echo at all within this: the program does not echo
	lineSettleMax = 1500 * time.Millisecond
)

// ErrLineUnchecked is a line that cannot be checked (LineCheck.Refuse unset).
var ErrLineUnchecked = errors.New("command blocked")

func (s *Session) sendChecked(ctx context.Context, p []byte) error {
	ls := &s.line
	ls.mu.Lock()
	defer ls.mu.Unlock()
	// The typed-line model sees the whole input first: when it refuses,
	// nothing is sent.
	if s.onInput != nil {
		if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
			return err
		}
		err := s.onInput(p)
		s.unlockChain()
		if err != nil {
			return err
		}
	}
	for len(p) > 0 {
		if !ls.open {
			s.lineStart(ctx, ls)
			sc, err := s.screenNow(ctx)
			if err != nil {
				return s.lineCheck.refuse("the command line cannot be checked: the screen cannot be read (%v)", err)
			}
			ls.prompt, ls.open, ls.edited = sc.beforeCursor(), true, false
			ls.typed, ls.plain = ls.typed[:0], true
		}
		i := bytes.IndexAny(p, enterKeys+resetKeys)
		if i < 0 {
			ls.note(p, time.Now())
			return s.sendRaw(ctx, p)
		}
		if strings.IndexByte(resetKeys, p[i]) >= 0 {
			ls.note(p[:i+1], time.Now())
			if err := s.sendRaw(ctx, p[:i+1]); err != nil {
				return err
			}
			s.settle(ctx, ls.sent, true)
			ls.open, ls.sent = false, time.Time{}
			p = p[i+1:]
			continue
		}
		if i > 0 {
			ls.note(p[:i], time.Now())
			if err := s.sendRaw(ctx, p[:i]); err != nil {
				return err
			}
		}
		if !ls.sent.IsZero() {
			s.settleEcho(ctx, ls) // the echo of every key of the line
		}
		if err := s.checkScreenLine(ctx, ls); err != nil {
			if i > 0 {
				return fmt.Errorf("%w (the keys before Enter were sent, Enter was not: the line waits unsent on the shell; clear it with C-u)", err)
			}
			return fmt.Errorf("%w (Enter was not sent: clear the line with C-u)", err)
		}
		n := 1
		if p[i] == '\r' && i+1 < len(p) && p[i+1] == '\n' {
			n = 2
		}
		ls.last = time.Now()
		if err := s.sendRaw(ctx, p[i:i+n]); err != nil {
			return err
		}
		ls.open, ls.sent = false, time.Time{}
		p = p[i+n:]
	}
	return nil
}

// lineStart waits, before a line's prompt is read off the screen, until
// the prompt is drawn: as soon as the session's newest event is a prompt
// (the shell integration's mark, or the dialect's match, also as the end
// of a command) that came after the check last sent anything, with no
// output after it; at once when input and output have both been quiet
// for lineQuiet; else until the output settles.
func (s *Session) lineStart(ctx context.Context, ls *lineState) {
	drawn := func() bool {
		seq := s.LastSeq()
		if seq == 0 {
			return false
		}
		evs := s.Events(seq - 1)
		if len(evs) == 0 {
			return false
		}
		e := evs[len(evs)-1]
		var ok bool
		switch b := e.Body.(type) {
		case *abi.Prompt:
			ok = true
		case *abi.Done:
			// The dialect's prompt after a command (the shell
			// integration's done comes before its prompt is drawn).
			ok = b.Source == abi.SourceDialect
		}
		return ok && e.At.After(ls.last) && e.Offset == s.Mark().Off
	}
	if drawn() || time.Since(s.LastActive()) >= lineQuiet {
		return
	}
	since := time.Now()
	deadline := since.Add(lineSettleMax)
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		now := time.Now()
		if drawn() || (now.Sub(s.LastRx()) >= lineQuiet && now.Sub(since) >= lineQuiet/2) || now.After(deadline) || !s.Alive() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// settleEcho waits for the echo of a line's keys: until the output
// settles (settle), or, for a line of printable text only, as soon as the
// screen shows the prompt and exactly that text with the cursor after it
// (the line editor has taken every key: text only inserts).
func (s *Session) settleEcho(ctx context.Context, ls *lineState) {
	typed := strings.TrimSpace(string(ls.typed))
	if !ls.plain || typed == "" {
		s.settle(ctx, ls.sent, true)
		return
	}
	shows := func(text string) bool { // the prompt, then the typed text
		cmd, ok := strings.CutPrefix(text, ls.prompt)
		return ok && strings.TrimSpace(cmd) == typed
	}
	deadline := ls.sent.Add(lineSettleMax)
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	var seen time.Time // the newest output the screen was read after
	for {
		now := time.Now()
		rx := s.LastRx()
		if rx.After(ls.sent) && rx.After(seen) {
			seen = rx
			if sc, err := s.screenNow(ctx); err == nil {
				if line, _ := sc.logicalLine(); shows(line) && shows(sc.beforeCursor()) {
					return
				}
			}
		}
		echoed := rx.After(ls.sent) || now.Sub(ls.sent) > lineEchoWait
		if (echoed && now.Sub(rx) >= lineQuiet && now.Sub(ls.sent) >= lineQuiet/2) || now.After(deadline) || !s.Alive() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// secretLine is called before a secret is typed: its Enter would also
// submit the keys typed on the line before it, so that line is checked as
// the screen shows it, as if Enter were pressed (the secret itself is not
// a command). A secret is one line: one holding a line end, or any other
// key a line editor acts on (a control character), would type what
// follows it as a line no rule could check without showing the secret,
// so it is refused, quoting nothing of it. done closes the line once the
// secret is sent.
func (s *Session) secretLine(ctx context.Context, secret []byte) (done func(), err error) {
	if s.lineCheck == nil || !s.lineCheck.Active() {
		return func() {}, nil
	}
	for _, c := range secret {
		if c < 0x20 || c == 0x7f {
			return nil, s.lineCheck.refuse("the secret holds a control character (a line end, or a key the line editor acts on) and was not sent: a secret is one line, and a line after it would reach the program unchecked")
		}
	}
	ls := &s.line
	ls.mu.Lock()
	if ls.open && !ls.sent.IsZero() {
		s.settle(ctx, ls.sent, true)
		if err := s.checkScreenLine(ctx, ls); err != nil {
			ls.mu.Unlock()
			return nil, fmt.Errorf("%w (the secret was not sent: its Enter would run the line typed before it; clear it with C-u)", err)
		}
	}
	return func() {
		ls.open, ls.sent, ls.last = false, time.Time{}, time.Now()
		ls.mu.Unlock()
	}, nil
}

// checkScreenLine checks the logical line at the cursor without its
// prompt: the prompt recorded when the line began, and also (when it
// differs) the line after its first prompt-like "$ ", "# ", "% " or "> ",
// which catches keys typed before the prompt was drawn. Either refused
// refuses the line.
func (s *Session) checkScreenLine(ctx context.Context, ls *lineState) error {
	lc, prompt := s.lineCheck, ls.prompt
	sc, err := s.screenNow(ctx)
	if err != nil {
		return lc.refuse("the command line cannot be checked: the screen cannot be read (%v)", err)
	}
	line, top := sc.logicalLine()
	cmd, ok := strings.CutPrefix(line, prompt)
	switch {
	case sc.AltScreen:
		// A full-screen program (an editor's command line, a pager): no
		// prompt to go by, so the line at the cursor is checked whole
		// when it does not start with the recorded one. The check still
		// runs: a shell can be put on the alternate screen too.
		if top && Cells(line) > sc.Cols {
			return lc.refuse("the command line cannot be checked: it is longer than the screen shows")
		}
		if !ok {
			cmd = line
		}
	case prompt == "" && ls.edited:
		return lc.refuse("the command line cannot be checked: keys the line editor interprets (history, completion, word moves) were typed while no prompt was on the screen, so a command may still be reading them ahead; wait for the prompt, clear the line with C-u and type it again")
	case !ok && top:
		return lc.refuse("the command line cannot be checked: it is longer than the screen shows")
	case !ok:
		return lc.refuse("the command line cannot be checked: the line at the cursor no longer starts with the prompt %q seen when typing began", prompt)
	}
	if cmd = strings.TrimSpace(cmd); cmd != "" {
		if err := lc.Check(cmd); err != nil {
			return err
		}
	}
	if alt, ok := afterPromptMark(line); ok && alt != cmd && alt != "" {
		return lc.Check(alt)
	}
	return nil
}

// afterPromptMark is the text after the first "$ ", "# ", "% " or "> " in
// the line's first 256 bytes.
func afterPromptMark(line string) (string, bool) {
	head := line[:min(len(line), 256)]
	best := -1
	for _, m := range []string{"$ ", "# ", "% ", "> "} {
		if i := strings.Index(head, m); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return strings.TrimSpace(line[best+2:]), true
}

// settle waits until the output has been quiet for lineQuiet; with echo,
// first for output after since (or lineEchoWait without any); lineSettleMax at most.
func (s *Session) settle(ctx context.Context, since time.Time, echo bool) {
	deadline := since.Add(lineSettleMax)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		now := time.Now()
		rx := s.LastRx()
		echoed := !echo || rx.After(since) || now.Sub(since) > lineEchoWait
		if (echoed && now.Sub(rx) >= lineQuiet && now.Sub(since) >= lineQuiet/2) || now.After(deadline) || !s.Alive() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// screenState is the part of the screen plugin's answer a line needs.
type screenState struct {
	Cols   int `json:"cols"`
	Cursor struct {
		Row int `json:"row"`
		Col int `json:"col"`
	} `json:"cursor"`
	AltScreen bool     `json:"altScreen"`
	Lines     []string `json:"lines"`
	Wrapped   []int    `json:"wrapped"`
}

func (s *Session) screenNow(ctx context.Context) (*screenState, error) {
	rep, err := s.Screen(ctx, []byte(`{"op":"screen","format":"plain"}`))
	if err != nil {
		return nil, err
	}
	var sc screenState
	if err := json.Unmarshal(rep, &sc); err != nil {
		return nil, err
	}
	if sc.Cursor.Row < 0 || sc.Cursor.Row >= len(sc.Lines) {
		return nil, fmt.Errorf("the cursor is off the screen (row %d)", sc.Cursor.Row)
	}
	return &sc, nil
}

func (sc *screenState) wrapped(row int) bool {
	for _, w := range sc.Wrapped {
		if w == row {
			return true
		}
	}
	return false
}

// rows is the first row of the logical line at the cursor, and its last.
func (sc *screenState) rows() (first, last int) {
	first, last = sc.Cursor.Row, sc.Cursor.Row
	for first > 0 && sc.wrapped(first-1) {
		first--
	}
	for last < len(sc.Lines)-1 && sc.wrapped(last) {
		last++
	}
	return first, last
}

// logicalLine joins the rows of the line at the cursor (a wrapped row is
// padded to the width: the plugin trims trailing blanks) and reports
// whether it begins on the top row, where it may have begun above.
func (sc *screenState) logicalLine() (string, bool) {
	first, last := sc.rows()
	var b strings.Builder
	for r := first; r <= last; r++ {
		b.WriteString(sc.Lines[r])
		if r < last {
			b.WriteString(strings.Repeat(" ", max(sc.Cols-Cells(sc.Lines[r]), 0)))
		}
	}
	return strings.TrimRight(b.String(), " "), first == 0
}

// beforeCursor is the logical line's text before the cursor: the prompt
// when typing has not begun.
func (sc *screenState) beforeCursor() string {
	first, _ := sc.rows()
	var b strings.Builder
	for r := first; r < sc.Cursor.Row; r++ {
		b.WriteString(sc.Lines[r])
		b.WriteString(strings.Repeat(" ", max(sc.Cols-Cells(sc.Lines[r]), 0)))
	}
	row := sc.Lines[sc.Cursor.Row]
	w := 0
	for i, r := range row {
		n := runeCells(r)
		if w >= sc.Cursor.Col && n > 0 { // a combining mark stays with its base
			row = row[:i]
			break
		}
		w += n
	}
	b.WriteString(row)
	return strings.TrimRight(b.String(), " ")
}

// Cells is how many terminal columns s takes, as the host estimates it
// without the screen plugin's exact table (plugins/vt/core): two for the
// East Asian wide ranges and most emoji, none for combining marks and
// zero-width joiners, one otherwise. The host uses it only to line text up
// with a cursor column the screen reported (a typed line's start, a
// pattern on the screen).
func Cells(s string) int {
	n := 0
	for _, r := range s {
		n += runeCells(r)
	}
	return n
}

// runeCells is how many columns a rune takes (Cells).
func runeCells(r rune) int {
	switch {
	case r == utf8.RuneError:
		return 1
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), r == 0x200B, r == 0x200D:
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF && r != 0x303F, r >= 0xAC00 && r <= 0xD7A3,
		r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60,
		r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F, r >= 0x1F900 && r <= 0x1F9FF,
		r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}
