package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/pty"
	"github.com/termhost/termhost/host/session"
)

// Bounds of the process-starting tools' arguments.
const (
	maxCommandLine = 4096
	maxArgs        = 256
	maxArgLen      = 4096
	maxEnv         = 256
	maxEnvValue    = 32 << 10
	maxPathLen     = 4096
)

type launchIn struct {
	Command string            `json:"command" jsonschema:"program to run (found on PATH)"`
	Args    []string          `json:"args,omitempty" jsonschema:"its arguments"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"environment variables to set"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working directory"`
	Cols    int               `json:"cols,omitempty" jsonschema:"columns (default 80)"`
	Rows    int               `json:"rows,omitempty" jsonschema:"rows (default 24)"`
	Name    string            `json:"name,omitempty" jsonschema:"unique name"`
	Dialect string            `json:"dialect,omitempty" jsonschema:"device dialect or auto"`
	Record  bool              `json:"record,omitempty"`
}

func processBounds(p schemaProps) {
	p["command"].MaxLength = ptr(maxCommandLine)
	if a := p["args"]; a != nil {
		a.MaxItems = ptr(maxArgs)
		a.Items.MaxLength = ptr(maxArgLen)
	}
	p["env"].MaxProperties = ptr(maxEnv)
	p["env"].AdditionalProperties.MaxLength = ptr(maxEnvValue)
	p["cwd"].MaxLength = ptr(maxPathLen)
	p["cols"].Minimum, p["cols"].Maximum = ptr(1.0), ptr(float64(maxScreenDim))
	p["rows"].Minimum, p["rows"].Maximum = ptr(1.0), ptr(float64(maxScreenDim))
	if n := p["name"]; n != nil {
		n.MaxLength = ptr(session.MaxNameLen)
	}
	if d := p["dialect"]; d != nil {
		d.MaxLength = ptr(maxPluginName)
	}
}

// startProcess opens a PTY session for a tool (launch_app, start_pty).
func (s *Server) startProcess(ctx context.Context, req *sdk.CallToolRequest, cmdField, command string, args []string, env map[string]string, cwd string, cols, rows int, name, dialect string, record bool) (*session.Session, error) {
	if strings.TrimSpace(command) == "" {
		return nil, invalid(cmdField, "must name a program, got an empty string")
	}
	if strings.ContainsRune(command, 0) {
		return nil, invalid(cmdField, "must not contain NUL")
	}
	for i, a := range args {
		if strings.ContainsRune(a, 0) {
			return nil, invalid(fmt.Sprintf("args[%d]", i), "must not contain NUL")
		}
	}
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, invalid("env", "variable %q: names are non-empty without '=' or NUL, values without NUL", clip(k))
		}
	}
	if name != "" {
		if err := session.ValidName(name); err != nil {
			return nil, invalid("name", "%v", strings.TrimPrefix(err.Error(), session.ErrInvalidName.Error()+": "))
		}
	}
	// The program a session starts is a command the agent runs.
	if err := s.checkProgram(program{command: command, args: args, env: env}); err != nil {
		return nil, invalid(cmdField, "%v", err)
	}
	sess, err := pty.Open(ctx, s.deps.Sessions, s.deps.Attach, s.deps.Programs, pty.Options{
		Command: command, Args: args, Env: env, Dir: cwd, Cols: cols, Rows: rows, Name: name,
		Owner: owner(req), Dialect: dialect, Record: record,
		Stages: func() []session.Stage { return s.ruleStages(session.KindPTY) },
	})
	switch {
	case errors.Is(err, pty.ErrSecretEnv):
		return nil, invalid("env", "%v", err)
	case errors.Is(err, pty.ErrNoProgram):
		return nil, invalid(cmdField, "%v", err)
	case errors.Is(err, pty.ErrBadDir):
		return nil, invalid("cwd", "%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", clip(command), err)
	}
	sess.SetValue(programKey{}, program{command: command, args: args, env: env})
	return sess, nil
}

func (s *Server) launchApp(ctx context.Context, req *sdk.CallToolRequest, in launchIn) (any, error) {
	sess, err := s.startProcess(ctx, req, "command", in.Command, in.Args, in.Env, in.Cwd, in.Cols, in.Rows, in.Name, in.Dialect, in.Record)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"session_id": sess.ID, "success": true}
	if sess.Name != "" {
		out["name"] = sess.Name
	}
	return withRecording(out, sess), nil
}
