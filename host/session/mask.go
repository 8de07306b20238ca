package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// maskStage masks the server's secrets (SecretSet) in what a session
// receives, however the bytes are split: a tail that could be the start of
// a secret is held back until the next chunk tells (or the peer has been
// quiet for Config.UTF8Hold, the same bound a read holds an incomplete
// character for); the bytes passed on last are kept, so a secret whose
// start was released in the clear is still masked when its rest comes.
// Registry.Open makes one for every session (an OutputStage, first of its
// stages); it is used with the chain lock held.
type maskStage struct {
	set    *SecretSet
	recent []byte // the last bytes passed on, unmasked (at most maxLen-1)
	held   []byte // a possible start of a secret, not passed on yet
	heldAt time.Time
	// scratch holds one chunk's working copy between chunks (the buffer
	// copies what is staged), up to maskScratch.
	scratch []byte
	// The state at a plugin call's start, when secrets are masked: what
	// Restore goes back to with the buffer.
	saved                  bool
	savedRecent, savedHeld []byte
}

// MaskStage is the stage that masks set's secrets in a session's output
// (a new one per session: it holds the session's state).
func MaskStage(set *SecretSet) OutputStage { return &maskStage{set: set} }

func (m *maskStage) StageName() string { return "mask" }

// Filter masks p. With no secret typed in the server's life (and nothing
// held) the bytes pass as they are.
func (m *maskStage) Filter(p []byte) []byte {
	snap := m.set.load()
	if snap == nil {
		return p
	}
	return m.maskChunk(snap, p, false)
}

// Flush passes on what is held, masked as far as can be told.
func (m *maskStage) Flush() []byte {
	if len(m.held) == 0 {
		return nil
	}
	snap := m.set.load()
	if snap == nil {
		out := m.held // staged by the caller before the next Filter
		m.held = m.held[:0]
		return out
	}
	return m.maskChunk(snap, nil, true)
}

func (m *maskStage) HeldSince() time.Time {
	if len(m.held) == 0 {
		return time.Time{}
	}
	return m.heldAt
}

func (m *maskStage) Save() {
	if m.saved = m.set.load() != nil; m.saved {
		m.savedRecent, m.savedHeld = append(m.savedRecent[:0], m.recent...), append(m.savedHeld[:0], m.held...)
	}
}

func (m *maskStage) Restore() {
	if m.saved {
		m.recent, m.held = append(m.recent[:0], m.savedRecent...), append(m.held[:0], m.savedHeld...)
	}
}

// maskChunk masks p (after what is held) and returns what may pass on;
// flush passes everything, holding nothing back.
func (m *maskStage) maskChunk(snap *secretSnap, p []byte, flush bool) []byte {
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

// ErrEchoOn refuses to type a secret into a terminal that would show it.
var ErrEchoOn = errors.New("the terminal echoes what is typed")

// EchoReporter is a link that knows whether its terminal echoes input (a
// PTY: the ECHO flag of its termios).
type EchoReporter interface {
	Echoes() (bool, error)
}

// Enter is what a line typed by the host ends with: CR. On Telnet the
// plugin sends it as CR NUL, one line end; CR LF would be two on a host
// that maps CR to NL (an empty command after each one, or a newline left
// behind after a password).
const Enter = "\r"

// CheckCredential refuses a credential the host does not type: empty, or
// longer than MaxSecretLen (what a prompt reads is a line, and the mask
// stage holds back at most that much while it decides).
func CheckCredential(secret []byte) error {
	if len(secret) == 0 {
		return errors.New("the secret is empty")
	}
	if len(secret) > MaxSecretLen {
		return fmt.Errorf("the secret is longer than %d bytes: not something a prompt reads", MaxSecretLen)
	}
	return nil
}

// SendCredential types a credential followed by Enter, with the checks
// that are the engine's own, in this order: not empty and at most
// MaxSecretLen bytes; every plugin of the session trusted with a secret
// (SecretsAllowed); the line typed before it vetted as if Enter were
// pressed (LineCheck); not into a terminal known to echo it (ErrEchoOn).
// With mask the credential is masked from then on in every session for
// the server's life (SecretSet); without (a username) it is not. It is
// never logged and never passes the input hook. Whether the credential
// may go where the session's input goes now (Destination) is the
// caller's decision, made before (host/device's Gate).
func (s *Session) SendCredential(ctx context.Context, secret []byte, mask bool) error {
	if err := CheckCredential(secret); err != nil {
		return err
	}
	if err := s.humanRefusal(); err != nil { // before the secret joins the masked set (human.go)
		return err
	}
	if err := s.SecretsAllowed(); err != nil {
		return err
	}
	done, err := s.secretLine(ctx, secret) // its Enter also submits keys typed before it; one line (linecheck.go)
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
	line := append(bytes.Clone(secret), Enter...)
	defer clear(line)
	var shown []byte // a recording shows the mask, never the secret
	if mask {
		shown = append(bytes.Repeat([]byte{'*'}, len(secret)), Enter...)
	}
	return s.send(ctx, line, false, false, shown)
}
