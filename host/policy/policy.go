// Package policy holds the command rules of SPEC SSH-6: rules.json's
// allow and deny regular expressions, checked before a command is sent.
// Rules are a guard rail against mistakes, not a sandbox: a shell offers
// endless ways to spell a command, and the patterns only see the text.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/termhost/termhost/internal/watchfile"
)

// Rules are compiled allow and deny lists.
type Rules struct {
	Allow []*regexp.Regexp
	Deny  []*regexp.Regexp
}

// BlockedError is a command the rules refuse (SPEC SSH-7 -32003).
type BlockedError struct {
	Command string
	Rule    string // the deny pattern that matched, or "" when no allow pattern did
	// Simple is the simple command, normalized (see Check), that the rule
	// matched or no allow pattern did; "" when it was the whole line.
	Simple string
	// Reason is why the line cannot be checked, when that is the refusal.
	Reason string
}

func (e *BlockedError) Error() string {
	const prefix = "command blocked by rules.json: "
	switch {
	case e.Reason != "":
		return prefix + e.Reason
	case e.Rule != "" && e.Simple != "":
		return fmt.Sprintf(prefix+"the command %q in it, as the shell would run it, matches the deny pattern %q", e.Simple, e.Rule)
	case e.Rule != "":
		return fmt.Sprintf(prefix+"it matches the deny pattern %q", e.Rule)
	case e.Simple != "":
		return fmt.Sprintf(prefix+"the command %q in it, as the shell would run it, matches none of the allow patterns", e.Simple)
	}
	return prefix + "it matches none of the allow patterns"
}

// Empty reports whether there are no rules (everything is allowed).
func (r *Rules) Empty() bool { return r == nil || len(r.Allow)+len(r.Deny) == 0 }

// Check says whether a command line may be sent. The patterns are matched
// against the whole line as written and against each simple command the
// line runs as a shell parses it (shell.go): the command's base name and
// its words unquoted, one space apart ("/usr/bin/env X=1 'touch' f" runs
// "env X=1 touch f" and "touch f"). Deny wins; with a non-empty allow list
// every simple command must match an allow pattern. Patterns search the
// text (anchor them with ^ and $ to match it entirely). When there is any
// rule, a line whose commands cannot be known is refused: a command name
// that is computed ($CMD, $(…)), a shell reading a pipe, eval of a
// variable; a line that does not parse is refused by an allow list and,
// with a deny list only, checked word by word at its operators.
func (r *Rules) Check(cmd string) error {
	if r.Empty() {
		return nil
	}
	for _, d := range r.Deny {
		if d.MatchString(cmd) {
			return &BlockedError{Command: cmd, Rule: d.String()}
		}
	}
	sc := simpleCommands(cmd)
	if sc.tooLong {
		return &BlockedError{Command: cmd, Reason: sc.refusal}
	}
	for _, c := range sc.cmds {
		for _, d := range r.Deny {
			if d.MatchString(c) {
				return &BlockedError{Command: cmd, Rule: d.String(), Simple: c}
			}
		}
	}
	if sc.refusal != "" {
		return &BlockedError{Command: cmd, Reason: sc.refusal}
	}
	if len(r.Allow) == 0 {
		return nil
	}
	if sc.parseErr != nil {
		return &BlockedError{Command: cmd, Reason: fmt.Sprintf("it does not parse as a shell command line (%v), so the allow list cannot be checked", sc.parseErr)}
	}
	if len(sc.cmds) == 0 {
		// Nothing runs (assignments, a comment): the line itself must be allowed.
		if !matchAny(r.Allow, cmd) {
			return &BlockedError{Command: cmd}
		}
		return nil
	}
	for _, c := range sc.cmds {
		if !matchAny(r.Allow, c) {
			return &BlockedError{Command: cmd, Simple: c}
		}
	}
	return nil
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// Parse reads rules.json: {"allow": [regex…], "deny": [regex…]} in Go's
// RE2 syntax. Each mistake names the list, the index and the pattern.
func Parse(data []byte) (*Rules, error) {
	var f struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not valid JSON: syntax error at byte %d", se.Offset)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, errors.New("not valid JSON: the file ends too early")
		}
		return nil, fmt.Errorf("not the expected {\"allow\": [regex…], \"deny\": [regex…]}: %v", err)
	}
	r := &Rules{}
	for _, l := range []struct {
		name string
		src  []string
		dst  *[]*regexp.Regexp
	}{{"allow", f.Allow, &r.Allow}, {"deny", f.Deny, &r.Deny}} {
		for i, p := range l.src {
			if p == "" {
				return nil, fmt.Errorf("%s[%d]: an empty pattern would match every command", l.name, i)
			}
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, fmt.Errorf("%s[%d] %q is not a valid RE2 pattern: %v", l.name, i, p, err)
			}
			*l.dst = append(*l.dst, re)
		}
	}
	return r, nil
}

// Store is rules.json, reloaded when it changes. A file that fails to
// load, or is removed or renamed away, keeps the last good rules in force
// and says why at WARN on every attempt: rules never vanish silently. A
// file missing at start means no rules (said once at INFO); the caller
// decides whether that is allowed (cmd/termhost refuses it when the path
// was given explicitly).
type Store struct {
	path string
	log  *slog.Logger

	mu      sync.RWMutex
	rules   *Rules
	loadErr error
	watch   watchfile.Owner
}

// NewStore loads path now; on failure the store holds no rules, keeps the
// reason for Err, and returns it. A missing file is no rules and no error.
func NewStore(path string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{path: path, log: log, rules: &Rules{}}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		log.Info("no rules file: no command rules are in force until it is created", "file", path)
		return s, nil
	}
	return s, s.Reload()
}

// Path is the rules file.
func (s *Store) Path() string { return s.path }

// Reload reads the file again; on failure, a missing file included, the
// previous rules stay.
func (s *Store) Reload() error {
	r, err := LoadFile(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.loadErr = fmt.Errorf("rules file %s: %w", s.path, err)
		return s.loadErr
	}
	s.rules, s.loadErr = r, nil
	return nil
}

// ErrGone is a rules file that is not there.
var ErrGone = errors.New("the file is gone (removed, or renamed away); restore it, or write {} to it to drop every rule")

// LoadFile reads and parses a rules file; a missing one is ErrGone (which
// is also fs.ErrNotExist).
func LoadFile(path string) (*Rules, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, goneError{}
	}
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

type goneError struct{}

func (goneError) Error() string        { return ErrGone.Error() }
func (goneError) Is(target error) bool { return target == ErrGone || target == fs.ErrNotExist }

// Rules are the rules in force.
func (s *Store) Rules() *Rules {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rules
}

// Check checks cmd against the rules in force.
func (s *Store) Check(cmd string) error { return s.Rules().Check(cmd) }

// Err is why the newest load failed, or nil.
func (s *Store) Err() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loadErr
}

// Watch reloads the file whenever it changes; Close stops it.
func (s *Store) Watch() error {
	return s.watch.Start(s.path, 150*time.Millisecond, func() {
		if err := s.Reload(); err != nil {
			r := s.Rules()
			s.log.Warn("rules not reloaded; the last good rules stay in force", "reason", err.Error(), "allow", len(r.Allow), "deny", len(r.Deny))
			return
		}
		r := s.Rules()
		s.log.Info("rules reloaded", "file", s.path, "allow", len(r.Allow), "deny", len(r.Deny))
	})
}

// Close stops watching.
func (s *Store) Close() error { return s.watch.Close() }
