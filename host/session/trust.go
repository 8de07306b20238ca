package session

// A plugin in a session's chain sees every byte typed into the session,
// and its screen every byte the peer echoes. A secret is for the plugins
// the user trusts: the first-party ones embedded in termhost and those
// the user pinned by sha256 (host/plugin's trust). A binding says so by
// implementing trusted; one that does not is taken as untrusted.
type trusted interface {
	Trusted() bool
}

// ChainTrusted says whether every plugin of the session (its chain and its
// screen) is trusted to see a secret typed into it. Secrets are typed
// only when it is true.
func (s *Session) ChainTrusted() bool {
	return len(s.UntrustedPlugins()) == 0
}

// UntrustedPlugins names the session's plugins that are neither
// first-party nor pinned, for an error that says why a secret was refused.
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
