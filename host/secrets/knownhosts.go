package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyChangedError is a server whose key is not the one on record: the
// connection fails closed (SPEC SSH-5). The message shows both
// fingerprints and how to accept the new key.
type HostKeyChangedError struct {
	Host  string   // as dialled, host:port
	Got   string   // the offered key: type and SHA256 fingerprint
	Want  []string // the recorded keys: type, fingerprint, file:line
	Files []string // the files holding them
}

func (e *HostKeyChangedError) Error() string {
	var fix []string
	for _, f := range e.Files {
		fix = append(fix, fmt.Sprintf("ssh-keygen -R %s -f %s", shellQuote(knownhosts.Normalize(e.Host)), shellQuote(f)))
	}
	return fmt.Sprintf("HOST KEY CHANGED for %s: the server offered %s but known_hosts has %s. "+
		"This can mean someone is intercepting the connection; termhost refuses to connect. "+
		"If the server's key was changed on purpose, remove the old key (%s) and connect again to record the new one.",
		e.Host, e.Got, strings.Join(e.Want, " and "), strings.Join(fix, "; "))
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HostKeyRevokedError is a server key marked @revoked.
type HostKeyRevokedError struct{ Host, Got string }

func (e *HostKeyRevokedError) Error() string {
	return fmt.Sprintf("host key %s of %s is marked @revoked in known_hosts; termhost refuses to connect", e.Got, e.Host)
}

// HostKeys verifies servers' host keys against termhost's own known_hosts
// file (written on first use) and the user's (read only).
type HostKeys struct {
	own   string
	extra []string
	log   *slog.Logger
	mu    sync.Mutex // serializes checks with the first-use writes
}

// Path is termhost's own known_hosts file (where new keys are written).
func (k *HostKeys) Path() string { return k.own }

// DefaultKnownHosts is termhost's own known_hosts: KNOWN_HOSTS_FILE, else
// $XDG_CONFIG_HOME/termhost/known_hosts (~/.config/termhost/known_hosts).
func DefaultKnownHosts() string {
	if p := os.Getenv("KNOWN_HOSTS_FILE"); p != "" {
		return expandHome(p)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "known_hosts"
	}
	return filepath.Join(dir, "termhost", "known_hosts")
}

// UserKnownHosts is ~/.ssh/known_hosts, or "" without a home.
func UserKnownHosts() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(h, ".ssh", "known_hosts")
}

// NewHostKeys verifies against own (read and written) and extra (read).
func NewHostKeys(own string, extra []string, log *slog.Logger) *HostKeys {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var ex []string
	for _, e := range extra {
		if e != "" && e != own {
			ex = append(ex, e)
		}
	}
	return &HostKeys{own: own, extra: ex, log: log}
}

// File is termhost's own known_hosts.
func (h *HostKeys) File() string { return h.own }

// Fingerprint is a key as people compare them: type and SHA256.
func Fingerprint(k ssh.PublicKey) string { return k.Type() + " " + ssh.FingerprintSHA256(k) }

// Check verifies key for hostport (as dialled) and remote (the address
// connected to). A host seen for the first time is trusted and recorded
// in the own file; a changed key is a *HostKeyChangedError.
func (h *HostKeys) Check(hostport string, remote net.Addr, key ssh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	files := h.files()
	if len(files) > 0 {
		cb, err := knownhosts.New(files...)
		if err != nil {
			return fmt.Errorf("cannot read known_hosts: %v", err)
		}
		err = cb(hostport, remote, key)
		if err == nil {
			return nil
		}
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &re):
			return &HostKeyRevokedError{Host: hostport, Got: Fingerprint(key)}
		case errors.As(err, &ke) && len(ke.Want) > 0:
			e := &HostKeyChangedError{Host: hostport, Got: Fingerprint(key)}
			seen := map[string]bool{}
			for _, w := range ke.Want {
				e.Want = append(e.Want, fmt.Sprintf("%s (%s:%d)", Fingerprint(w.Key), w.Filename, w.Line))
				if !seen[w.Filename] {
					seen[w.Filename] = true
					e.Files = append(e.Files, w.Filename)
				}
			}
			return e
		case errors.As(err, &ke):
			// Unknown host: trust on first use, below.
		default:
			return fmt.Errorf("host key check failed: %v", err)
		}
	}
	if err := h.record(hostport, key); err != nil {
		return fmt.Errorf("the host key of %s (%s) could not be recorded in %s, so termhost does not trust it: %v", hostport, Fingerprint(key), h.own, err)
	}
	h.log.Info("new host key trusted on first use and recorded", "host", hostport, "key", Fingerprint(key), "file", h.own)
	return nil
}

// files are the known_hosts files that exist, own first.
func (h *HostKeys) files() []string {
	var files []string
	for _, f := range append([]string{h.own}, h.extra...) {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	return files
}

// Algorithms are the key types on record for hostport, so a client can
// ask the server for a key it can verify; nil when none is known.
func (h *HostKeys) Algorithms(hostport string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	files := h.files()
	if len(files) == 0 {
		return nil
	}
	cb, err := knownhosts.New(files...)
	if err != nil {
		return nil
	}
	// A throwaway key never matches: the error lists what is on record.
	var ke *knownhosts.KeyError
	if err := cb(hostport, &net.TCPAddr{}, probeKey{}); !errors.As(err, &ke) {
		return nil
	}
	var out []string
	for _, w := range ke.Want {
		t := w.Key.Type()
		switch t {
		case ssh.KeyAlgoRSA:
			out = append(out, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			out = append(out, t)
		}
	}
	return out
}

// probeKey is a public key of a type no file holds.
type probeKey struct{}

func (probeKey) Type() string                        { return "termhost-probe" }
func (probeKey) Marshal() []byte                     { return []byte("termhost-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe") }

func (h *HostKeys) record(hostport string, key ssh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(h.own), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(h.own, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostport)}, key) + "\n"
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		// Make sure the line starts on a line of its own.
		if b := lastByte(h.own); b != '\n' {
			line = "\n" + line
		}
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func lastByte(path string) byte {
	f, err := os.Open(path)
	if err != nil {
		return '\n'
	}
	defer f.Close()
	var b [1]byte
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return '\n'
	}
	if _, err := f.ReadAt(b[:], fi.Size()-1); err != nil && !errors.Is(err, fs.ErrClosed) {
		return '\n'
	}
	return b[0]
}
