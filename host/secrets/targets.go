package secrets

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Default ports of the kinds a credential is used with, for a credential
// or a "hosts" entry that names no port.
const (
	TelnetPort = 23
	SSHPort    = 22
)

// Bounds of the lists a credential may carry.
const (
	maxTargets  = 256
	maxPrograms = 32
)

// target is one place a credential may be used (SPEC TRUST-1): a host
// name (matched by name, case-insensitively; "*" stands for the
// characters of one label), or an address or network (matched against
// the address actually connected to). Port 0: the credential's own port,
// or the kind's default when the credential names none.
type target struct {
	name   string // lower case; "" for an address
	prefix netip.Prefix
	port   int
}

func (t target) String(port int) string {
	if t.port != 0 {
		port = t.port
	}
	if t.name != "" {
		return net.JoinHostPort(t.name, strconv.Itoa(port))
	}
	if t.prefix.IsSingleIP() {
		return net.JoinHostPort(t.prefix.Addr().String(), strconv.Itoa(port))
	}
	if t.prefix.Addr().Is6() {
		return "[" + t.prefix.String() + "]:" + strconv.Itoa(port)
	}
	return t.prefix.String() + ":" + strconv.Itoa(port)
}

// parseTarget reads one "hosts" entry: host, host:port, a.b.c.d,
// a.b.c.d/nn, a.b.c.d/nn:port, an IPv6 address or network (with a port,
// in brackets: [2001:db8::1]:23, [2001:db8::/32]:22), or a name with "*"
// in a label (sw*.lab, *.lab:2323).
func parseTarget(s string) (target, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return target{}, errors.New("an empty entry (expected host, host:port or a network such as 10.0.0.0/24)")
	}
	if strings.ContainsAny(s, " \t\r\n\x00") {
		return target{}, fmt.Errorf("%q holds a space or control character", s)
	}
	host, port := s, 0
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 {
			return target{}, fmt.Errorf("%q: a [ without ]", s)
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return target{}, fmt.Errorf("%q: expected :port after ]", s)
			}
			p, err := parsePort(rest[1:])
			if err != nil {
				return target{}, fmt.Errorf("%q: %w", s, err)
			}
			port = p
		}
	case strings.Count(s, ":") == 1:
		h, p, _ := strings.Cut(s, ":")
		n, err := parsePort(p)
		if err != nil {
			return target{}, fmt.Errorf("%q: %w", s, err)
		}
		host, port = h, n
	}
	if host == "" {
		return target{}, fmt.Errorf("%q: no host", s)
	}
	if strings.Contains(host, "/") {
		pf, err := netip.ParsePrefix(host)
		if err != nil {
			return target{}, fmt.Errorf("%q: not a network (expected e.g. 10.0.0.0/24 or [2001:db8::/32])", s)
		}
		return target{prefix: pf.Masked(), port: port}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return target{prefix: netip.PrefixFrom(a, a.BitLen()), port: port}, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.Contains(name, ":") {
		return target{}, fmt.Errorf("%q: an IPv6 address with a port goes in brackets ([2001:db8::1]:23)", s)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return target{}, fmt.Errorf("%q: an empty label in the host name", s)
		}
		if _, err := path.Match(label, ""); err != nil || strings.ContainsAny(label, "[]?\\") {
			return target{}, fmt.Errorf("%q: only * may be a wildcard in a host name", s)
		}
	}
	return target{name: name, port: port}, nil
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not between 1 and 65535", p)
	}
	return n, nil
}

// matchName reports whether a host name matches a target's name: the same
// labels, "*" matching within one label only (sw*.lab matches sw1.lab, not
// sw1.evil.lab).
func matchName(pattern, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !strings.Contains(pattern, "*") {
		return pattern == host
	}
	pl, hl := strings.Split(pattern, "."), strings.Split(host, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if ok, _ := path.Match(pl[i], hl[i]); !ok {
			return false
		}
	}
	return true
}

// Dest is where a secret would go or a connection would be made: the host
// as it was asked for (a name or an address), its port, and the address
// actually connected to when known.
type Dest struct {
	Host   string
	Port   int
	Remote netip.Addr // the peer's address (zero: not connected yet)
}

func (d Dest) String() string {
	s := net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	if d.Remote.IsValid() && d.Remote.String() != d.Host {
		s += " (" + d.Remote.String() + ")"
	}
	return s
}

