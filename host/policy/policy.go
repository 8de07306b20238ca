// Package policy holds the command rules of SPEC SSH-6 and TRUST-6:
// rules.json's allow and deny regular expressions, each for every kind of
// session or for the kinds it names, checked before a command is sent.
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
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/internal/watchfile"
)

// Rules are compiled allow and deny lists.
type Rules struct {
	Allow []*regexp.Regexp
	Deny  []*regexp.Regexp
	// allowKinds and denyKinds are the kinds of session each pattern of
	// Allow and Deny is for, by index (0: every kind); nil when no
	// pattern names kinds.
	allowKinds, denyKinds []kindSet
}

// The kinds of session a rule may be scoped to (rules.json's "kinds"):
// the session kinds' own names (host/session.Kind).
const (
	KindSSH    = "ssh"    // ssh_execute, ssh_shell
	KindTelnet = "telnet" // telnet_connect
	KindPTY    = "pty"    // launch_app, start_pty
)

// Kinds are the kinds a rule may name, in the order errors list them.
var Kinds = []string{KindSSH, KindTelnet, KindPTY}

// kindSet is a set of Kinds, one bit each; 0 is every kind.
type kindSet uint8

func kindBit(kind string) kindSet {
	for i, k := range Kinds {
		if k == kind {
			return 1 << i
		}
	}
	return 0
}

// For is the rules that apply to a session of the given kind: every
// pattern without "kinds" and those that name it. An empty or unknown
// kind gets every rule (the safe side).
func (r *Rules) For(kind string) *Rules {
	if r == nil || (r.allowKinds == nil && r.denyKinds == nil) {
		return r
	}
	bit := kindBit(kind)
	if bit == 0 {
		return r
	}
	pick := func(res []*regexp.Regexp, ks []kindSet) []*regexp.Regexp {
		var out []*regexp.Regexp
		for i, re := range res {
			if ks == nil || ks[i] == 0 || ks[i]&bit != 0 {
				out = append(out, re)
			}
		}
		return out
	}
	return &Rules{Allow: pick(r.Allow, r.allowKinds), Deny: pick(r.Deny, r.denyKinds)}
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

// Parse reads rules.json: {"allow": [rule…], "deny": [rule…]}, each rule
// a pattern in Go's RE2 syntax, or {"pattern": regex, "kinds": [kind…]}
// for a rule that applies only to sessions of those kinds (Kinds). Each
// mistake names the list, the index and the pattern.
func Parse(data []byte) (*Rules, error) {
	var f struct {
		Allow []json.RawMessage `json:"allow"`
		Deny  []json.RawMessage `json:"deny"`
	}
	const shape = `{"allow": [regex or {"pattern": regex, "kinds": [kind…]}…], "deny": […]}`
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
		return nil, fmt.Errorf("not the expected %s: %v", shape, err)
	}
	r := &Rules{}
	scoped := false
	for _, l := range []struct {
		name  string
		src   []json.RawMessage
		dst   *[]*regexp.Regexp
		kinds *[]kindSet
	}{{"allow", f.Allow, &r.Allow, &r.allowKinds}, {"deny", f.Deny, &r.Deny, &r.denyKinds}} {
		for i, raw := range l.src {
			p, ks, err := parseRule(raw)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %v", l.name, i, err)
			}
			if p == "" {
				return nil, fmt.Errorf("%s[%d]: an empty pattern would match every command", l.name, i)
			}
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, fmt.Errorf("%s[%d] %q is not a valid RE2 pattern: %v", l.name, i, p, err)
			}
			*l.dst = append(*l.dst, re)
			*l.kinds = append(*l.kinds, ks)
			scoped = scoped || ks != 0
		}
	}
	if !scoped {
		r.allowKinds, r.denyKinds = nil, nil
	}
	return r, nil
}

// parseRule reads one entry of a list: a pattern, or an object with the
// pattern and the kinds it is for.
func parseRule(raw json.RawMessage) (string, kindSet, error) {
	var p string
	if err := json.Unmarshal(raw, &p); err == nil {
		return p, 0, nil
	}
	var o struct {
		Pattern *string  `json:"pattern"`
		Kinds   []string `json:"kinds"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return "", 0, fmt.Errorf(`expected a pattern (a string) or {"pattern": regex, "kinds": [kind…]}: %v`, err)
	}
	if o.Pattern == nil {
		return "", 0, errors.New(`"pattern" is missing`)
	}
	if o.Kinds != nil && len(o.Kinds) == 0 {
		return "", 0, fmt.Errorf(`"kinds" is empty: the rule would apply to no session (leave "kinds" out for every kind: %s)`, strings.Join(Kinds, ", "))
	}
	var ks kindSet
	for _, k := range o.Kinds {
		bit := kindBit(k)
		if bit == 0 {
			return "", 0, fmt.Errorf(`"kinds": %q is not a kind of session (expected %s)`, k, strings.Join(Kinds, ", "))
		}
		ks |= bit
	}
	return *o.Pattern, ks, nil
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
	// base and kind: a view of base's rules for one kind of session (For).
	base *Store
	kind string

	mu      sync.RWMutex
	rules   *Rules
	byKind  map[string]*Rules // rules.For of each kind, made at each load
	loadErr error
	watch   watchfile.Owner
}

// For is a view of the store for sessions of one kind (Kinds): its Rules
// and Check see only the rules for that kind, as reloaded; the rest is the
// store's own (Path, Err, Reload; Watch and Close are the store's to call).
func (s *Store) For(kind string) *Store {
	if s.base != nil {
		s = s.base
	}
	return &Store{base: s, kind: kind, path: s.path, log: s.log}
}

// set puts r in force, with its view for each kind. Caller holds mu.
func (s *Store) set(r *Rules) {
	s.rules = r
	s.byKind = make(map[string]*Rules, len(Kinds))
	for _, k := range Kinds {
		s.byKind[k] = r.For(k)
	}
}

// NewStore loads path now; on failure the store holds no rules, keeps the
// reason for Err, and returns it. A missing file is no rules and no error.
func NewStore(path string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{path: path, log: log}
	s.set(&Rules{})
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
	if s.base != nil {
		return s.base.Reload()
	}
	r, err := LoadFile(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.loadErr = fmt.Errorf("rules file %s: %w", s.path, err)
		return s.loadErr
	}
	s.set(r)
	s.loadErr = nil
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

// Rules are the rules in force (a view's: those for its kind).
func (s *Store) Rules() *Rules {
	if s.base != nil {
		return s.base.rulesFor(s.kind)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rules
}

// rulesFor is the rules in force for a kind of session; every rule for
// a kind that is not one of Kinds.
func (s *Store) rulesFor(kind string) *Rules {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r := s.byKind[kind]; r != nil {
		return r
	}
	return s.rules
}

// Check checks cmd against the rules in force.
func (s *Store) Check(cmd string) error { return s.Rules().Check(cmd) }

// Err is why the newest load failed, or nil.
func (s *Store) Err() error {
	if s.base != nil {
		return s.base.Err()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loadErr
}

// Watch reloads the file whenever it changes; Close stops it.
func (s *Store) Watch() error {
	if s.base != nil {
		return nil // the store's watch reloads every view
	}
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
func (s *Store) Close() error {
	if s.base != nil {
		return nil
	}
	return s.watch.Close()
}
