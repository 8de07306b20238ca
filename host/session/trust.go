package session

import (
	"errors"
	"fmt"
	"strings"
)

// A plugin in a session's chain sees every byte typed into the session,
// and its screen every byte the peer echoes. A secret is for the plugins
// the user trusts: the first-party ones embedded in termhost and those
// the user pinned by sha256 (host/plugin's trust). A binding says so by
// implementing trusted; one that does not is taken as untrusted.
type trusted interface {
	Trusted() bool
}

// ErrUntrustedPlugin: a secret was refused because a plugin of the
// session is neither first-party nor pinned.
var ErrUntrustedPlugin = errors.New("the session runs a plugin that is not trusted with secrets")

// ChainTrusted says whether every plugin of the session (its chain and its
// screen) is trusted to see a secret typed into it. Secrets are typed
// only when it is true.
func (s *Session) ChainTrusted() bool {
	return len(s.UntrustedPlugins()) == 0
}

// UntrustedPlugins names the session's plugins that are neither
// first-party nor pinned.
func (s *Session) UntrustedPlugins() []string {
	var out []string
	for _, b := range s.bindings() {
		if t, ok := b.(trusted); !ok || !t.Trusted() {
			name, _ := b.Plugin()
			out = append(out, name)
		}
	}
	return out
}

// SecretsAllowed is nil when a secret may be typed into the session, else
// an ErrUntrustedPlugin that names the plugins in the way and what the
// user can do.
func (s *Session) SecretsAllowed() error {
	bad := s.UntrustedPlugins()
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s is neither first-party nor pinned, and would see the secret typed; open the session without it, or have the user pin it (--plugin-pin NAME=SHA256)",
		ErrUntrustedPlugin, strings.Join(quoted(bad), ", "))
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("plugin %q", n)
	}
	return out
}