// targets yields the credential's own host and port, then its "hosts"
// (without copying them, for every check).
func (c Credential) targets(yield func(target) bool) {
	own, err := parseTarget(c.Host)
	if err != nil {
		own = target{name: strings.ToLower(c.Host)}
	}
	own.port = c.Port
	if !c.portGiven {
		own.port = 0
	}
	if !yield(own) {
		return
	}
	for _, t := range c.hosts {
		if !yield(t) {
			return
		}
	}
}

// Allows reports whether the credential may be used for d, with defPort the
// port of the kind in use (TelnetPort, SSHPort) for entries that name
// none: d's host matches a name entry by name, or the address it is (an
// address literal) or was connected to (d.Remote) falls in an address or
// network entry, on the entry's port.
func (c Credential) Allows(d Dest, defPort int) bool {
	host := strings.TrimSuffix(strings.Trim(d.Host, "[]"), ".")
	lit, litErr := netip.ParseAddr(host)
	for t := range c.targets {
		if t.portFor(c, defPort) != d.Port {
			continue
		}
		if t.name != "" {
			if litErr != nil && matchName(t.name, host) {
				return true
			}
			continue
		}
		if litErr == nil && t.prefix.Contains(lit.Unmap()) {
			return true
		}
		if d.Remote.IsValid() && t.prefix.Contains(d.Remote.Unmap()) {
			return true
		}
	}
	return false
}

// AllowsAddr reports whether an address (one a host name resolved to) on
// port falls in one of the credential's address or network entries: what
// a connection to that name may dial.
func (c Credential) AllowsAddr(a netip.Addr, port, defPort int) bool {
	for t := range c.targets {
		if t.name == "" && t.portFor(c, defPort) == port && t.prefix.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// HasNetworks reports whether the credential names any address or network
// (a host name must then be resolved to be checked).
func (c Credential) HasNetworks() bool {
	for t := range c.targets {
		if t.name == "" {
			return true
		}
	}
	return false
}

func (t target) portFor(c Credential, defPort int) int {
	if t.port != 0 {
		return t.port
	}
	return c.PortOr(defPort)
}

// TargetsString names where the credential may be used, for errors: its
// own host:port and its "hosts".
func (c Credential) TargetsString(defPort int) string {
	parts := make([]string, 0, 1+len(c.hosts))
	for t := range c.targets {
		parts = append(parts, t.String(t.portFor(c, defPort)))
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("and %d more in its \"hosts\"", len(parts)-6))
	}
	return strings.Join(parts, ", ")
}

// AllowsProgram reports whether exe (the resolved path of a running
// program, /proc/<pid>/exe) is one of the credential's programs. A name is
// looked up in PATH now and every path resolved through its symbolic
// links, so a copy of a program elsewhere (cp /bin/cat /tmp/sudo) is not
// the program.
func (c Credential) AllowsProgram(exe string) bool {
	if exe == "" {
		return false
	}
	for _, p := range c.programs {
		if ResolveProgram(p) == exe {
			return true
		}
	}
	return false
}

// ResolveProgram is the real path of a program named by name (looked up
// in PATH) or path, or "" when there is none: what /proc/<pid>/exe of a
// running copy of it says.
func ResolveProgram(p string) string {
	full := p
	if !strings.Contains(p, "/") {
		lp, err := exec.LookPath(p)
		if err != nil {
			return ""
		}
		full = lp
	}
	if !filepath.IsAbs(full) {
		abs, err := filepath.Abs(full)
		if err != nil {
			return ""
		}
		full = abs
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return ""
	}
	return real
}

// setTargets checks and keeps a credential's "hosts" and "programs".
func (c *Credential) setTargets(hosts, programs []string) error {
	if len(hosts) > maxTargets {
		return fmt.Errorf("hosts: %d entries, at most %d", len(hosts), maxTargets)
	}
	for i, h := range hosts {
		t, err := parseTarget(h)
		if err != nil {
			return fmt.Errorf("hosts[%d]: %w", i, err)
		}
		c.hosts = append(c.hosts, t)
	}
	if len(programs) > maxPrograms {
		return fmt.Errorf("programs: %d entries, at most %d", len(programs), maxPrograms)
	}
	for i, p := range programs {
		switch {
		case strings.TrimSpace(p) == "" || strings.ContainsAny(p, "\x00\r\n"):
			return fmt.Errorf("programs[%d]: expected a program name (sudo) or an absolute path (/usr/bin/ssh)", i)
		case strings.Contains(p, "/") && !filepath.IsAbs(p):
			return fmt.Errorf("programs[%d]: %q is a relative path (expected a name looked up in PATH, or an absolute path)", i, p)
		}
		c.programs = append(c.programs, p)
	}
	c.Hosts, c.Programs = append([]string(nil), hosts...), append([]string(nil), programs...)
	return nil
}
