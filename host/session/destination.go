package session

import (
	"net"
	"net/netip"

	"github.com/termhost/termhost/host/link/pty"
)

// Destination is where what is typed into a session goes right now: the
// host and port it was opened to and the address it is connected to
// (Telnet, SSH), or the programs reading its terminal (a local PTY). A
// secret's gate (SendSecret) decides from it.
type Destination struct {
	Kind   Kind
	Host   string     // as it was dialed: a name or an address
	Port   int        //
	Remote netip.Addr // the connected peer's address, when known
	// Foreground: the PTY's foreground programs and any outside reader
	// (pty.Foreground); FgErr says why they could not be told.
	Foreground *pty.Foreground
	FgErr      error
}

// foregrounder is a link that can say who reads its terminal (a PTY).
type foregrounder interface {
	Foreground() (pty.Foreground, error)
}

// Destination reports where input to the session goes now.
func (s *Session) Destination() Destination {
	d := Destination{Kind: s.Kind, Host: s.Peer.Host, Port: s.Peer.Port}
	if ra, ok := s.link.(interface{ RemoteAddr() net.Addr }); ok {
		if ta, ok := ra.RemoteAddr().(*net.TCPAddr); ok {
			if a, ok := netip.AddrFromSlice(ta.IP); ok {
				d.Remote = a.Unmap()
			}
		}
	}
	if f, ok := s.link.(foregrounder); ok {
		fg, err := f.Foreground()
		if err != nil {
			d.FgErr = err
		} else {
			d.Foreground = &fg
		}
	}
	return d
}
