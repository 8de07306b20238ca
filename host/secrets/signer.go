package secrets

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// KeyError is a credential whose key cannot be used: unreadable, open to
// others, encrypted without a passphrase, no agent… (SPEC SSH-7 -32001).
type KeyError struct {
	ID  string
	Msg string
}

func (e *KeyError) Error() string { return fmt.Sprintf("credential %q: %s", e.ID, e.Msg) }

// Keys are the signers of one credential for one connection. Sign is what
// the SSH plugin's host call reaches; the private keys stay here.
type Keys struct {
	signers []ssh.Signer
	close   func()
}

// Public is the wire-format public key of each signer, in order.
func (k *Keys) Public() [][]byte {
	out := make([][]byte, len(k.signers))
	for i, s := range k.signers {
		out[i] = s.PublicKey().Marshal()
	}
	return out
}

// Len is the number of signers.
func (k *Keys) Len() int { return len(k.signers) }

// Sign signs data with signer i, with the named algorithm when given
// (rsa-sha2-256/512 for RSA keys), returning the wire-format signature.
func (k *Keys) Sign(i int, algorithm string, data []byte) ([]byte, error) {
	if i < 0 || i >= len(k.signers) {
		return nil, fmt.Errorf("no key %d", i)
	}
	s := k.signers[i]
	var sig *ssh.Signature
	var err error
	if as, ok := s.(ssh.AlgorithmSigner); ok && algorithm != "" {
		sig, err = as.SignWithAlgorithm(rand.Reader, data, algorithm)
	} else {
		sig, err = s.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, err
	}
	return ssh.Marshal(sig), nil
}

// Close releases the keys (the agent connection).
func (k *Keys) Close() {
	if k != nil && k.close != nil {
		k.close()
		k.close = nil
	}
}

// ErrNoUsername: an SSH login with a credential that has no username (a
// device credential of a password-only line).
var ErrNoUsername = errors.New("no username")

// Keys loads what an SSH login with the credential needs besides its
// password: the signers of a key or agent credential (a password
// credential has none). A credential without a username cannot log in
// over SSH and is refused here, before anything is dialed, as is one
// that is not for SSH (its "kinds": a *KindError).
func (c Credential) Keys() (*Keys, error) {
	if c.Username == "" {
		return nil, fmt.Errorf("credential %q has %w: it is a device credential for a password-only line (telnet_connect); an SSH login needs \"username\"", c.ID, ErrNoUsername)
	}
	if err := c.CheckKind(KindSSH); err != nil {
		return nil, err
	}
	switch c.AuthType {
	case AuthKey:
		s, err := c.fileSigner()
		if err != nil {
			return nil, err
		}
		return &Keys{signers: []ssh.Signer{s}}, nil
	case AuthAgent:
		return c.agentKeys()
	}
	return &Keys{}, nil
}

func (c Credential) fileSigner() (ssh.Signer, error) {
	fi, err := os.Stat(c.PrivateKeyPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &KeyError{c.ID, fmt.Sprintf("private key %s does not exist", c.PrivateKeyPath)}
		}
		return nil, &KeyError{c.ID, fmt.Sprintf("cannot read private key %s: %v", c.PrivateKeyPath, errors.Unwrap(err))}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, &KeyError{c.ID, (&PermError{Path: c.PrivateKeyPath, Mode: fi.Mode()}).Error()}
	}
	pem, err := os.ReadFile(c.PrivateKeyPath)
	if err != nil {
		return nil, &KeyError{c.ID, fmt.Sprintf("cannot read private key %s", c.PrivateKeyPath)}
	}
	defer clear(pem)
	s, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if len(c.passphrase) == 0 {
			return nil, &KeyError{c.ID, fmt.Sprintf("private key %s is encrypted and no passphrase is given (set \"passphrase\", base64, or SSH_PASSPHRASE)", c.PrivateKeyPath)}
		}
		s, err = ssh.ParsePrivateKeyWithPassphrase(pem, c.passphrase)
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, &KeyError{c.ID, fmt.Sprintf("the passphrase does not open private key %s", c.PrivateKeyPath)}
		}
	}
	if err != nil {
		return nil, &KeyError{c.ID, fmt.Sprintf("private key %s cannot be parsed: %s", c.PrivateKeyPath, safeKeyErr(err))}
	}
	return s, nil
}

// safeKeyErr keeps a key parser's message only when it is one of the
// known, secret-free ones.
func safeKeyErr(err error) string {
	msg := err.Error()
	for _, ok := range []string{"no key found", "unsupported key type", "not an OpenSSH private key", "invalid", "incorrect"} {
		if strings.Contains(msg, ok) {
			return msg
		}
	}
	return "not a private key termhost can read"
}

func (c Credential) agentKeys() (*Keys, error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, &KeyError{c.ID, "authType \"agent\" needs a running ssh-agent, and SSH_AUTH_SOCK is not set in termhost's environment"}
	}
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return nil, &KeyError{c.ID, fmt.Sprintf("cannot reach the ssh-agent at SSH_AUTH_SOCK (%s): %v", sock, errors.Unwrap(err))}
	}
	ag := agent.NewClient(conn)
	signers, err := ag.Signers()
	if err != nil {
		conn.Close()
		return nil, &KeyError{c.ID, fmt.Sprintf("the ssh-agent did not list its keys: %v", err)}
	}
	if c.PrivateKeyPath != "" {
		want, err := agentKeyFilter(c.PrivateKeyPath)
		if err != nil {
			conn.Close()
			return nil, &KeyError{c.ID, err.Error()}
		}
		var kept []ssh.Signer
		for _, s := range signers {
			if bytes.Equal(s.PublicKey().Marshal(), want.Marshal()) {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			conn.Close()
			return nil, &KeyError{c.ID, fmt.Sprintf("the ssh-agent does not hold the key of %s (ssh-add it)", c.PrivateKeyPath)}
		}
		signers = kept
	}
	if len(signers) == 0 {
		conn.Close()
		return nil, &KeyError{c.ID, "the ssh-agent holds no keys (add one with ssh-add)"}
	}
	return &Keys{signers: signers, close: func() { conn.Close() }}, nil
}

// agentKeyFilter reads the public key that selects an agent key: the file
// itself when it is a public key, else its ".pub" companion.
func agentKeyFilter(path string) (ssh.PublicKey, error) {
	for _, p := range []string{path, path + ".pub"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if k, _, _, _, err := ssh.ParseAuthorizedKey(data); err == nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("privateKeyPath %s: no public key found there or in %s.pub to choose the agent's key", path, path)
}
