package session

import (
	"net"
	"net/netip"

	"github.com/termhost/termhost/host/link"
)

// Destination is where what is typed into a session goes right now: the
// host and port it was opened to and the address it is connected to
// (Telnet, SSH), or the programs reading its terminal (a local PTY). A
// secret's gate (host/device's Gate) decides from it.
type Destination struct {
	Kind   Kind
	Host   string     // as it was dialed: a name or an address
	Port   int        //
	Remote netip.Addr // the connected peer's address, when known
	// Foreground: the PTY's foreground programs and any outside reader
	// (link.Foreground); FgErr says why they could not be told.
	Foreground *link.Foreground
	FgErr      error
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
	if f, ok := s.link.(link.Foregrounder); ok {
		fg, err := f.Foreground()
		if err != nil {
			d.FgErr = err
		} else {
			d.Foreground = &fg
		}
	}
	return d
}
