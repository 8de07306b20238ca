package mcp

import (
	"errors"

	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/session"
)

// Command rules (rules.json, SPEC TRUST-6) on every path into a shell.
// An SSH session's rules are its dialer's (host/ssh: ssh_execute's
// command, ssh_shell's typed lines); the Telnet and PTY sessions opened
// here get the same two checks as stages (ruleStages), so every send of
// every tool (send_keys, telnet_send, run_command, set_mode's commands, a
// secret's Enter) passes them; run_command's command and a started
// program are also checked before anything else happens (checkCommand).

// rulesFor is the rules for sessions of kind, as reloaded (nil: this
// server has no rules file, so no rules).
func (s *Server) rulesFor(kind session.Kind) *policy.Store {
	if s.deps.Rules == nil {
		return nil
	}
	return s.deps.Rules.For(string(kind))
}

// ruleStages hold a session of kind to the rules for its kind: the
// typed-line model sees every input first (a refused line sends nothing),
// then the line as the screen shows it is checked when Enter (CR, LF, C-o)
// is pressed, which sees what history, completion and cursor keys made of
// the keys. Both do nothing while no rule is in force.
func (s *Server) ruleStages(kind session.Kind) []session.Stage {
	rules := s.rulesFor(kind)
	if rules == nil {
		return nil
	}
	stages := []session.Stage{session.InputFunc(policy.InputCheck(rules.Rules))}
	if s.deps.Sessions.Config().Plugins.Screen != "" { // without a screen only the model checks
		stages = append(stages, &session.LineCheck{
			Active: func() bool { return !rules.Rules().Empty() },
			Check:  rules.Check,
			Refuse: func(reason string) error { return &policy.BlockedError{Reason: reason} },
		})
	}
	return stages
}

// checkCommand checks a command line a tool is about to send to a session
// of kind, before anything is sent or awaited; a refusal is an error on
// the argument field, naming the rule.
func (s *Server) checkCommand(kind session.Kind, field, command string) error {
	if rules := s.rulesFor(kind); rules != nil {
		if err := rules.Check(command); err != nil {
			return invalid(field, "%v", err)
		}
	}
	return nil
}

// rulesArg makes a refusal by the rules that a send met (the session's
// stages) an error on the argument field; other errors pass unchanged.
func rulesArg(field string, err error) error {
	if errors.As(err, new(*policy.BlockedError)) {
		return invalid(field, "%v", err)
	}
	return err
}

// programKey keeps, with a PTY session, the program it started (a
// program), so a restart is checked against the rules in force then.
type programKey struct{}

type program struct {
	command string
	args    []string
	env     map[string]string
}

// checkProgram checks a program a PTY session is about to start: the
// program with its arguments as a command line, and the prompt code its
// environment gives a shell (policy.Rules.CheckProgram).
func (s *Server) checkProgram(p program) error {
	if rules := s.rulesFor(session.KindPTY); rules != nil {
		return rules.Rules().CheckProgram(p.command, p.args, p.env)
	}
	return nil
}

// checkRestart checks the program a restart would start again, against
// the rules in force now; a session that recorded no program passes.
func (s *Server) checkRestart(sess *session.Session, field string) error {
	p, ok := sess.Value(programKey{}).(program)
	if !ok {
		return nil
	}
	if err := s.checkProgram(p); err != nil {
		return invalid(field, "the program a restart would start again is refused: %v", err)
	}
	return nil
}
