package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/session"
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
// differ, and each group keeps its seed's words.
type voice int

const (
	// telnetVoice (seed 000, SPEC TEL-7): a tool error (isError) whose
	// text starts with the seed's words: "Session not found", "Session
	// disconnected", "invalid arguments: <field>: …", "RESOURCE_LIMIT: …".
	telnetVoice voice = iota
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

// kind classifies an error once, for every voice.
type kind int

const (
	kindOther kind = iota
	kindArg
	kindNotFound
	kindEnded
	kindLimit
	kindInternal
	kindCancelled
)

func classify(err error) kind {
	var ae *ArgError
	switch {
	case errors.As(err, &ae), errors.Is(err, session.ErrInvalidName), errors.Is(err, session.ErrNameTaken), errors.As(err, new(*policy.BlockedError)),
		errors.Is(err, session.ErrBadPlugin), errors.Is(err, session.ErrScreenSize):
		return kindArg
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrExpired):
		return kindNotFound
	case errors.Is(err, session.ErrDisconnected):
		return kindEnded
	case errors.Is(err, session.ErrLimit):
		return kindLimit
	case errors.Is(err, errInternal):
		return kindInternal
	case errors.Is(err, context.Canceled):
		return kindCancelled
	}
	return kindOther
}

// fail turns an error into what the client of a tool group gets: the one
// place where domain errors become codes and words.
func (s *Server) fail(v voice, err error) (*sdk.CallToolResult, error) {
	k := classify(err)
	msg := err.Error()
	switch v {
	case testerVoice:
		code := map[kind]string{kindArg: codeInvalidInput, kindNotFound: codeSessionNotFound, kindEnded: codeSessionDead,
			kindLimit: codeResourceLimit, kindInternal: codeInternal}[k]
		if code == "" {
			code = codeInternal
		}
		return toolError(code + ": " + msg), nil
	case sshVoice:
		if code, data, ok := sshCode(err); ok {
			e := &jsonrpc.Error{Code: code, Message: msg}
			if data != nil {
				e.Data, _ = json.Marshal(data)
			}
			return nil, e
		}
		code := map[kind]int64{kindArg: rpcInvalidParams, kindNotFound: rpcSession, kindEnded: rpcSession,
			kindLimit: rpcSession, kindInternal: rpcInternal}[k]
		if code == 0 {
			code = rpcConnect
		}
		return nil, &jsonrpc.Error{Code: code, Message: msg}
	}
	switch k {
	case kindLimit:
		msg = "RESOURCE_LIMIT: " + msg
	case kindInternal:
		msg = "INTERNAL_ERROR: " + msg
	}
	return toolError(msg), nil
}

func toolError(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}
