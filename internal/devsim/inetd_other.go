//go:build !unix

package devsim

import "errors"

// Inetd is a minimal inetd for interoperability tests; it needs a Unix
// system (process groups, passing sockets as stdin/stdout).
type Inetd struct{}

// ListenInetd is not supported on this platform.
func ListenInetd(addr string, argv []string, env []string) (*Inetd, error) {
	return nil, errors.New("devsim: ListenInetd needs a Unix system")
}

// Addr returns "".
func (d *Inetd) Addr() string { return "" }

// PIDs returns nil.
func (d *Inetd) PIDs() []int { return nil }

// Running returns nil.
func (d *Inetd) Running() []int { return nil }

// Log returns "".
func (d *Inetd) Log() string { return "" }

// Close does nothing.
func (d *Inetd) Close() error { return nil }
