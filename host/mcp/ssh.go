package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/host/ssh"
)

// SSH is what the ssh tool group acts on.
type SSH struct {
	Pool  *ssh.Pool
	Creds *secrets.Store
}

type sshExecIn struct {
	CredentialID string `json:"credentialId" jsonschema:"credential id"`
	Command      string `json:"command" jsonschema:"command line"`
	SessionMode  string `json:"sessionMode,omitempty" jsonschema:"persistent keeps connection, cwd and variables"`
	SessionID    string `json:"sessionId,omitempty" jsonschema:"persistent session to use"`
	TimeoutMs    int    `json:"timeoutMs,omitempty" jsonschema:"then kill it on the server (default 60000)"`
	MaxBytes     int    `json:"maxBytes,omitempty" jsonschema:"per stream (default 65536)"`
}

type sshInfoIn struct {
	CredentialID string `json:"credentialId,omitempty" jsonschema:"filter by credential"`
}

type sshShellIn struct {
	CredentialID string `json:"credentialId" jsonschema:"credential id"`
	Name         string `json:"name,omitempty" jsonschema:"unique name"`
	Cols         int    `json:"cols,omitempty" jsonschema:"default 80"`
	Rows         int    `json:"rows,omitempty" jsonschema:"default 24"`
	Dialect      string `json:"dialect,omitempty" jsonschema:"device dialect; default: detected, pagers answered by run_command; auto: always; none"`
	Record       bool   `json:"record,omitempty"`
}

// Bounds of the SSH tools' arguments.
const (
	maxCredIDLen   = 128
	maxSSHCommand  = 1 << 20
	maxSSHTimeout  = 10 * 60 * 1000
	defSSHTimeout  = 60 * 1000
	maxSSHMaxBytes = 16 << 20
)

func (s *Server) addSSHTools() {
	addTool(s, sshVoice, &sdk.Tool{
		Name:        "ssh_execute",
		Description: "Run a command over SSH: stdout, stderr, exitCode. Checked against rules.json first.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		p["credentialId"].MaxLength = ptr(maxCredIDLen)
		p["command"].MaxLength = ptr(maxSSHCommand)
		p["sessionMode"].Enum = []any{ssh.Ephemeral, ssh.Persistent}
		p["sessionMode"].Default = json.RawMessage(`"ephemeral"`)
		p["sessionId"].MaxLength = ptr(maxRefLen)
		p["timeoutMs"].Minimum, p["timeoutMs"].Maximum = ptr(1.0), ptr(float64(maxSSHTimeout))
		p["maxBytes"].Minimum, p["maxBytes"].Maximum = ptr(1.0), ptr(float64(maxSSHMaxBytes))
	}, s.sshExecute)

	addTool(s, sshVoice, &sdk.Tool{
		Name:        "ssh_list_credentials",
		Description: "List credentials (never a secret).",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, nil, s.sshListCredentials)

	addTool(s, sshVoice, &sdk.Tool{
		Name:        "ssh_session_info",
		Description: "Your persistent SSH sessions.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, func(p schemaProps) { p["credentialId"].MaxLength = ptr(maxCredIDLen) }, s.sshSessionInfo)

	addTool(s, sshVoice, &sdk.Tool{
		Name:        "ssh_shell",
		Description: "Open an SSH shell with a screen; returns session_id.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		p["credentialId"].MaxLength = ptr(maxCredIDLen)
		p["name"].MaxLength = ptr(session.MaxNameLen)
		p["cols"].Minimum, p["cols"].Maximum = ptr(1.0), ptr(1000.0)
		p["rows"].Minimum, p["rows"].Maximum = ptr(1.0), ptr(1000.0)
		p["dialect"].MaxLength = ptr(maxPluginName)
	}, s.sshShell)
}

// credID checks a credentialId argument.
func credID(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", invalid("credentialId", "must be a credential id (ssh_list_credentials lists them), got an empty string")
	}
	return v, nil
}

func (s *Server) sshExecute(ctx context.Context, req *sdk.CallToolRequest, in sshExecIn) (any, error) {
	id, err := credID(in.CredentialID)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, invalid("command", "must be a command line, got an empty string")
	}
	if strings.ContainsRune(in.Command, 0) {
		return nil, invalid("command", "must not contain NUL bytes")
	}
	mode := in.SessionMode
	if mode == "" {
		mode = ssh.Ephemeral
	}
	if in.SessionID != "" && mode != ssh.Persistent {
		return nil, invalid("sessionId", "only applies with sessionMode \"persistent\"")
	}
	timeout := time.Duration(in.TimeoutMs) * time.Millisecond
	if timeout == 0 {
		timeout = defSSHTimeout * time.Millisecond
	}
	stop := s.progressMsg(ctx, req, timeout, func() string { return "the command is running" })
	defer stop()
	res, err := s.deps.SSH.Pool.Execute(ctx, ssh.ExecRequest{
		Owner: owner(req), CredID: id, Command: in.Command, Mode: mode, SessionID: in.SessionID,
		MaxBytes: in.MaxBytes, Timeout: timeout,
	})
	if err != nil {
		return nil, err
	}
	// What a command prints is a result too: a secret typed anywhere in
	// this server's life is masked in it (TRUST-2).
	sec := s.deps.Sessions.Secrets()
	res.Stdout, res.Stderr = sec.MaskString(res.Stdout), sec.MaskString(res.Stderr)
	return res, nil
}

func (s *Server) sshListCredentials(context.Context, *sdk.CallToolRequest, struct{}) (any, error) {
	out := map[string]any{"credentials": s.deps.SSH.Creds.List()}
	if err := s.deps.SSH.Creds.Err(); err != nil {
		out["warning"] = "the credentials file did not load, so this is the last good set: " + err.Error()
	} else if s.deps.SSH.Creds.Len() == 0 {
		out["hint"] = "no credentials: create " + s.deps.SSH.Creds.Path() + " (mode 600) as in credentials.example.json"
	}
	return out, nil
}

func (s *Server) sshSessionInfo(_ context.Context, req *sdk.CallToolRequest, in sshInfoIn) (any, error) {
	list := s.deps.SSH.Pool.Info(owner(req), in.CredentialID)
	if list == nil {
		list = []ssh.SessionInfo{}
	}
	return map[string]any{"sessions": list}, nil
}

func (s *Server) sshShell(ctx context.Context, req *sdk.CallToolRequest, in sshShellIn) (any, error) {
	id, err := credID(in.CredentialID)
	if err != nil {
		return nil, err
	}
	if in.Name != "" {
		if err := session.ValidName(in.Name); err != nil {
			return nil, invalid("name", "%v", strings.TrimPrefix(err.Error(), session.ErrInvalidName.Error()+": "))
		}
	}
	sess, err := s.deps.SSH.Pool.Shell(ctx, id, ssh.ShellOptions{Name: in.Name, Owner: owner(req), Cols: in.Cols, Rows: in.Rows, Dialect: s.deviceDialect(in.Dialect), Record: in.Record})
	if err != nil {
		return nil, err
	}
	out := map[string]any{"session_id": sess.ID}
	if sess.Name != "" {
		out["name"] = sess.Name
	}
	withRecording(out, sess)
	return out, nil
}
