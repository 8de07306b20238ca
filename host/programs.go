package host

import (
	"fmt"
	"github.com/termhost/termhost/internal/warm"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

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
	// What each hidden file is, for the check of its other names (hard
	// links): the mount namespace covers a path, not the file, so another
	// name of it, made before termhost started, still reads.
	type ownFile struct{ path, what string }
	var own []ownFile
	for _, f := range []ownFile{
		{abs(credFile), whatCredentials}, {abs(rulesFile), "rules file"}, {abs(known), "known_hosts file"},
		{abs(cfg.PluginDir), "plugin directory"}, {abs(os.Getenv("SSH_KEY_PATH")), whatKey}, {cache, "plugin cache"},
	} {
		if f.path != "" {
			own = append(own, f)
		}
	}
	links := &linkCheck{log: cfg.Logger.With("component", "pty")}
	if cfg.Sandbox != "off" {
		// At start a credentials file or a file the caller hides (the HTTP
		// token) with another name stops termhost: the sandbox's promise
		// is about them, and they are termhost's own, which nothing else
		// needs another name for. The rest is said in the log (linkCheck),
		// once the sandbox is known to be in force.
		refuse := []ownFile{{abs(credFile), whatCredentials}}
		if cfg.HiddenPaths != nil {
			for _, p := range cfg.HiddenPaths() {
				if p != "" {
					refuse = append(refuse, ownFile{abs(p), whatHidden})
				}
			}
		}
		for _, f := range refuse {
			if n := fileLinks(f.path); n > 1 {
				return progs, nil, fmt.Errorf("sandbox: the %s %s has %d names (hard links): programs could read it through another, which the sandbox cannot hide; "+
					"remove the other names (find -xdev -samefile %s, run from the mount point of its file system, lists them), or start with --sandbox=off if programs may read it", f.what, f.path, n, f.path)
			}
		}
	}
	hidden := func() []string {
		out := make([]string, 0, len(own)+8)
		for _, f := range own {
			out = append(out, f.path)
			links.check(f.path, f.what)
		}
		if s := creds.Load(); s != nil {
			for _, in := range s.List() {
				if c, err := s.Get(in.ID); err == nil && c.PrivateKeyPath != "" {
					p := abs(c.PrivateKeyPath)
					out = append(out, p)
					links.check(p, whatKey)
				}
			}
		}
		if cfg.HiddenPaths != nil {
			for _, p := range cfg.HiddenPaths() {
				if p != "" {
					out = append(out, abs(p))
					links.check(abs(p), whatHidden)
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
	if cfg.Sandbox != "off" {
		// The other names of the hidden files are said at start, with the
		// sandbox's own line (after the probes, which wait for the
		// client's first answers).
		go func() {
			<-begin.Done()
			if ok, _ := contain.Sandboxed(); ok {
				hidden()
			}
		}()
	}
	progs.Contain = contain
	return progs, contain, nil
}

// What a hidden file is, in the messages about its other names.
const (
	whatCredentials = "credentials file"
	whatKey         = "key file"
	whatHidden      = "file hidden from programs"
)

// linkCheck says in the log, once per file and number of names, that a
// hidden file has other names (hard links) than the one the sandbox
// covers: a program can read it, or write it, through them. It is asked at
// start and each time the hidden paths are (every program start, and each
// second while a program runs: a reload may name another key).
type linkCheck struct {
	log *slog.Logger

	mu   sync.Mutex
	said map[linkKey]bool
}

type linkKey struct {
	dev, ino, links uint64
	path            string
}

// check logs a warning when the regular file at path (symbolic links
// followed, as the cover follows them) has more than one name.
func (lc *linkCheck) check(path, what string) {
	var st syscall.Stat_t
	if path == "" || syscall.Stat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink <= 1 {
		return
	}
	k := linkKey{dev: uint64(st.Dev), ino: st.Ino, links: uint64(st.Nlink), path: path}
	lc.mu.Lock()
	if lc.said == nil {
		lc.said = map[linkKey]bool{}
	}
	said := lc.said[k]
	lc.said[k] = true
	lc.mu.Unlock()
	if said {
		return
	}
	lc.log.Warn("sandbox: a file hidden from programs has other names (hard links), through which programs can still read and change it; remove the other names (find -xdev -samefile FILE, run from the mount point of its file system, lists them)",
		"file", path, "what", what, "names", st.Nlink)
}

// fileLinks is the number of names of the regular file at path (symbolic
// links followed), or 0.
func fileLinks(path string) uint64 {
	var st syscall.Stat_t
	if path == "" || syscall.Stat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0
	}
	return uint64(st.Nlink)
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
