package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/termhost/termhost/host/mcp"
)

// The bearer token of `serve --http` (SPEC TRUST-5), as Jupyter keeps its
// own: made at the first start, kept in a file only the user can read,
// and used again by later starts, so that a client's configuration with
// the header keeps working. Deleting the file makes the next start write
// a new one. A file that others could read or write, that is not the
// user's, that is a symbolic link or that holds no token is refused, not
// repaired: termhost does not guess whose it is.

// Token lengths: at least 128 bits in URL-safe base64 (22 characters),
// and a bound on what is read.
const (
	minTokenLen = 22
	maxTokenLen = 512
)

// defaultTokenFile is <user config dir>/termhost/token.
func defaultTokenFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", usagef("no user configuration directory to keep the HTTP token in (%v); name a file with --token-file", err)
	}
	return filepath.Join(dir, "termhost", "token"), nil
}

// loadToken returns the token in path, writing a new one there first when
// there is no file (its directory created 0700, the file 0600). reused
// says whether the file was there already.
func loadToken(path string) (token string, reused bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("token file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err == nil {
		token = mcp.NewToken()
		_, err = io.WriteString(f, token+"\n")
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return "", false, fmt.Errorf("token file %s: %w", path, err)
		}
		return token, false, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("token file %s: %w", path, err)
	}
	token, err = readToken(path)
	return token, true, err
}

// readToken reads a token file that must be a regular file of this user's,
// mode 0600 or stricter, not a symbolic link, holding one token. The
// checks are made on the file opened, so it cannot be swapped between
// check and read.
func readToken(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", usagef("token file %s is a symbolic link; name the file itself", path)
	}
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return "", usagef("token file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", usagef("token file %s has mode %04o: others could read or change the token; chmod 600 it (or delete it, and termhost writes a new one)", path, perm)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return "", usagef("token file %s belongs to uid %d, not to this user (uid %d)", path, sys.Uid, os.Geteuid())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenLen+2))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < minTokenLen || len(token) > maxTokenLen || !validToken(token) {
		return "", usagef("token file %s does not hold a token (one line of %d to %d characters of A-Z a-z 0-9 - . _ ~ + /); delete it, and termhost writes a new one",
			path, minTokenLen, maxTokenLen)
	}
	return token, nil
}

// validToken reports whether s is an RFC 6750 bearer token (b64token).
func validToken(s string) bool {
	s = strings.TrimRight(s, "=")
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.ContainsRune("-._~+/", c):
		default:
			return false
		}
	}
	return true
}
