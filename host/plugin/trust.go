package plugin

import (
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
)

// Trust.
//
// A version is trusted when its bytes are the first-party plugin embedded
// in the binary, or when the user pinned its name and sha256 in
// configuration (Config.Pins, from flags the agent cannot write). Only a
// trusted version has its host calls answered (the ssh plugin's password,
// signatures and host-key verdicts): which plugin is calling is told by
// the version that runs the call, never by the name it claims.
//
// A name is pinned when it is a first-party name (the embedded set) or has
// a pin: a file carrying such a name loads only if its sha256 is pinned
// for that name, so every version of a trusted name is trusted, and a
// session never moves (migration, fail-over) from a trusted version to an
// untrusted one. A file with a new, unpinned name loads, untrusted: its
// host calls are refused, and Binding.Trusted tells the session side not
// to type secrets into a chain that holds it.

// PinFlag is how a pin is given on termhost's command line; messages that
// tell the user how to allow a file name it.
const PinFlag = "--plugin-pin"

// ParsePin reads one pin, "NAME=SHA256" (64 hex digits, any case). The
// sha256 comes back in lower case.
func ParsePin(s string) (name, sha string, err error) {
	name, sha, ok := strings.Cut(strings.TrimSpace(s), "=")
	name, sha = strings.TrimSpace(name), strings.ToLower(strings.TrimSpace(sha))
	if !ok || name == "" {
		return "", "", fmt.Errorf("plugin pin %q: expected NAME=SHA256 (the plugin's manifest name and the sha256 of its file)", s)
	}
	if b, err := hex.DecodeString(sha); err != nil || len(b) != 32 {
		return "", "", fmt.Errorf("plugin pin %q: the sha256 must be 64 hex digits (as sha256sum prints it), got %d characters", s, len(sha))
	}
	return name, sha, nil
}

// needsPin says whether a file carrying name loads only when pinned: a
// first-party name, or one the user pinned.
func (r *Registry) needsPin(name string) bool {
	if len(r.cfg.Pins[name]) > 0 {
		return true
	}
	p := r.lookup(name)
	return p != nil && p.embedded != nil
}

// pinned says whether the user pinned these bytes under this name.
func (r *Registry) pinned(name, sha string) bool {
	return slices.Contains(r.cfg.Pins[name], sha)
}

// UnpinnedError refuses a plugin file that carries a pinned name (a
// first-party one, or one the user pinned) without a matching pin.
type UnpinnedError struct {
	Name, SHA256 string
	FirstParty   bool // the name is a first-party plugin's
	Pins         int  // pins given for the name
}

func (e *UnpinnedError) Error() string {
	what := fmt.Sprintf("it carries the name %q of a first-party plugin, which sees typed secrets, and replacing one needs a pin", e.Name)
	if !e.FirstParty {
		what = fmt.Sprintf("the name %q is pinned", e.Name)
	}
	if e.Pins > 0 {
		what += fmt.Sprintf(", but its sha256 matches none of the %d pin(s) given for it", e.Pins)
	}
	return fmt.Sprintf("%s; its sha256 is %s: if you built this file, allow it by starting termhost with %s %s=%s",
		what, e.SHA256, PinFlag, e.Name, e.SHA256)
}

// checkPin refuses src if its name needs a pin that it does not have.
func (r *Registry) checkPin(src *source) error {
	if src.origin == "embedded" {
		return nil
	}
	name := src.man.Name
	if !r.needsPin(name) || r.pinned(name, src.sha) {
		return nil
	}
	p := r.lookup(name)
	return &UnpinnedError{Name: name, SHA256: src.sha, FirstParty: p != nil && p.embedded != nil, Pins: len(r.cfg.Pins[name])}
}

// trustedSource says whether a version built from src with these bytes
// (sha) is trusted.
func (r *Registry) trustedSource(src *source, sha string) bool {
	return src.origin == "embedded" || r.pinned(src.man.Name, sha)
}

// Trusted says whether the session's plugin is first-party or pinned: the
// version it runs now, and the version it would move to at its next call.
// A secret must not be typed into a session whose chain holds a binding
// that is not trusted (it sees every byte typed).
func (b *Binding) Trusted() bool {
	v := b.ver.Load()
	if v == nil || !v.trusted {
		return false
	}
	cur := b.p.current.Load()
	return cur == nil || cur.trusted
}

// Trusted says whether plugin name's current version is first-party or
// pinned.
func (r *Registry) Trusted(name string) bool {
	r.readyFor(name)
	v := r.current(name)
	return v != nil && v.trusted
}

// errUntrustedHostCall refuses a host call from a version that is not
// trusted.
func (v *version) errUntrustedHostCall() error {
	return fmt.Errorf("host calls are answered only for first-party plugins and ones pinned with %s; plugin %s %s (%s, sha256 %s) is neither",
		PinFlag, v.man.Name, v.man.Version, v.src.origin, short(v.sha))
}

// WritableError refuses a plugin file or directory that someone other than
// its owner (or an owner other than this user or root) may write: whoever
// can write there can replace a plugin.
type WritableError struct {
	Path  string
	Dir   bool
	Mode  os.FileMode
	Owner int // uid, or -1 when the owner is fine
}

func (e *WritableError) Error() string {
	what := "plugin file"
	if e.Dir {
		what = "plugin directory"
	}
	if e.Owner >= 0 {
		return fmt.Sprintf("%s %s is owned by uid %d, neither this user (uid %d) nor root; whoever owns it can replace a plugin, so termhost refuses it: run `chown %d %s`",
			what, e.Path, e.Owner, os.Geteuid(), os.Geteuid(), e.Path)
	}
	return fmt.Sprintf("%s %s is writable by group or others (mode %04o); anyone who can write it can replace a plugin, so termhost refuses it: run `chmod go-w %s`",
		what, e.Path, e.Mode.Perm(), e.Path)
}

// checkWritable refuses st (of path, as fstat saw it on an open
// descriptor) if group or others may write it, or it belongs to another
// user than this one or root.
func checkWritable(path string, st os.FileInfo) error {
	if st.Mode().Perm()&0o022 != 0 {
		return &WritableError{Path: path, Dir: st.IsDir(), Mode: st.Mode(), Owner: -1}
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if uid := int(sys.Uid); uid != 0 && uid != os.Geteuid() {
			return &WritableError{Path: path, Dir: st.IsDir(), Mode: st.Mode(), Owner: uid}
		}
	}
	return nil
}

// checkDir checks the plugin directory on an open descriptor: a directory
// others may write is not loaded from.
func checkDir(dir string) error {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("plugin directory: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("plugin directory: %w", err)
	}
	return checkWritable(dir, st)
}
