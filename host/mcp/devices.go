package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/device"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
)

type runIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
	Command   string `json:"command" jsonschema:"one line; Enter is added"`
	TimeoutMs int    `json:"timeoutMs,omitempty" jsonschema:"default 30000"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"default 65536"`
	Expect    string `json:"expect,omitempty" jsonschema:"regex ending the output"`
	Interrupt bool   `json:"interrupt,omitempty"` // ^C what runs first, then a fresh prompt
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

func (s *Server) addDeviceTools() {
	addTool(s, textVoice, &sdk.Tool{
		Name: "run_command",
		Description: "Run one command at the prompt; returns its output alone (no echo, pager, prompt), prompt, mode, " +
			"exitCode, error, reason.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		sessionRef(p)
		p["command"].MaxLength = ptr(maxCommandLen)
		p["timeoutMs"].Minimum, p["timeoutMs"].Maximum = ptr(1.0), ptr(float64(maxWaitMs))
		p["maxBytes"].Minimum, p["maxBytes"].Maximum = ptr(1.0), ptr(float64(maxReadSize))
		p["expect"].MaxLength = ptr(session.MaxPatternLen)
	}, s.runCommand)

	addTool(s, textVoice, &sdk.Tool{
		Name: "set_mode",
		Description: "Move a device to a mode (enable, configure terminal, end…) with its dialect's commands, each " +
			"a run_command; returns steps, prompt, mode, reason.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		sessionRef(p)
		p["mode"].Enum = []any{"user", "privileged", "config"}
		p["credentialId"].MaxLength = ptr(maxCredIDLen)
		p["timeoutMs"].Minimum, p["timeoutMs"].Maximum = ptr(1.0), ptr(float64(maxWaitMs))
	}, s.setMode)

	if s.deps.SSH == nil {
		return
	}
	addTool(s, textVoice, &sdk.Tool{
		Name:        "send_secret",
		Description: "Type a credential's secret and Enter at a prompt; never shown. Refused where it would echo.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
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
	send := device.SendSecret
	if in.Field == "username" {
		send = device.SendUsername
	}
	if err := send(ctx, sess, secret, secretGate(cred, sess)); err != nil {
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
	// The rules first: a refused command waits for nothing and sends
	// nothing (the session's own check, at Enter, sees the whole line).
	if err := s.checkCommand(sess.Kind, "command", in.Command); err != nil {
		return nil, err
	}
	timeout := runTimeout(in.TimeoutMs)
	stop := s.progress(ctx, req, sess, sess.WaitCeiling(timeout))
	defer stop()
	res, err := device.RunCommand(ctx, sess, device.RunOptions{Command: in.Command, Timeout: timeout, MaxBytes: in.MaxBytes, Expect: expect, Interrupt: in.Interrupt})
	if err != nil {
		return nil, rulesArg("command", err)
	}
	return res, nil
}

func (s *Server) setMode(ctx context.Context, req *sdk.CallToolRequest, in modeIn) (any, error) {
	var secret func(field string) ([]byte, error)
	var cred secrets.Credential
	if in.CredentialID != "" {
		var err error
		if cred, err = s.credential(in.CredentialID); err != nil {
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
	o := device.ModeOptions{Mode: in.Mode, Timeout: timeout, Secret: secret, Ask: s.loginAsk(req, sess, in.CredentialID)}
	if in.CredentialID != "" {
		o.Allow = secretGate(cred, sess)
		// Refused before anything is sent, not at the password prompt
		// halfway through a move (the target does not change; a PTY's
		// foreground program is checked again when the secret is typed).
		if err := o.Allow(sess.Destination()); err != nil {
			return nil, err
		}
	}
	res, err := device.SetMode(ctx, sess, o)
	if errors.Is(err, device.ErrNoMode) {
		return nil, invalid("mode", "%v", err)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// deviceDialect is the dialect a device session (telnet_connect,
// ssh_shell) gets: the one named, or detection when none is named and
// the dialect plugin is there (SPEC DEV-1), its pagers answered for
// run_command only; "none" leaves the plugin out.
func (s *Server) deviceDialect(named string) string {
	if strings.TrimSpace(named) == "" {
		if s.deps.Sessions.Config().Plugins.Dialect == "" {
			return ""
		}
		return session.DetectDialect
	}
	return named
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

// defaultPort is the port a credential's entries without one mean for a
// session of kind k.
func defaultPort(k session.Kind) int {
	if k == session.KindSSH {
		return secrets.SSHPort
	}
	return secrets.TelnetPort
}

// secretGate allows a credential's secret to be typed into a session only
// where the credential may go (SPEC TRUST-1): a Telnet or SSH session to
// one of its targets (its host and port, or its "hosts"), or a local PTY
// whose foreground programs are all ones its "programs" names, with no
// process outside the terminal's session holding it open. How the session
// was opened does not matter.
func secretGate(cred secrets.Credential, sess *session.Session) device.Gate {
	return func(d session.Destination) error {
		// A secret keeps its kind (TRUST-1): an SSH credential's is never
		// typed into Telnet, a device credential's not into SSH, unless
		// its "kinds" says so. A local program is no kind: "programs"
		// says which ones a credential goes to.
		if d.Kind == session.KindTelnet || d.Kind == session.KindSSH {
			if err := cred.CheckKind(string(d.Kind)); err != nil {
				return invalid("credentialId", "%v", err)
			}
		}
		if d.Foreground == nil && d.FgErr == nil && d.Host != "" &&
			cred.Allows(secrets.Dest{Host: d.Host, Port: d.Port, Remote: d.Remote}, defaultPort(d.Kind)) {
			return nil
		}
		// The words of a refusal, made only for one.
		where := func() string {
			return fmt.Sprintf("credential %q may be typed only into sessions to %s or a local program it names in \"programs\"",
				cred.ID, cred.TargetsString(defaultPort(d.Kind)))
		}
		if d.Foreground == nil && d.FgErr == nil {
			to := secrets.Dest{Host: d.Host, Port: d.Port, Remote: d.Remote}.String()
			if d.Host == "" {
				to = "a " + string(d.Kind) + " link with no host"
			}
			return invalid("credentialId", "%s; session %s is a %s session to %s", where(), sess.ID, kindName(d.Kind), to)
		}
		if d.FgErr != nil {
			return invalid("credentialId", "%s; session %s is a PTY whose foreground program cannot be told (%v)", where(), sess.ID, d.FgErr)
		}
		fg := d.Foreground
		if len(cred.Programs) == 0 {
			return invalid("credentialId", "%s, and it names none; session %s is a PTY running %s", where(), sess.ID, exeName(fg.Exes[0]))
		}
		for _, exe := range fg.Exes {
			if !cred.AllowsProgram(exe) {
				return invalid("credentialId", "%s (%s); session %s is a PTY running %s", where(), strings.Join(cred.Programs, ", "), sess.ID, exeName(exe))
			}
		}
		if len(fg.Outsiders) > 0 {
			return invalid("credentialId", "session %s: its terminal is also open in %s, outside the session, which could read the secret", sess.ID, strings.Join(fg.Outsiders, ", "))
		}
		return nil
	}
}

func exeName(exe string) string {
	if exe == "" {
		return "a program that cannot be identified"
	}
	return exe
}

func kindName(k session.Kind) string {
	switch k {
	case session.KindTelnet:
		return "Telnet"
	case session.KindSSH:
		return "SSH"
	}
	return string(k)
}
