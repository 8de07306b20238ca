package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// masker hides a secret in what a session receives for a while after it
// was typed: every occurrence becomes asterisks before the bytes reach the
// raw buffer (and so the screen, reads and resources). An echo that comes a
// character at a time is caught too: bytes that could be the start of the
// secret are held back until the next chunk tells (or the mask expires).
type masker struct {
	secret []byte
	until  time.Time
	held   []byte // a prefix of secret, not yet passed on
}

// filter returns p with the secret masked, holding back a trailing
// partial match. Caller holds the chain lock.
func (m *masker) filter(p []byte) []byte {
	in := append(m.held, p...)
	m.held = nil
	var out []byte
	for len(in) > 0 {
		i := bytes.Index(in, m.secret)
		if i < 0 {
			break
		}
		out = append(out, in[:i]...)
		out = append(out, bytes.Repeat([]byte{'*'}, len(m.secret))...)
		in = in[i+len(m.secret):]
	}
	// Hold back the longest tail that is a proper prefix of the secret.
	for k := min(len(in), len(m.secret)-1); k > 0; k-- {
		if bytes.Equal(in[len(in)-k:], m.secret[:k]) {
			m.held = append(m.held, in[len(in)-k:]...)
			in = in[:len(in)-k]
			break
		}
	}
	return append(out, in...)
}

// stage puts bytes for the buffer through the active masks. Caller holds
// the chain lock.
func (s *Session) stage(p []byte) {
	if len(s.masks) == 0 {
		s.buf.Stage(p)
		return
	}
	now := time.Now()
	keep := s.masks[:0]
	for _, m := range s.masks {
		p = m.filter(p)
		if now.Before(m.until) {
			keep = append(keep, m)
		} else if len(m.held) > 0 {
			p = append(p, m.held...) // expired: what it held was not the secret
		}
	}
	for i := len(keep); i < len(s.masks); i++ {
		clear(s.masks[i].secret)
		s.masks[i] = nil
	}
	s.masks = keep
	s.buf.Stage(p)
}

// ErrEchoOn refuses to type a secret into a terminal that would show it.
var ErrEchoOn = errors.New("the terminal echoes what is typed")

// EchoReporter is a link that knows whether its terminal echoes input (a
// PTY: the ECHO flag of its termios).
type EchoReporter interface {
	Echoes() (bool, error)
}

// SendSecret types a secret followed by Enter: never logged, refused when
// the terminal is known to echo it, and masked in whatever comes back for
// maskFor (the device may echo it anyway).
func (s *Session) SendSecret(ctx context.Context, secret []byte, maskFor time.Duration) error {
	if len(secret) == 0 {
		return errors.New("the secret is empty")
	}
	done, err := s.secretLine(ctx) // its Enter also submits keys typed before it (linecheck.go)
	if err != nil {
		return err
	}
	defer done()
	if e, ok := s.link.(EchoReporter); ok {
		on, err := e.Echoes()
		if err == nil && on {
			return fmt.Errorf("%w: the program is not at a password prompt (it would show the secret); wait for the prompt, then send it", ErrEchoOn)
		}
	}
	if err := s.lockChain(ctx.Done(), s.cfg.WriteTimeout); err != nil {
		return err
	}
	s.masks = append(s.masks, &masker{secret: bytes.Clone(secret), until: time.Now().Add(maskFor)})
	s.unlockChain()
	line := append(bytes.Clone(secret), enter...)
	defer clear(line)
	return s.sendRaw(ctx, line)
}
