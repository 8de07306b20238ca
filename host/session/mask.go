package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// maskStream is a session's state for masking the server's secrets
// (SecretSet) in what it receives, however the bytes are split: a tail
// that could be the start of a secret is held back until the next chunk
// tells (or the peer has been quiet for Config.UTF8Hold, the same bound a
// read holds an incomplete character for); the bytes passed on last are
// kept, so a secret whose start was released in the clear is still masked
// when its rest comes. Guarded by the chain lock.
type maskStream struct {
	recent []byte // the last bytes passed on, unmasked (at most maxLen-1)
	held   []byte // a possible start of a secret, not passed on yet
	heldAt time.Time
	timer  *time.Timer
	// scratch holds one chunk's working copy between chunks (the buffer
	// copies what is staged), up to maskScratch.
	scratch []byte
}

// stage puts bytes for the buffer through the secret set. With no secret
// typed in the server's life (and nothing held) the bytes go straight to
// the buffer. Caller holds the chain lock.
func (s *Session) stage(p []byte) {
	snap := s.cfg.Secrets.load()
	if snap == nil {
		s.buf.Stage(p)
		return
	}
	s.buf.Stage(s.maskChunk(snap, p, false))
}

// maskChunk masks p (after what is held) and returns what may pass on;
// flush passes everything, holding nothing back. Caller holds the chain
// lock.
func (s *Session) maskChunk(snap *secretSnap, p []byte, flush bool) []byte {
	m := &s.mask
	r := len(m.recent)
	n := r + len(m.held) + len(p)
	// buf is recent, held and p, then (from n) the masked copy passed on.
	if cap(m.scratch) < 2*n {
		m.scratch = make([]byte, 0, 2*n)
	}
	buf := append(append(append(m.scratch[:0], m.recent...), m.held...), p...)
	m.held = m.held[:0]
	hold := 0
	if !flush {
		hold = heldTail(snap, buf, r)
	}
	end := n - hold
	out := append(buf[n:n], buf[r:end]...)
	for _, sec := range snap.list {
		for i := 0; ; {
			j := bytes.Index(buf[i:n], sec)
			if j < 0 {
				break
			}
			start, stop := i+j, i+j+len(sec)
			for k := max(start, r); k < min(stop, end); k++ {
				out[k-r] = '*'
			}
			i = start + 1
		}
	}
	if hold > 0 {
		m.held = append(m.held, buf[end:n]...)
		m.heldAt = time.Now()
		s.armRelease()
	}
	keep := max(snap.maxLen-1, 0)
	passed := buf[:end]
	if len(passed) > keep {
		passed = passed[len(passed)-keep:]
	}
	m.recent = append(m.recent[:0], passed...)
	if cap(m.scratch) > maskScratch {
		defer func() { m.scratch = nil }()
	}
	// The caller stages out (the buffer copies it) before the next chunk
	// reuses the scratch.
	return out
}

// maskScratch bounds the working copy a session keeps between chunks.
const maskScratch = 128 << 10

// heldTail is how many bytes at the end of buf (past the first r, which
// were passed on already) to hold back: the longest tail that is a proper
// prefix of a secret.
func heldTail(snap *secretSnap, buf []byte, r int) int {
	best := 0
	for _, sec := range snap.list {
		lo := len(buf) - min(len(buf), len(sec)-1)
		for pos := lo; pos < len(buf)-best; pos++ {
			j := bytes.IndexByte(buf[pos:], sec[0])
			if j < 0 {
				break
			}
			pos += j
			if pos >= len(buf)-best {
				break
			}
			if bytes.HasPrefix(sec, buf[pos:]) {
				best = len(buf) - pos
				break
			}
		}
	}
	return min(best, len(buf)-r)
}

// armRelease makes sure held bytes are passed on once the peer has been
// quiet for the hold time. Caller holds the chain lock.
func (s *Session) armRelease() {
	if s.mask.timer != nil {
		s.mask.timer.Reset(s.cfg.UTF8Hold)
		return
	}
	s.mask.timer = time.AfterFunc(s.cfg.UTF8Hold, s.releaseHeld)
}

// releaseHeld passes on what the masking holds back once the peer has
// been quiet for the hold time, through a walk of its own so the screen
// and waiters see it.
func (s *Session) releaseHeld() {
	select {
	case <-s.released:
		return
	case s.chainSem <- struct{}{}:
	}
	defer s.unlockChain()
	select {
	case <-s.released:
		return // release flushed what it could; the plugins are gone
	default:
	}
	if len(s.mask.held) == 0 {
		return
	}
	if wait := s.cfg.UTF8Hold - time.Since(s.mask.heldAt); wait > 0 {
		s.mask.timer.Reset(wait)
		return
	}
	w := &s.w
	w.reset()
	s.flushHeld()
	w.run()
	s.submit(w.commit(false))
}

// flushHeld stages what is held, masked as far as it can tell. Caller
// holds the chain lock.
func (s *Session) flushHeld() {
	if len(s.mask.held) == 0 {
		return
	}
	snap := s.cfg.Secrets.load()
	if snap == nil {
		s.buf.Stage(s.mask.held)
		s.mask.held = s.mask.held[:0]
		return
	}
	s.buf.Stage(s.maskChunk(snap, nil, true))
}

// ErrEchoOn refuses to type a secret into a terminal that would show it.
var ErrEchoOn = errors.New("the terminal echoes what is typed")

// EchoReporter is a link that knows whether its terminal echoes input (a
// PTY: the ECHO flag of its termios).
type EchoReporter interface {
	Echoes() (bool, error)
}

// Gate decides whether a secret may be typed into a session, from where
// its input goes right now (TRUST-1); nil allows it.
type Gate func(Destination) error

// SendSecret types a secret followed by Enter: refused when allow says no
// or the terminal is known to echo it, never logged, and from then on
// masked in every session for the server's life (SecretSet).
func (s *Session) SendSecret(ctx context.Context, secret []byte, allow Gate) error {
	return s.sendCredential(ctx, secret, allow, true)
}

// SendUsername types a credential's username as SendSecret types a
// secret, through the same gate and echo check, but does not mask it: a
// username is shown by ssh_list_credentials, and masking "root" or
// "admin" in every session for the server's life would hide ordinary
// output.
func (s *Session) SendUsername(ctx context.Context, name []byte, allow Gate) error {
	return s.sendCredential(ctx, name, allow, false)
}

func (s *Session) sendCredential(ctx context.Context, secret []byte, allow Gate, mask bool) error {
	if len(secret) == 0 {
		return errors.New("the secret is empty")
	}
	if len(secret) > MaxSecretLen {
		return fmt.Errorf("the secret is longer than %d bytes: not something a prompt reads", MaxSecretLen)
	}
	if allow != nil {
		if err := allow(s.Destination()); err != nil {
			return err
		}
	}
	if err := s.SecretsAllowed(); err != nil {
		return err
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
	if mask {
		s.cfg.Secrets.Add(secret)
	}
	line := append(bytes.Clone(secret), enter...)
	defer clear(line)
	return s.sendRaw(ctx, line)
}
