package session

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// TelnetOptions open a Telnet session.
type TelnetOptions struct {
	Host    string
	Port    int
	Timeout time.Duration // connect timeout
	Name    string
	Owner   string
	Term    string   // TTYPE answer, default xterm-256color
	Cols    int      // NAWS, default 80
	Rows    int      // NAWS, default 24
	Plugins []string // chain after "telnet" (e.g. a dialect)
}

// OpenTelnet connects, attaches the telnet plugin (and any others), and
// starts the session.
func (r *Registry) OpenTelnet(ctx context.Context, attach Attacher, o TelnetOptions) (*Session, error) {
	release, err := r.reserve(o.Name)
	if err != nil {
		return nil, err
	}
	defer release()
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	if o.Cols <= 0 {
		o.Cols = 80
	}
	if o.Rows <= 0 {
		o.Rows = 24
	}
	opts, _ := json.Marshal(map[string]any{"term": o.Term, "cols": o.Cols, "rows": o.Rows})
	chain, err := attachChain(attach, abi.KindTelnet, append([]string{"telnet"}, o.Plugins...), opts)
	if err != nil {
		return nil, err
	}
	conn, err := link.DialTCP(ctx, o.Host, o.Port, o.Timeout)
	if err != nil {
		closeChain(chain)
		return nil, err
	}
	s := newSession(r.cfg, KindTelnet, conn, chain)
	s.Name, s.Owner, s.Host, s.Port = o.Name, o.Owner, o.Host, o.Port
	s.cols, s.rows = o.Cols, o.Rows
	if err := r.opened(ctx, s); err != nil {
		conn.Close()
		closeChain(chain)
		return nil, err
	}
	return s, nil
}

func attachChain(attach Attacher, kind abi.Kind, names []string, opts []byte) ([]Binding, error) {
	var chain []Binding
	for _, n := range names {
		b, err := attach(n, kind, opts)
		if err != nil {
			closeChain(chain)
			return nil, fmt.Errorf("plugin %q: %w", n, err)
		}
		chain = append(chain, b)
	}
	return chain, nil
}

func closeChain(chain []Binding) {
	for _, b := range chain {
		b.Close()
	}
}

// Interrupt sends the kind's interrupt: for Telnet IAC IP ("interrupt"),
// IAC BRK ("break") or IAC AYT ("ayt").
func (s *Session) Interrupt(ctx context.Context, what string) error {
	req, _ := json.Marshal(map[string]string{"op": what})
	_, err := s.Control(ctx, req, false)
	return err
}

// Resize changes the session's screen size and tells the plugins (Telnet
// re-sends NAWS).
func (s *Session) Resize(ctx context.Context, cols, rows int) error {
	s.mu.Lock()
	s.cols, s.rows = cols, rows
	s.mu.Unlock()
	req, _ := json.Marshal(map[string]any{"op": "resize", "cols": cols, "rows": rows})
	_, err := s.Control(ctx, req, true)
	return err
}
