package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// InputCheck is the first check of what is typed into a session (a
// session.InputFunc): the keys run through a typed-line model of their
// own (Typed) and every line they submit is checked against rules() as
// it stands then. A refused input sends nothing; its error says so and
// quotes the line typed so far, which stays unsent. The screen's check of
// the line at Enter (session.LineCheck) comes after it: the model cannot
// follow history or completion.
//
// The function keeps the line between calls; the session calls it under
// its chain lock, one send at a time.
func InputCheck(rules func() *Rules) func(p []byte) error {
	var typed Typed
	return func(p []byte) error {
		err := typed.Check(rules(), p)
		var be *BlockedError
		if !errors.As(err, &be) {
			return err
		}
		if p := typed.Pending(); p != "" {
			return fmt.Errorf("%w (nothing of this input was sent; the line typed so far, %q, is still unsent: clear it with the key C-u)", err, p)
		}
		return fmt.Errorf("%w (nothing of this input was sent)", err)
	}
}

// CommandLine is a program and its arguments as one command line, each
// word quoted as a shell would need it: what a session that starts a
// program (launch_app, start_pty) runs, for Check.
func CommandLine(command string, args []string) string {
	words := make([]string, 0, 1+len(args))
	for _, w := range append([]string{command}, args...) {
		q, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			// A word bash cannot quote (a NUL): kept as written, so the
			// line does not parse and an allow list refuses it.
			q = w
		}
		words = append(words, q)
	}
	return strings.Join(words, " ")
}

// CheckProgram checks what a session that starts a program runs (a
// launch_app, a start_pty): the program with its arguments as one command
// line (CommandLine), and the code its environment hands a shell to run
// or expand at each prompt (PROMPT_COMMAND, PS0…PS4, checked as if they
// were set on a line).
func (r *Rules) CheckProgram(command string, args []string, env map[string]string) error {
	if r.Empty() {
		return nil
	}
	if err := r.Check(CommandLine(command, args)); err != nil {
		return err
	}
	names := make([]string, 0, len(env))
	for k := range env {
		if promptVars[k] {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		if err := r.Check(k + "=" + CommandLine(env[k], nil)); err != nil {
			return err
		}
	}
	return nil
}
