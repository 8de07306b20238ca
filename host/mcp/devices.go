package mcp

import (
	"context"
	"errors"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
)

type runIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
	Command   string `json:"command" jsonschema:"one line; Enter is added"`
	TimeoutMs int    `json:"timeoutMs,omitempty" jsonschema:"default 30000"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"default 65536"`
	Expect    string `json:"expect,omitempty" jsonschema:"regex ending the output (no dialect or shell prompt)"`
}

const defaultRunTimeout = 30 * time.Second

type secretIn struct {
	SessionID    string `json:"sessionId" jsonschema:"session id or name"`
	CredentialID string `json:"credentialId" jsonschema:"credential id"`
	Field        string `json:"field" jsonschema:"which secret"`
}

type modeIn struct {
	SessionID    string `json:"sessionId" jsonschema:"session id or name"`
	Mode         string `json:"mode"`
	CredentialID string `json:"credentialId,omitempty" jsonschema:"types its enableSecret (else password) when asked"`
	TimeoutMs    int    `json:"timeoutMs,omitempty" jsonschema:"default 30000"`
}

// maskFor is how long what comes back is searched for a typed secret.
const maskFor = 10 * time.Second

func (s *Server) addDeviceTools() {
	addTool(s, telnetVoice, &sdk.Tool{
		Name: "run_command",
		Description: "Run one command; returns its output alone (no echo, pager or prompt), prompt, mode, exitCode, " +
			"error, reason. A question stops it.",
		Annotations: &sdk.ToolAnnotations{Title: "Run command", DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		sessionRef(p)
		p["command"].MaxLength = ptr(maxCommandLen)
		p["timeoutMs"].Minimum, p["timeoutMs"].Maximum = ptr(1.0), ptr(float64(maxWaitMs))
		p["maxBytes"].Minimum, p["maxBytes"].Maximum = ptr(1.0), ptr(float64(maxReadSize))
		p["expect"].MaxLength = ptr(session.MaxPatternLen)
	}, s.runCommand)

	addTool(s, telnetVoice, &sdk.Tool{
		Name: "set_mode",
		Description: "Move a device to a mode by its dialect's commands (enable, configure terminal, end…), each as " +
			"run_command; returns steps, prompt, mode, reason.",
		Annotations: &sdk.ToolAnnotations{Title: "Set mode", DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		sessionRef(p)
		p["mode"].Enum = []any{"user", "privileged", "config"}
		p["credentialId"].MaxLength = ptr(maxCredIDLen)
		p["timeoutMs"].Minimum, p["timeoutMs"].Maximum = ptr(1.0), ptr(float64(maxWaitMs))
	}, s.setMode)

	if s.deps.SSH == nil {
		return
	}
	addTool(s, telnetVoice, &sdk.Tool{
		Name:        "send_secret",
		Description: "Type a credential's secret and Enter at a prompt; never shown. Refused where it would echo.",
		Annotations: &sdk.ToolAnnotations{Title: "Send secret", DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		sessionRef(p)
		p["credentialId"].MaxLength = ptr(maxCredIDLen)
		p["field"].Enum = []any{"username", "password", "enableSecret", "passphrase"}
	}, s.sendSecret)
}

func (s *Server) sendSecret(ctx context.Context, req *sdk.CallToolRequest, in secretIn) (any, error) {
	cred, err := s.credential(in.CredentialID)
	if err != nil {
		return nil, err
	}
	sess, err := s.lookup(req, "sessionId", in.SessionID)
	if err != nil {
		return nil, err
	}
	secret, err := cred.Secret(in.Field)
	if err != nil {
		return nil, invalid("field", "%v", err)
	}
	defer clear(secret)
	if err := sess.SendSecret(ctx, secret, maskFor); err != nil {
		return nil, err
	}
	return map[string]any{"sessionId": sess.ID, "sent": in.Field}, nil
}

func (s *Server) runCommand(ctx context.Context, req *sdk.CallToolRequest, in runIn) (any, error) {
	if strings.ContainsAny(in.Command, "\r\n") {
		return nil, invalid("command", "must be one line (no CR or LF); send several lines as several calls")
	}
	var expect *session.Pattern
	if in.Expect != "" {
		re, err := session.CompilePattern(in.Expect)
		if err != nil {
			return nil, invalid("expect", "%v", err)
		}
		expect = re
	}
	sess, err := s.lookup(req, "sessionId", in.SessionID)
	if err != nil {
		return nil, err
	}
	timeout := runTimeout(in.TimeoutMs)
	stop := s.progress(ctx, req, sess, sess.WaitCeiling(timeout))
	defer stop()
	return sess.RunCommand(ctx, session.RunOptions{Command: in.Command, Timeout: timeout, MaxBytes: in.MaxBytes, Expect: expect})
}

func (s *Server) setMode(ctx context.Context, req *sdk.CallToolRequest, in modeIn) (any, error) {
	var secret func(field string) ([]byte, error)
	if in.CredentialID != "" {
		cred, err := s.credential(in.CredentialID)
		if err != nil {
			return nil, err
		}
		secret = func(field string) ([]byte, error) {
			if field == "enable" {
				if b, err := cred.Secret("enableSecret"); err == nil {
					return b, nil
				}
			}
			return cred.Secret("password")
		}
	}
	sess, err := s.lookup(req, "sessionId", in.SessionID)
	if err != nil {
		return nil, err
	}
	timeout := runTimeout(in.TimeoutMs)
	stop := s.progress(ctx, req, sess, sess.WaitCeiling(timeout))
	defer stop()
	res, err := sess.SetMode(ctx, session.ModeOptions{Mode: in.Mode, Timeout: timeout, Secret: secret})
	if errors.Is(err, session.ErrNoMode) {
		return nil, invalid("mode", "%v", err)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// runTimeout is a device call's timeoutMs, or the default when 0.
func runTimeout(ms int) time.Duration {
	if ms == 0 {
		return defaultRunTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// credential is the credential a device tool names, or an error on the
// credentialId field.
func (s *Server) credential(id string) (secrets.Credential, error) {
	if _, err := credID(id); err != nil {
		return secrets.Credential{}, err
	}
	if s.deps.SSH == nil {
		return secrets.Credential{}, invalid("credentialId", "no credentials are loaded in this server")
	}
	c, err := s.deps.SSH.Creds.Get(id)
	if err != nil {
		return secrets.Credential{}, invalid("credentialId", "%v", err)
	}
	return c, nil
}
