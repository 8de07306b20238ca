package device

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// loginPrompts recognise the fields of a login dialogue at the end of the
// output (a dialect's login events say the same, when one is attached).
var (
	loginUser  = regexp.MustCompile(`(?i)(user ?name|login|user)\s*:\s*$`)
	loginPass  = regexp.MustCompile(`(?i)pass(word|code)?\s*:\s*$`)
	loginShell = regexp.MustCompile(`[>#$%\]]\s*$`)
	// lastLogin is the greeting "Last login: <date> from <host>", which a
	// read can end right after its colon.
	lastLogin = regexp.MustCompile(`(?i)^\s*last login\s*:`)
	loginFail = regexp.MustCompile(`(?i)(login incorrect|login failed|login invalid|authentication failed|authentication is rejected|access denied|bad password|invalid password|permission denied)`)
	loginAny  = session.MustCompilePattern(`(?i)((user ?name|login|user|pass(word|code)?)\s*:|[>#$%\]])\s*$`)
)

// loginSettle is how long a prompt-like line that no dialect confirmed
// must stay the last output before Login takes it for the prompt.
const loginSettle = 150 * time.Millisecond

// dialectPromptAfter reports whether a dialect reported a prompt in an
// event after seq.
func dialectPromptAfter(s *session.Session, seq uint64) bool {
	for _, e := range s.Events(seq) {
		if p, ok := e.Body.(*abi.Prompt); ok && p.Source == abi.SourceDialect {
			return true
		}
	}
	return false
}

// ErrLogin is a login that did not succeed.
var ErrLogin = errors.New("login failed")

// ErrNoUsername: the device asked for a username and the credential has
// none (a password-only credential, SPEC DEV-3); nothing was typed.
var ErrNoUsername = errors.New("the device asked for a username, and the credential has none")

// ErrNoPassword: the device asked for a password and the credential has
// none (and no Ask was given); nothing was typed.
var ErrNoPassword = errors.New("the device asks for a password and the credential has none")

// Login answers a device's login dialogue: the username when asked for
// one, the password (typed as a secret: masked in what comes back) when
// asked for it, until a prompt shows or timeout (the time a person takes on an
// Ask is not counted). Each is typed once: a
// device that asks for one again ends the login at once (another try
// would only lock the account). allow, if set, must accept the session
// before anything is typed. It reports the prompt line it ended at.
func Login(ctx context.Context, s *session.Session, username string, password []byte, timeout time.Duration, allow Gate) (string, error) {
	return LoginAsking(ctx, s, username, password, timeout, allow, nil)
}

// Ask asks the person (not the model) for a login field no credential
// supplies, "username", "password" or "enable", and types their answer
// into the session itself (masked, as SendSecret types a secret); the
// answer never comes back to the caller. prompt is the device's line.
// host/mcp makes one over HTTP (a one-time page, ask_secret's); nil
// leaves the field unanswered.
type Ask func(ctx context.Context, field, prompt string) error

// LoginAsking is Login that asks for a field the credential lacks (a
// username for a password-only credential, a missing password) with ask,
// when set, instead of failing.
func LoginAsking(ctx context.Context, s *session.Session, username string, password []byte, timeout time.Duration, allow Gate, ask Ask) (string, error) {
	if allow != nil {
		if err := allow(s.Destination()); err != nil {
			return "", err
		}
	}
	if err := s.SecretsAllowed(); err != nil {
		return "", err // before the username: nothing of the login goes through it
	}
	deadline := time.Now().Add(timeout)
	mark := s.Oldest() // from the start: the login prompt may already be there
	sentUser, sentPass := false, false
	for step := 0; step < 6; step++ {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		_, _, err := s.Wait(ctx, mark, session.WaitSpec{Until: loginAny, Exit: true, Timeout: left, Stable: 0}, true)
		if err != nil {
			return "", err
		}
		if !s.Alive() {
			return "", fmt.Errorf("%w: %v", ErrLogin, s.DisconnectedErr())
		}
		head := s.Mark().Off
		from := max(mark.Off, head-min(head, 512))
		tail, _ := s.ReadRange(from, from+512)
		text := clean(tail)
		if loginFail.MatchString(text) && (sentUser || sentPass) {
			return "", fmt.Errorf("%w: the device said %q", ErrLogin, lastLine(text))
		}
		prev := mark
		mark = session.Cursor{Off: head, Seq: s.LastSeq()}
		switch {
		case loginPass.MatchString(text):
			if sentPass {
				return "", fmt.Errorf("%w: the device asked for the password again (wrong password?)", ErrLogin)
			}
			switch {
			case len(password) == 0 && ask != nil:
				asked := time.Now()
				if err := askField(ctx, s, ask, allow, "password", text); err != nil {
					return "", err
				}
				deadline = deadline.Add(time.Since(asked)) // the person's time is not the device's
			case len(password) == 0:
				return "", fmt.Errorf("%w: %w", ErrLogin, ErrNoPassword)
			default:
				// A terminal that would show it (session.ErrEchoOn) is
				// not typed into, and the login stops saying so: going on
				// as if the password had been sent would only wait for a
				// prompt that never comes.
				if err := SendSecret(ctx, s, password, allow); err != nil {
					return "", err
				}
			}
			sentPass = true
		case loginUser.MatchString(text) && !lastLogin.MatchString(lastLine(text)):
			if sentUser {
				return "", fmt.Errorf("%w: the device asked for the username again (wrong username or password?)", ErrLogin)
			}
			switch {
			case username == "" && ask != nil:
				asked := time.Now()
				if err := askField(ctx, s, ask, allow, "username", text); err != nil {
					return "", err
				}
				deadline = deadline.Add(time.Since(asked)) // the person's time is not the device's
			case username == "":
				return "", fmt.Errorf("%w: %w", ErrLogin, ErrNoUsername)
			default:
				if err := s.SendCredential(ctx, []byte(username), false); err != nil {
					return "", err
				}
			}
			sentUser = true
		case loginShell.MatchString(text):
			// A read can end inside a banner ("####", "[ok]"): the prompt
			// is the last thing before the device waits. A dialect's prompt
			// event says so at once; otherwise the line must stay last for
			// a moment.
			if dialectPromptAfter(s, prev.Seq) {
				return loggedIn(s, lastLine(text)), nil
			}
			if _, _, err := s.Wait(ctx, mark, session.WaitSpec{Stable: loginSettle, Exit: true, Timeout: min(loginSettle*4, max(left, time.Millisecond))}, true); err != nil {
				return "", err
			}
			if s.Mark().Off == head {
				return loggedIn(s, lastLine(text)), nil
			}
			// More came: not the prompt yet. Look again at everything since
			// the previous step, so a prompt cut by this read ("name" then
			// "> ") is matched whole; the deadline still bounds this.
			mark = prev
			step--
		}
	}
	return "", fmt.Errorf("%w: no prompt within %v", ErrLogin, timeout)
}

// askField asks the person for a field through ask, after the gate: what
// they type goes where the credential's secrets would go, and only there.
func askField(ctx context.Context, s *session.Session, ask Ask, allow Gate, field, text string) error {
	if allow != nil {
		if err := allow(s.Destination()); err != nil {
			return err
		}
	}
	if err := ask(ctx, field, lastLine(text)); err != nil {
		return fmt.Errorf("%w: the device asked for the %s, which the credential lacks, and asking the person failed: %w", ErrLogin, field, err)
	}
	return nil
}

// loggedIn records the prompt a login ended at: commands that no dialect
// ends end at it (learned.go).
func loggedIn(s *session.Session, prompt string) string {
	learn(s, prompt)
	return prompt
}

func lastLine(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
