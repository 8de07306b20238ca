// Package pty starts local programs as sessions: a PTY link
// (host/link/pty), shells with the agent-safe environment and the
// shell-integration marks of SPEC PTY-4, and a restart under the same id.
package pty

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/termhost/termhost/host/link"
	ptylink "github.com/termhost/termhost/host/link/pty"
	"github.com/termhost/termhost/host/link/pty/shell"
	"github.com/termhost/termhost/host/session"
)

// Options start a local program under a pseudo-terminal.
type Options struct {
	ID      string // a restart keeps the session's id
	Command string
	Args    []string
	Dir     string
	Env     map[string]string // on top of the server's environment; wins over the defaults
	Cols    int
	Rows    int
	Name    string
	Owner   string
	Plugins []string // chain (e.g. a dialect); the registry adds its shell plugin for integrated shells
	// Dialect chains the dialect plugin (a name, or "auto"), e.g. frr for
	// vtysh.
	Dialect string
	// Record records the session from its start (session.Spec.Record).
	Record bool
	// Stages, if set, makes the session's filters besides its chain
	// (session.Spec.Stages: the command rules' checks of what is typed),
	// fresh at each start: a restart gets its own.
	Stages func() []session.Stage
}

// Programs is what every PTY program starts with and inside. The zero
// value starts programs directly with termhost's whole environment (tests
// of this package); host fills it for termhost.
type Programs struct {
	// Contain starts programs under containment (nil: directly).
	Contain *ptylink.Containment
	// Environ is the environment programs start from: termhost's own
	// without its configuration and secrets (nil: os.Environ()).
	Environ func() []string
	// Secrets are termhost's own secret values (by the variable that held
	// each): the caller's env may not hand them to a program either.
	Secrets map[string]string
}

// ErrSecretEnv: the caller's env would give a program one of termhost's
// own secrets.
var ErrSecretEnv = errors.New("the value is one of termhost's own secrets; programs never get them")

// checkEnv refuses a caller's variable whose value holds one of
// termhost's secrets. Only the variable's name is in the error.
func (p Programs) checkEnv(env map[string]string) error {
	for k, v := range env {
		for _, secret := range p.Secrets {
			if secret == "" {
				continue
			}
			if v == secret || (len(secret) >= 4 && strings.Contains(v, secret)) {
				return fmt.Errorf("variable %q: %w", k, ErrSecretEnv)
			}
		}
	}
	return nil
}

// Open starts a program under a PTY, as progs say: the PTY is the link;
// shells (bash, zsh) get the agent-safe environment and the
// shell-integration marks of SPEC PTY-4, read by the registry's shell
// plugin.
func Open(ctx context.Context, r *session.Registry, attach session.Attacher, progs Programs, o Options) (*session.Session, error) {
	o.Cols, o.Rows = session.DefaultSize(o.Cols, o.Rows)
	if err := progs.checkEnv(o.Env); err != nil {
		return nil, err
	}
	base := os.Environ
	if progs.Environ != nil {
		base = progs.Environ
	}
	env := mergeEnv(base(), o.Env)
	overrides := make(map[string]bool, len(o.Env))
	for k := range o.Env {
		overrides[k] = true
	}
	prep, err := shell.Prepare(o.Command, o.Args, env, overrides)
	if err != nil {
		return nil, err
	}
	cleanup := prep.Cleanup
	if cleanup == nil {
		cleanup = func() {}
	}
	opts, _ := json.Marshal(map[string]any{"cols": o.Cols, "rows": o.Rows})
	cmdline := strings.Join(append([]string{o.Command}, o.Args...), " ")
	var stages []session.Stage
	if o.Stages != nil {
		stages = o.Stages()
	}
	s, err := r.Open(ctx, attach, session.Spec{
		ID: o.ID, Kind: session.KindPTY, Name: o.Name, Owner: o.Owner,
		Peer: session.Peer{Command: cmdline},
		Cols: o.Cols, Rows: o.Rows, Options: opts,
		Plugins: o.Plugins, Screen: true, ShellMarks: prep.Integrated, Dialect: o.Dialect, Record: o.Record,
		Stages: stages,
		Reopen: func(ctx context.Context, id string) (*session.Session, error) {
			o := o
			o.ID = id
			return Open(ctx, r, attach, progs, o)
		},
		Dial: func(context.Context) (link.Link, error) {
			return ptylink.Start(ptylink.Config{
				Command: prep.Command, Args: prep.Args, Dir: o.Dir, Env: prep.Env,
				Cols: o.Cols, Rows: o.Rows, Contain: progs.Contain,
			})
		},
	})
	if err != nil {
		cleanup()
		return nil, err
	}
	go func() {
		<-s.Released()
		cleanup()
	}()
	return s, nil
}

// A program that cannot be found or run, and a working directory that is
// not one, are the caller's input (link/pty's words).
var (
	ErrNoProgram = ptylink.ErrNoProgram
	ErrBadDir    = ptylink.ErrBadDir
)

// mergeEnv returns base with the overrides set (sorted, one entry per
// name).
func mergeEnv(base []string, set map[string]string) []string {
	m := make(map[string]string, len(base)+len(set))
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	for k, v := range set {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
