package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/termhost/termhost/sdk/abi"
)

// Plugins names, by role, the plugins the registry puts into sessions
// besides the chain a kind asks for ("" for none): the registry, not each
// kind's opener, decides which screen and shell plugins a session gets.
type Plugins struct {
	// Screen is fed what the buffer gets in every session that wants a
	// screen (Spec.Screen; SPEC SES-5).
	Screen string
	// Shell turns shell-integration marks (OSC 133) into prompt events:
	// first in the chain of a program that marks its prompts
	// (Spec.ShellMarks).
	Shell string
	// Dialect knows device dialects: added to the chain of a session that
	// asks for one (Spec.Dialect).
	Dialect string
}

// Role is what a plugin does for a session, whichever plugin the
// registry names for it (Plugins).
type Role int

const (
	ScreenPlugin Role = iota + 1
	ShellPlugin
	DialectPlugin
)

// Name is the plugin that plays role r ("" for none).
func (p Plugins) Name(r Role) string {
	switch r {
	case ScreenPlugin:
		return p.Screen
	case ShellPlugin:
		return p.Shell
	case DialectPlugin:
		return p.Dialect
	}
	return ""
}

// Dialects a session may ask for besides a name (Spec.Dialect).
const (
	// NoDialect leaves the dialect plugin out (a Telnet service that is
	// no device).
	NoDialect = "none"
	// AutoDialect detects the dialect; its pagers are answered whatever
	// sent the command.
	AutoDialect = "auto"
	// DetectDialect, the default of device sessions, detects the dialect
	// and answers pagers only for run_command's commands: a line sent raw
	// (telnet_send, send_keys) gets the device's pagers as they come.
	DetectDialect = "detect"
	// DetectOnUse is DetectDialect with the plugin joining the chain only
	// when a device operation first needs it (JoinDialect): it then
	// detects the dialect from the output the session already holds (the
	// banner, the prompt). Until then the session pays nothing for it: a
	// plain Telnet session's default.
	DetectOnUse = "detect-on-use"
)

// chainFor is the chain a spec's session gets and the options its
// plugins open with: the shell plugin first for a program that marks its
// prompts, then the spec's plugins, then the dialect plugin when a dialect
// is asked for ("auto" detects it; a name goes to the plugins' options),
// once: a chain that names it already keeps it where it is.
func (r *Registry) chainFor(spec Spec) ([]string, []byte, error) {
	p := r.cfg.Plugins
	chain := slices.Clone(spec.Plugins)
	if spec.ShellMarks && p.Shell != "" {
		chain = append([]string{p.Shell}, chain...)
	}
	opts := spec.Options
	set := map[string]any{}
	switch spec.Dialect {
	case "", NoDialect:
		return chain, opts, nil
	case DetectDialect:
		set["commandPagers"] = true
	case AutoDialect:
	default:
		set["dialect"] = spec.Dialect
	}
	if p.Dialect == "" {
		return nil, nil, fmt.Errorf("%w: dialect %q asked for, and no dialect plugin is configured", ErrBadPlugin, spec.Dialect)
	}
	if len(set) > 0 {
		m := map[string]any{}
		if len(opts) > 0 {
			if err := json.Unmarshal(opts, &m); err != nil {
				return nil, nil, fmt.Errorf("session options: %w", err)
			}
		}
		for k, v := range set {
			m[k] = v
		}
		opts, _ = json.Marshal(m)
	}
	if !slices.Contains(chain, p.Dialect) {
		chain = append(chain, p.Dialect)
	}
	return chain, opts, nil
}

// hasPlugin reports whether the session's chain has the plugin that plays
// role r.
func (s *Session) hasPlugin(r Role) bool {
	name := s.cfg.Plugins.Name(r)
	if name == "" {
		return false
	}
	s.mu.Lock()
	chain := s.chain
	s.mu.Unlock()
	for _, b := range chain {
		if n, _ := b.Plugin(); n == name {
			return true
		}
	}
	return false
}

// joinPrime is how much of the newest output a dialect plugin that joins
// a live session is fed to detect from: the banner and the prompt.
const joinPrime = 4 << 10

// JoinDialect adds the registry's dialect plugin at the end of the chain
// of a session opened with DetectOnUse, if it is not there yet, primed
// with the newest output the session holds (what it would pass on or
// answer to that is dropped: the user and the peer had those bytes
// already). A session opened otherwise is left as it is.
func (s *Session) JoinDialect(ctx context.Context) error {
	if s.joinDialect == nil || s.hasPlugin(DialectPlugin) {
		return nil
	}
	if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
		return err
	}
	defer s.unlockChain()
	if s.hasPlugin(DialectPlugin) {
		return nil
	}
	if !s.Alive() {
		return s.disconnectedErr()
	}
	b, err := s.joinDialect()
	if err != nil {
		return fmt.Errorf("dialect plugin: %w", err)
	}
	end := s.buf.End()
	from := max(s.buf.Tail(), end-min(end, joinPrime))
	if p := s.buf.ReadStaged(nil, from); len(p) > 0 {
		if _, err := b.Data(abi.Inbound, p, dropSink{}); err != nil {
			b.Close()
			return fmt.Errorf("dialect plugin: %w", err)
		}
	}
	s.mu.Lock()
	s.chain = append(s.chain[:len(s.chain):len(s.chain)], b)
	i := len(s.chain) - 1
	s.mu.Unlock()
	b.OnAsync(func(ems []abi.Emission) { s.async(i, ems) })
	if s.screen != nil {
		// The screen's place is past the chain, one further now.
		s.screen.OnAsync(func(ems []abi.Emission) { s.async(i+1, ems) })
	}
	return nil
}

// DefaultSize is the screen size a session asked for cols×rows gets:
// 80×24 in place of a dimension not given (or not positive).
func DefaultSize(cols, rows int) (int, int) {
	if cols <= 0 {
		cols = 80
	}
	if rows <= 0 {
		rows = 24
	}
	return cols, rows
}
