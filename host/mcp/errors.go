package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/device"
	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/host/ssh"
)

// ArgError is an invalid argument: the field, and what was expected and
// given (SPEC MCP-7).
type ArgError struct {
	Field string
	Msg   string
}

func (e *ArgError) Error() string { return "invalid arguments: " + e.Field + ": " + e.Msg }

// invalid is an *ArgError.
func invalid(field, format string, args ...any) error {
	return &ArgError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// errInternal marks a failure of the server itself (a bug, a panic).
var errInternal = errors.New("internal error")

// voice is how a tool group tells a client what went wrong: the seeds
// differ, and each group keeps its seed's words. textVoice is named for
// its form, as the Telnet, PTY, device and plugin tools all speak it;
// testerVoice and sshVoice for the one seed whose tools speak each.
type voice int

const (
	// textVoice (seed 000, SPEC TEL-7): a tool error (isError) whose
	// text starts with the seed's words: "Session not found", "Session
	// disconnected", "invalid arguments: <field>: …", "RESOURCE_LIMIT: …".
	textVoice voice = iota
	// testerVoice (seed 004, SPEC TUI-1): a tool error whose text starts
	// with a code: SESSION_NOT_FOUND, SESSION_DEAD, INVALID_INPUT,
	// RESOURCE_LIMIT, INTERNAL_ERROR.
	testerVoice
	// sshVoice (seed 002, SPEC SSH-7): a JSON-RPC error with a code:
	// -32602 invalid params, -32000 connect/exec, -32001 credential,
	// -32002 session, -32003 validation (rules), -32603 internal.
	sshVoice
)

// Codes of the tester tools (SPEC TUI-1).
const (
	codeSessionNotFound = "SESSION_NOT_FOUND"
	codeSessionDead     = "SESSION_DEAD"
	codeInvalidInput    = "INVALID_INPUT"
	codeResourceLimit   = "RESOURCE_LIMIT"
	codeInternal        = "INTERNAL_ERROR"
	// codeHumanControl: a person holds the session's keyboard in the
	// live view (every voice says it; retryable).
	codeHumanControl = "HUMAN_CONTROL"
	// codeBusy: run_command found the session still running an earlier
	// command at the end of its timeout; nothing was sent (retryable).
	codeBusy = "BUSY"
)

// JSON-RPC codes of the SSH tools (SPEC SSH-7).
const (
	rpcInvalidParams = -32602
	rpcInternal      = -32603
	rpcConnect       = -32000
	rpcCredential    = -32001
	rpcSession       = -32002
	rpcValidation    = -32003
)

// class is what an error is, decided once for every voice (not to be
// confused with a session's kind).
type class int

const (
	classOther class = iota
	classArg
	classNotFound
	classEnded
	classLimit
	classInternal
	classCancelled
	classHuman
	classBusy
)

func classOf(err error) class {
	var ae *ArgError
	switch {
	case errors.As(err, &ae), errors.Is(err, session.ErrInvalidName), errors.Is(err, session.ErrNameTaken), errors.As(err, new(*policy.BlockedError)),
		errors.Is(err, session.ErrBadPlugin), errors.Is(err, session.ErrScreenSize):
		return classArg
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrExpired):
		return classNotFound
	case errors.Is(err, session.ErrHumanControl):
		return classHuman
	case errors.Is(err, device.ErrBusy):
		return classBusy
	case errors.Is(err, session.ErrDisconnected):
		return classEnded
	case errors.Is(err, session.ErrLimit):
		return classLimit
	case errors.Is(err, errInternal):
		return classInternal
	case errors.Is(err, context.Canceled):
		return classCancelled
	}
	return classOther
}

// The codes each voice gives a class; a class missing from a table gets
// the table's default (testerCodes: INTERNAL_ERROR, rpcCodes: -32000).
var (
	testerCodes = map[class]string{classArg: codeInvalidInput, classNotFound: codeSessionNotFound, classEnded: codeSessionDead,
		classLimit: codeResourceLimit, classInternal: codeInternal, classHuman: codeHumanControl, classBusy: codeBusy}
	rpcCodes = map[class]int64{classArg: rpcInvalidParams, classNotFound: rpcSession, classEnded: rpcSession,
		classLimit: rpcSession, classInternal: rpcInternal, classHuman: rpcSession, classBusy: rpcSession}
	textPrefixes = map[class]string{classLimit: codeResourceLimit + ": ", classInternal: codeInternal + ": ",
		classHuman: codeHumanControl + ": ", classBusy: codeBusy + ": "}
)

// rpcCode is the SPEC SSH-7 code of an error, with its data: the SSH
// pool's typed errors and a rules refusal have their own codes, ahead of
// what they wrap; anything else is coded by its class.
func rpcCode(err error) (int64, map[string]any) {
	var ce *ssh.CredentialError
	var be *policy.BlockedError
	var se *ssh.SessionError
	var xe *ssh.ConnectError
	switch {
	case errors.As(err, &be):
		d := map[string]any{"command": be.Command}
		if be.Rule != "" {
			d["rule"] = be.Rule
		}
		if be.Simple != "" {
			d["simpleCommand"] = be.Simple // the command in the line, as the shell would run it
		}
		if be.Reason != "" {
			d["reason"] = be.Reason // why the line cannot be checked
		}
		return rpcValidation, d
	case errors.As(err, &ce):
		var ue *secrets.UnknownError
		if errors.As(err, &ue) {
			return rpcCredential, map[string]any{"credentialId": ue.ID} // seed 002's data
		}
		return rpcCredential, nil
	case errors.As(err, &se):
		return rpcSession, nil
	case errors.As(err, &xe):
		return rpcConnect, nil
	case errors.Is(err, session.ErrHumanControl):
		return rpcSession, map[string]any{"code": codeHumanControl, "retryable": true}
	}
	if code, ok := rpcCodes[classOf(err)]; ok {
		return code, nil
	}
	return rpcConnect, nil
}

// fail turns an error into what the client of a tool group gets: the one
// place where domain errors become codes and words.
func (s *Server) fail(v voice, err error) (*sdk.CallToolResult, error) {
	msg := err.Error()
	switch v {
	case testerVoice:
		code, ok := testerCodes[classOf(err)]
		if !ok {
			code = codeInternal
		}
		return toolError(code + ": " + msg), nil
	case sshVoice:
		code, data := rpcCode(err)
		if classOf(err) == classHuman {
			msg = codeHumanControl + ": " + msg
		}
		e := &jsonrpc.Error{Code: code, Message: msg}
		if data != nil {
			e.Data, _ = json.Marshal(data)
		}
		return nil, e
	}
	return toolError(textPrefixes[classOf(err)] + msg), nil
}

func toolError(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}
