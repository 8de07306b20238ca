package host

import (
	"github.com/termhost/termhost/internal/warm"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	ptylink "github.com/termhost/termhost/host/link/pty"
	"github.com/termhost/termhost/host/pty"
	"github.com/termhost/termhost/host/secrets"
)

// newPrograms decides what programs started by termhost get (SPEC TRUST-2,
// TRUST-3): termhost's environment without its own variables, a wrapper
// that ends everything they start, and, where the machine allows, no
// access to termhost's own files. creds is the credentials store once
// there is one (its keys are hidden from programs started after a reload
// too).
func newPrograms(cfg Config, creds *atomic.Pointer[secrets.Store], begin *warm.Gate) (pty.Programs, *ptylink.Containment, error) {
	env, agentSock := programEnv(os.Environ(), cfg.OwnEnv)
	secretVals := map[string]string{}
	for _, v := range cfg.OwnEnv {
		if val := os.Getenv(v.Name); v.Secret && val != "" {
			secretVals[v.Name] = val
		}
	}
	progs := pty.Programs{
		Environ: func() []string {
			// SSH_AUTH_SOCK goes too while a credential signs through the
			// agent: a program told where the agent is could sign as that
			// credential (it can still look for the socket itself: see
			// docs/RATIONALE.md).
			if agentSock != "" && !agentInUse(creds.Load()) {
				return append(env[:len(env):len(env)], agentSock)
			}
			return env
		},
		Secrets: secretVals,
	}
	if cfg.NoPrograms {
		return progs, nil, nil
	}
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	credFile, rulesFile, known := cfg.CredentialsFile, cfg.RulesFile, cfg.KnownHostsFile
	if credFile == "" {
		credFile = "credentials.json"
	}
	if rulesFile == "" {
		rulesFile = "rules.json"
	}
	if known == "" {
		known = secrets.DefaultKnownHosts()
	}
	// The compiled-plugin cache is hidden too: its files are the native
	// code trusted plugins run, checked by wazero with a CRC, not a
	// signature, so a program that could write them could change what a
	// first-party plugin does.
	cache := ""
	switch cfg.CacheDir {
	case "off":
	case "":
		if base, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(base, "termhost")
		}
	default:
		cache = abs(cfg.CacheDir)
	}
	var own []string
	for _, p := range []string{abs(credFile), abs(rulesFile), abs(known), abs(cfg.PluginDir), abs(os.Getenv("SSH_KEY_PATH")), cache} {
		if p != "" {
			own = append(own, p)
		}
	}
	hidden := func() []string {
		out := append(make([]string, 0, len(own)+8), own...)
		if s := creds.Load(); s != nil {
			for _, in := range s.List() {
				if c, err := s.Get(in.ID); err == nil && c.PrivateKeyPath != "" {
					out = append(out, abs(c.PrivateKeyPath))
				}
			}
		}
		if cfg.HiddenPaths != nil {
			for _, p := range cfg.HiddenPaths() {
				if p != "" {
					out = append(out, abs(p))
				}
			}
		}
		return out
	}
	contain, err := ptylink.NewContainment(ptylink.ContainmentConfig{
		Mechanism: cfg.Containment, Sandbox: cfg.Sandbox, Hidden: hidden, Begin: begin,
		Logger: cfg.Logger.With("component", "pty"),
	})
	if err != nil {
		return progs, nil, err
	}
	progs.Contain = contain
	return progs, contain, nil
}

// programEnv is environ without termhost's own variables (a name ending
// in "*" is a prefix), sorted as given; SSH_AUTH_SOCK is held apart
// (returned as its NAME=value) for Environ to decide on at each start.
func programEnv(environ []string, own []EnvVar) (env []string, agentSock string) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name == "SSH_AUTH_SOCK" {
			agentSock = kv
			continue
		}
		if !isOwn(name, own) {
			env = append(env, kv)
		}
	}
	return env, agentSock
}

func isOwn(name string, own []EnvVar) bool {
	for _, v := range own {
		if p, ok := strings.CutSuffix(v.Name, "*"); ok && strings.HasPrefix(name, p) || name == v.Name {
			return true
		}
	}
	return false
}

// agentInUse: a loaded credential signs through the ssh-agent.
func agentInUse(s *secrets.Store) bool {
	if s == nil {
		return false
	}
	for _, in := range s.List() {
		if in.AuthType == "agent" {
			return true
		}
	}
	return false
}
