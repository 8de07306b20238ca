package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/termhost/termhost/host/link"
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
	Screen  string   // the screen plugin ("" for none)
}

// OpenTelnet opens a Telnet session: a TCP link, the telnet plugin first in
// the chain.
func (r *Registry) OpenTelnet(ctx context.Context, attach Attacher, o TelnetOptions) (*Session, error) {
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	o.Cols, o.Rows = orDefault(o.Cols, 80), orDefault(o.Rows, 24)
	opts, _ := json.Marshal(map[string]any{"term": o.Term, "cols": o.Cols, "rows": o.Rows})
	return r.Open(ctx, attach, Spec{
		Kind: KindTelnet, Name: o.Name, Owner: o.Owner,
		Peer: Peer{Host: link.UnbracketHost(o.Host), Port: o.Port},
		Cols: o.Cols, Rows: o.Rows, Options: opts,
		Plugins: append([]string{"telnet"}, o.Plugins...), Screen: o.Screen,
		Dial: func(ctx context.Context) (link.Link, error) {
			return link.DialTCP(ctx, o.Host, o.Port, o.Timeout)
		},
	})
}

// orDefault is v, or def when v is not positive.
func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
