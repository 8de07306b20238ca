// Package telnet opens Telnet sessions: a TCP link with the telnet
// plugin first in the chain; the session engine does the rest.
package telnet

import (
	"context"
	"encoding/json"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
)

// Options open a Telnet session.
type Options struct {
	Host    string
	Port    int
	Timeout time.Duration // connect timeout
	Name    string
	Owner   string
	Term    string   // TTYPE answer, default xterm-256color
	Cols    int      // NAWS, default 80
	Rows    int      // NAWS, default 24
	Plugins []string // chain after "telnet" (e.g. a dialect)
	// Dialect attaches the dialect plugin after telnet: a dialect name, or
	// "auto" to detect it ("" or NoDialect for none; session.Spec.Dialect).
	Dialect string
	// Addr, if set, is the address dialed instead of resolving Host: the
	// one of Host's addresses a credential's networks allow (TRUST-1).
	Addr string
	// Record records the session from its start (session.Spec.Record).
	Record bool
	// Stages are the session's filters besides its chain
	// (session.Spec.Stages): the command rules' checks of what is typed.
	Stages []session.Stage
}

// Plugin is the telnet plugin, first in the chain of every Telnet session.
const Plugin = "telnet"

// Open opens a Telnet session: a TCP link, the telnet plugin first in
// the chain, and the registry's screen.
func Open(ctx context.Context, r *session.Registry, attach session.Attacher, o Options) (*session.Session, error) {
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	o.Cols, o.Rows = session.DefaultSize(o.Cols, o.Rows)
	opts, _ := json.Marshal(map[string]any{"term": o.Term, "cols": o.Cols, "rows": o.Rows})
	return r.Open(ctx, attach, session.Spec{
		Kind: session.KindTelnet, Name: o.Name, Owner: o.Owner,
		Peer: session.Peer{Host: link.UnbracketHost(o.Host), Port: o.Port},
		Cols: o.Cols, Rows: o.Rows, Options: opts,
		Plugins: append([]string{Plugin}, o.Plugins...), Screen: true, Dialect: o.Dialect, Record: o.Record,
		Stages: o.Stages,
		Dial: func(ctx context.Context) (link.Link, error) {
			if o.Addr != "" {
				return link.DialTCP(ctx, o.Addr, o.Port, o.Timeout)
			}
			return link.DialTCP(ctx, o.Host, o.Port, o.Timeout)
		},
	})
}
