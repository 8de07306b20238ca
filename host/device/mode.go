package device

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/termhost/termhost/host/session"
)

// Modes are the modes a dialect's prompts report and set_mode moves
// between.
var Modes = []string{"user", "privileged", "config"}

// ErrNoMode: the session's dialect has no commands toward the mode asked
// (RouterOS and Linux have no modes; Junos has no privileged mode).
var ErrNoMode = errors.New("no mode commands")

// maxModeSteps bounds the commands (and secrets) one SetMode sends: the
// longest way in any table is two steps.
const maxModeSteps = 6

// ModeOptions move a device to a mode (set_mode).
type ModeOptions struct {
	Mode    string        // user, privileged or config
	Timeout time.Duration // for the whole move
	// Secret returns what to type at a login field the device asks for on
	// the way ("password", "enable"); nil stops there (reason login).
	// The caller's slice is zeroed after use.
	Secret func(field string) ([]byte, error)
	// Allow must accept the session before a secret is typed (TRUST-1).
	Allow Gate
	// Ask, if set, asks the person for a field Secret does not supply
	// (nil, or an error for the field) and types their answer itself;
	// the time they take does not count against Timeout.
	Ask Ask
}

// ModeResult is where a move ended. The fields mean what RunResult's do;
// Steps are the commands sent, in order (never a secret).
type ModeResult struct {
	Steps     []string `json:"steps"`
	Prompt    string   `json:"prompt,omitempty"`
	Mode      string   `json:"mode,omitempty"`
	Submode   string   `json:"submode,omitempty"`
	Hostname  string   `json:"hostname,omitempty"`
	Dialect   string   `json:"dialect,omitempty"`
	Error     string   `json:"error,omitempty"`
	Question  string   `json:"question,omitempty"`
	Field     string   `json:"field,omitempty"`
	Reason    string   `json:"reason"` // done | login | question | error | timeout | pager_limit | exit
	TimeoutMs int64    `json:"timeoutMs"`
}

// DialectInfo is what the dialect plugin knows about the device (its info
// control op).
type DialectInfo struct {
	Dialect  string `json:"dialect"`
	Mode     string `json:"mode"`
	Submode  string `json:"submode"`
	Hostname string `json:"hostname"`
	Prompt   string `json:"prompt"`
	// Login or Question: the device waits at one instead of a prompt.
	Login    string `json:"login"`
	Question string `json:"question"`
	// Modes: the command from one mode to another, by mode then target.
	Modes map[string]map[string]string `json:"modes"`
}

// Info asks the session's dialect plugin what it knows.
func Info(ctx context.Context, s *session.Session) (DialectInfo, error) {
	var in DialectInfo
	if err := s.JoinDialect(ctx); err != nil {
		return in, err
	}
	if !s.HasPlugin(session.DialectPlugin) {
		return in, fmt.Errorf("%w: no device dialect in this session (telnet_connect or ssh_shell with dialect)", session.ErrUnsupported)
	}
	reply, _, err := s.Control(ctx, []byte(`{"op":"info"}`), false)
	if err != nil {
		return in, fmt.Errorf("the dialect plugin: %w", err)
	}
	if err := json.Unmarshal(reply, &in); err != nil {
		return in, fmt.Errorf("the dialect plugin's info reply: %w", err)
	}
	return in, nil
}

// SetMode moves a device from the mode of the last prompt its dialect saw
// to o.Mode with the dialect's mode commands, one step at a time, each
// sent and awaited as RunCommand does. A login field on the way gets
// o.Secret's answer (typed as SendSecret types it), or stops the move; a
// question, an error line, a mode that did not change or the timeout
// stops it. Already in the mode: nothing is sent.
func SetMode(ctx context.Context, s *session.Session, o ModeOptions) (ModeResult, error) {
	res := ModeResult{Steps: []string{}}
	if !slices.Contains(Modes, o.Mode) {
		return res, fmt.Errorf("mode %q is not one of %s", o.Mode, strings.Join(Modes, ", "))
	}
	if !s.Alive() {
		return res, s.DisconnectedErr()
	}
	info, err := Info(ctx, s)
	if err != nil {
		return res, err
	}
	switch {
	case info.Dialect == "":
		return res, errors.New("the dialect is not known yet: name it when connecting (dialect), or let the first prompt arrive")
	case len(info.Modes) == 0:
		return res, fmt.Errorf("%w: dialect %s has no modes to set", ErrNoMode, info.Dialect)
	case !hasMode(info.Modes, o.Mode):
		return res, fmt.Errorf("%w: dialect %s has no %s mode (its modes: %s)", ErrNoMode, info.Dialect, o.Mode, strings.Join(modesOf(info.Modes), ", "))
	}
	res.Dialect, res.Prompt, res.Mode, res.Submode, res.Hostname = info.Dialect, info.Prompt, info.Mode, info.Submode, info.Hostname
	timeout := s.WaitCeiling(o.Timeout)
	res.TimeoutMs = timeout.Milliseconds()
	deadline := time.Now().Add(timeout)
	switch {
	case info.Question != "":
		res.Reason, res.Question = "question", info.Question
		return res, nil
	case info.Login != "":
		if done, err := answerLogin(ctx, s, o, &res, info.Login, "", &deadline); done || err != nil {
			return res, err
		}
	}
	if res.Mode == "" {
		return res, errors.New("no prompt seen yet: wait for the device's prompt first (wait_for with prompt)")
	}
	for sent := 0; ; {
		from := res.Mode
		if from == o.Mode {
			res.Reason = "done"
			return res, nil
		}
		cmd, ok := nextStep(info.Modes, from, o.Mode)
		switch {
		case !ok && len(res.Steps) == 0:
			return res, fmt.Errorf("%w: dialect %s has no command from %s mode toward %s", ErrNoMode, info.Dialect, from, o.Mode)
		case !ok:
			res.Reason, res.Error = "error", fmt.Sprintf("no command from %s mode toward %s", from, o.Mode)
			return res, nil
		case sent >= maxModeSteps:
			res.Reason, res.Error = "error", fmt.Sprintf("still in %s mode after %d steps", from, sent)
			return res, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			res.Reason = "timeout"
			return res, nil
		}
		r, err := RunCommand(ctx, s, RunOptions{Command: cmd, Timeout: left})
		if err != nil {
			return res, err
		}
		sent++
		res.Steps = append(res.Steps, cmd)
		if res.apply(r) {
			return res, nil
		}
		if r.Reason == "login" {
			sent++
			if done, err := answerLogin(ctx, s, o, &res, r.Field, from, &deadline); done || err != nil {
				return res, err
			}
		} else if res.Mode == from {
			res.Reason, res.Error = "error", fmt.Sprintf("still in %s mode after %q", from, cmd)
			return res, nil
		}
	}
}

