package device

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/termhost/termhost/host/ansi"
	"github.com/termhost/termhost/host/session"
)

// A device no dialect table knows still ends its commands at a prompt: the
// last line it printed before going quiet, learned at login (Login) or,
// without one, before the first run_command. A command run through the
// dialect plugin while the dialect has parsed no prompt ends where the
// output's partial last line, after the command's echo, has that
// prompt's shape. Only run_command looks at it: what telnet_read and the
// screen tools see of such a service is unchanged.

// maxLearned bounds a learned prompt: a longer line is no prompt.
const maxLearned = 128

// learnQuiet bounds the wait for the stream to settle before a prompt is
// learned from it.
const learnQuiet = 2 * time.Second

// promptShape says which lines are prompts like a learned one.
type promptShape struct {
	exact string // the learned prompt, right-trimmed
	// stem is its leading host name ("edge-r1" of "edge-r1(config)#"),
	// or "" when it has none (then only the prompt itself matches).
	stem string
}

// shapeOf is the shape of learned prompt p.
func shapeOf(p string) promptShape {
	p = strings.TrimRight(p, " \t")
	n := 0
	for n < len(p) && isHostChar(p[n]) {
		n++
	}
	sh := promptShape{exact: p}
	if n >= 2 && n < len(p) {
		sh.stem = p[:n]
	}
	return sh
}

func isHostChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// matches reports whether line (a partial last line, cleaned) is a prompt
// of this shape: the learned prompt itself, or the same host name followed
// by something short that ends like a prompt ("r1>" learned, "r1#" and
// "r1(config)#" after it).
func (sh promptShape) matches(line string) bool {
	t := strings.TrimRight(line, " \t")
	switch {
	case t == "":
		return false
	case t == sh.exact:
		return true
	case sh.stem == "" || !strings.HasPrefix(t, sh.stem) || len(t) > len(sh.exact)+64:
		return false
	case isHostChar(t[len(sh.stem)]):
		return false // another host name: "r10>" is not "r1>"'s
	}
	return promptLike(t)
}

// promptLike: a line that ends as a login's prompts do and is no login
// field.
func promptLike(t string) bool { return endsLike(t, loginShell) }

// endsLike: a line no longer than a prompt, whose end matches end, and
// which is no login field.
func endsLike(t string, end *regexp.Regexp) bool {
	return len(t) <= maxLearned && end.MatchString(t) && !loginUser.MatchString(t) && !loginPass.MatchString(t)
}

// learnedKey keys the learned prompt among the session's values.
type learnedKey struct{}

// learned is the prompt learned for the session, or "".
func learned(s *session.Session) string {
	p, _ := s.Value(learnedKey{}).(string)
	return p
}

// learn records the session's prompt, if p looks like one.
func learn(s *session.Session, p string) {
	p = strings.TrimRight(p, " \t")
	if !promptLike(p) {
		return
	}
	s.SetValue(learnedKey{}, p)
}

// partialLine is the output's last line when no newline follows it (the
// device waits after it), cleaned as run_command's output is, with its
// offset; ok is false when the output ends with a newline, or when the
// line starts before from or is too long to be a prompt.
func partialLine(s *session.Session, from uint64) (line string, off uint64, ok bool) {
	const window = 4 * maxLearned
	head := s.Mark().Off
	start := max(from, head-min(head, window))
	p, start := s.ReadRange(start, head)
	i := bytes.LastIndexByte(p, '\n')
	if i < 0 && start > from || len(p) == 0 {
		return "", 0, false
	}
	tail := clean(p[i+1:])
	if tail == "" || strings.ContainsRune(tail, '\n') {
		return "", 0, false
	}
	return tail, start + uint64(i+1), true
}

// endsBlank says whether the output ends with a blank, escape sequences
// aside: prompts end with one ("$ ", ">>> "); a progress bar or a
// percentage waiting for more rarely does.
func endsBlank(s *session.Session) bool {
	head := s.Mark().Off
	p, _ := s.ReadRange(head-min(head, 64), head)
	p = ansi.Strip(p)
	return len(p) > 0 && (p[len(p)-1] == ' ' || p[len(p)-1] == '\t')
}

// armCommand tells the dialect plugin that the next line sent is
// run_command's (its pagers are answered) and returns what the plugin
// knows. A plugin without the op (an older build) answers as info.
func armCommand(ctx context.Context, s *session.Session) (DialectInfo, error) {
	var in DialectInfo
	reply, _, err := s.Control(ctx, []byte(`{"op":"command"}`), false)
	if err != nil {
		return Info(ctx, s)
	}
	if err := json.Unmarshal(reply, &in); err != nil {
		return in, fmt.Errorf("the dialect plugin's command reply: %w", err)
	}
	return in, nil
}

// unknownPrompt: the dialect has parsed no prompt and the device waits
// for no login field or answer.
func unknownPrompt(in DialectInfo) bool {
	return in.Prompt == "" && in.Login == "" && in.Question == ""
}

// prepareCommand arms the dialect plugin for run_command's next line and
// returns the prompt shape the command ends at when its dialect has
// parsed no prompt (nil when it has, or when none can be learned): the
// one learned at login, else the output's partial last line once the
// stream has settled.
func prepareCommand(ctx context.Context, s *session.Session, timeout time.Duration, expect bool) *promptShape {
	info, err := armCommand(ctx, s)
	if err != nil || expect || !unknownPrompt(info) {
		return nil
	}
	p := learned(s)
	if p == "" {
		// Learn from a settled stream: a banner still arriving has no
		// prompt at its end yet, and the dialect may parse it yet.
		if _, _, err := s.Wait(ctx, s.Mark(), session.WaitSpec{Stable: loginSettle, Exit: true, Timeout: min(timeout, learnQuiet)}, true); err != nil {
			return nil
		}
		if info, err = armCommand(ctx, s); err != nil || !unknownPrompt(info) {
			return nil
		}
	}
	if p == "" {
		line, _, ok := partialLine(s, 0)
		if !ok || !promptLike(line) {
			return nil
		}
		learn(s, line)
		p = line
	}
	sh := shapeOf(p)
	return &sh
}
