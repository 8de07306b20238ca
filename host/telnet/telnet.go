package session

import (
	"context"
	"encoding/json"
	"slices"
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
	// Dialect attaches the dialect plugin after telnet: a dialect name, or
	// "auto" to detect it ("" or NoDialect for none).
	Dialect string
	// Addr, if set, is the address dialed instead of resolving Host: the
	// one of Host's addresses a credential's networks allow (TRUST-1).
	Addr string
}

// OpenTelnet opens a Telnet session: a TCP link, the telnet plugin first in
// the chain.
func (r *Registry) OpenTelnet(ctx context.Context, attach Attacher, o TelnetOptions) (*Session, error) {
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	o.Cols, o.Rows = orDefault(o.Cols, 80), orDefault(o.Rows, 24)
	om := map[string]any{"term": o.Term, "cols": o.Cols, "rows": o.Rows}
	plugins := withDialect(append([]string{"telnet"}, o.Plugins...), o.Dialect, om)
	opts, _ := json.Marshal(om)
	return r.Open(ctx, attach, Spec{
		Kind: KindTelnet, Name: o.Name, Owner: o.Owner,
		Peer: Peer{Host: link.UnbracketHost(o.Host), Port: o.Port},
		Cols: o.Cols, Rows: o.Rows, Options: opts,
		Plugins: plugins, Screen: o.Screen,
		Dial: func(ctx context.Context) (link.Link, error) {
			if o.Addr != "" {
				return link.DialTCP(ctx, o.Addr, o.Port, o.Timeout)
			}
			return link.DialTCP(ctx, o.Host, o.Port, o.Timeout)
		},
	})
}

// DialectPlugin is the plugin that knows device dialects.
const DialectPlugin = "dialect"

// Dialects a session may ask for besides a name (withDialect).
const (
	// NoDialect leaves the dialect plugin out (a Telnet service that is
	// no device).
	NoDialect = "none"
	// AutoDialect detects the dialect; its pagers are answered whatever
	// sent the command.
	AutoDialect = "auto"
	// DetectDialect, the default of device sessions, detects the dialect
	// and answers pagers only for run_command's commands: a line sent raw
	// (telnet_send, send_keys) gets the device's pagers as they come.
	DetectDialect = "detect"
)

// withDialect adds the dialect plugin to a chain when a dialect is asked
// for ("auto" detects it; a name goes to the plugins' options), once: a
// chain that names it already keeps it where it is.
func withDialect(chain []string, dialect string, opts map[string]any) []string {
	switch dialect {
	case "", NoDialect:
		return chain
	case DetectDialect:
		opts["commandPagers"] = true
	case AutoDialect:
	default:
		opts["dialect"] = dialect
	}
	if slices.Contains(chain, DialectPlugin) {
		return chain
	}
	return append(chain, DialectPlugin)
}

// orDefault is v, or def when v is not positive.
func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