// apply takes a step's result into res; true when the move stops there
// (anything but a prompt or a login field, or an error line).
func (res *ModeResult) apply(r RunResult) bool {
	if r.Prompt != "" {
		res.Prompt, res.Mode, res.Submode, res.Hostname = r.Prompt, r.Mode, r.Submode, r.Hostname
	}
	if r.Dialect != "" {
		res.Dialect = r.Dialect
	}
	res.Field, res.Question = r.Field, r.Question
	switch {
	case r.Error != "":
		res.Reason, res.Error = "error", r.Error
		return true
	case r.Reason == "done" || r.Reason == "prompt" || r.Reason == "login":
		return false
	}
	res.Reason = r.Reason
	return true
}

// answerLogin types the secret for a login field and waits for what
// follows; done when the move stops there (no secret for the field, the
// field asked again, an error line, no change of mode from `from`).
func answerLogin(ctx context.Context, s *session.Session, o ModeOptions, res *ModeResult, field, from string, deadline *time.Time) (done bool, err error) {
	res.Reason, res.Field = "login", field
	var secret []byte
	switch {
	case o.Secret != nil && field != "username":
		if secret, err = o.Secret(field); err != nil && o.Ask == nil {
			res.Error = err.Error()
			return true, nil
		}
		err = nil // asked of the person instead
	case o.Ask == nil:
		return true, nil
	}
	defer clear(secret)
	if time.Until(*deadline) <= 0 {
		res.Reason = "timeout"
		return true, nil
	}
	mark := s.Mark()
	if len(secret) > 0 {
		if err := SendSecret(ctx, s, secret, o.Allow); err != nil {
			return true, err
		}
	} else {
		// No secret for the field: the person is asked (their time is not
		// the device's).
		head := s.Mark().Off
		tail, _ := s.ReadRange(head-min(head, 256), head)
		asked := time.Now()
		if err := askField(ctx, s, o.Ask, o.Allow, field, clean(tail)); err != nil {
			res.Error = err.Error()
			return true, nil
		}
		*deadline = deadline.Add(time.Since(asked))
	}
	left := time.Until(*deadline)
	if left <= 0 {
		res.Reason = "timeout"
		return true, nil
	}
	r, err := commandResult(ctx, s, mark, RunOptions{Timeout: left})
	if err != nil {
		return true, err
	}
	if res.apply(r) {
		return true, nil
	}
	if r.Reason == "login" {
		// Asked again: the same secret, wrong (the dialect may call the
		// second prompt a plain password field).
		res.Reason, res.Field = "login", field
		res.Error = fmt.Sprintf("the device asked again after the %s was typed (wrong secret?)", secretName(field))
		return true, nil
	}
	res.Reason, res.Field = "", ""
	if from != "" && res.Mode == from {
		res.Reason, res.Error = "error", fmt.Sprintf("still in %s mode after the %s was typed", from, secretName(field))
		return true, nil
	}
	return false, nil
}

// secretName names what is typed at a login field.
func secretName(field string) string {
	if field == "enable" {
		return "enable secret"
	}
	return field
}

// nextStep is the command that starts the shortest way from one mode to
// another in a table.
func nextStep(m map[string]map[string]string, from, to string) (string, bool) {
	if cmd, ok := m[from][to]; ok {
		return cmd, true
	}
	// Breadth first, in a fixed order: the tables are tiny.
	type hop struct{ mode, first string }
	seen := map[string]bool{from: true}
	queue := []hop{}
	for _, n := range sortedKeys(m[from]) {
		seen[n] = true
		queue = append(queue, hop{n, m[from][n]})
	}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h.mode == to {
			return h.first, true
		}
		for _, n := range sortedKeys(m[h.mode]) {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, hop{n, h.first})
			}
		}
	}
	return "", false
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// hasMode: the table names mode, as a start or a target.
func hasMode(m map[string]map[string]string, mode string) bool {
	return slices.Contains(modesOf(m), mode)
}

// modesOf lists the modes a table names, in Modes' order.
func modesOf(m map[string]map[string]string) []string {
	var out []string
	for _, md := range Modes {
		named := len(m[md]) > 0
		for _, tos := range m {
			_, ok := tos[md]
			named = named || ok
		}
		if named {
			out = append(out, md)
		}
	}
	return out
}
