package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/host/ssh"
)

// TestArgumentVoice: every bad argument gets one voice — the field, what
// was expected, what was given — checked against the tool's own schema.
func TestArgumentVoice(t *testing.T) {
	connect := schema[connectIn](func(p schemaProps) {
		p["port"].Minimum, p["port"].Maximum = ptr(1.0), ptr(65535.0)
		p["timeout"].Minimum, p["timeout"].Maximum = ptr(1.0), ptr(float64(maxConnectMs))
		p["name"].MaxLength = ptr(session.MaxNameLen)
		p["plugins"].MaxItems = ptr(maxPlugins)
	})
	read := schema[readIn](func(p schemaProps) {
		p["encoding"].Enum = encodings
		p["maxBytes"].Minimum, p["maxBytes"].Maximum = ptr(1.0), ptr(float64(maxReadSize))
		waitBounds(p)
	})
	cases := []struct {
		name string
		args string
		want string // the whole message
	}{
		{"not an object", `[1]`, "invalid arguments: arguments: must be an object, got an array"},
		{"string port", `{"host":"h","port":"twenty-three"}`, `invalid arguments: port: must be an integer between 1 and 65535, got the string "twenty-three"`},
		{"zero port", `{"host":"h","port":0}`, "invalid arguments: port: must be an integer between 1 and 65535, got 0"},
		{"fraction", `{"host":"h","port":22.5}`, "invalid arguments: port: must be an integer between 1 and 65535, got 22.5"},
		{"huge", `{"host":"h","port":23,"timeout":1e18}`, "invalid arguments: timeout: must be an integer between 1 and 120000, got 1e18"},
		{"overflow", `{"host":"h","port":23,"timeout":99999999999999999999}`, "invalid arguments: timeout: must be an integer between 1 and 120000, got 99999999999999999999"},
		{"unknown", `{"host":"h","port":23,"colour":"red"}`, "invalid arguments: colour: unknown field (accepted: cols, credentialId, dialect, host, name, plugins, port, record, rows, term, timeout)"},
		{"bool for string", `{"host":true,"port":23}`, "invalid arguments: host: must be a string, got true"},
		{"long name", `{"host":"h","port":23,"name":"` + strings.Repeat("n", 65) + `"}`, "invalid arguments: name: must be at most 64 characters, got 65"},
		{"plugin not a string", `{"host":"h","port":23,"plugins":[1]}`, "invalid arguments: plugins[0]: must be a string, got the number 1"},
		{"bad JSON", `{"host":`, "invalid arguments: arguments: not valid JSON: unexpected EOF"},
	}
	for _, c := range cases {
		_, err := decodeArgs[connectIn](connect, json.RawMessage(c.args))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\n want %s", c.name, err, c.want)
		}
	}
	// Required fields (telnet_connect's host and port are optional since a
	// credentialId can give them).
	ref := schema[sessionIn](sessionRef)
	for _, c := range []struct{ name, args, want string }{
		{"null", `null`, "invalid arguments: sessionId: required (session id or name)"},
		{"absent", ``, "invalid arguments: sessionId: required (session id or name)"},
		{"null required", `{"sessionId":null}`, "invalid arguments: sessionId: must be a string, got null"},
	} {
		_, err := decodeArgs[sessionIn](ref, json.RawMessage(c.args))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\n want %s", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ args, want string }{
		{`{"sessionId":"s","timeoutMs":18446744073710}`, "invalid arguments: timeoutMs: must be an integer between 0 and 300000, got 18446744073710"},
		{`{"sessionId":"s","encoding":"ebcdic"}`, `invalid arguments: encoding: must be one of utf8, base64, hex or binary, got "ebcdic"`},
		{`{"sessionId":"s","maxBytes":0.5}`, "invalid arguments: maxBytes: must be an integer between 1 and 16777216, got 0.5"},
		{`{"sessionId":"s","idleMs":-1}`, "invalid arguments: idleMs: must be an integer between 0 and 300000, got -1"},
		{`{"sessionId":"s","until":"` + strings.Repeat("a", 1025) + `"}`, "invalid arguments: until: must be at most 1024 characters, got 1025"},
	} {
		_, err := decodeArgs[readIn](read, json.RawMessage(c.args))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\n want %s", c.args, err, c.want)
		}
	}
	in, err := decodeArgs[readIn](read, json.RawMessage(`{"sessionId":"s","timeoutMs":300000,"until":"x$","idleMs":null}`))
	if err != nil || in.TimeoutMs != 300000 || in.Until != "x$" || in.IdleMs != 0 {
		t.Fatalf("valid arguments: %+v %v", in, err)
	}
}

// TestSchemasAreBounded: a tool whose schema leaves a number, string or
// array without an upper bound is refused when it is registered.
func TestSchemasAreBounded(t *testing.T) {
	s := &Server{log: discard(), mcp: sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "n (integer) has no upper bound") {
			t.Fatalf("registration: %v", p)
		}
	}()
	addTool(s, textVoice, &sdk.Tool{Name: "unbounded"}, nil, func(context.Context, *sdk.CallToolRequest, struct {
		N int `json:"n"`
	}) (any, error) {
		return nil, nil
	})
}

// TestPanicIsAnInternalError: a handler that panics gives an
// INTERNAL_ERROR result; the server goes on serving.
func TestPanicIsAnInternalError(t *testing.T) {
	s := &Server{log: discard(), mcp: sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)}
	addTool(s, textVoice, &sdk.Tool{Name: "boom"}, nil, func(context.Context, *sdk.CallToolRequest, struct{}) (any, error) {
		var m map[string]int
		//lint:ignore SA5000 the panic is the point
		m["x"] = 1 // assignment to a nil map
		return nil, nil
	})
	addTool(s, textVoice, &sdk.Tool{Name: "fine"}, nil, func(context.Context, *sdk.CallToolRequest, struct{}) (any, error) {
		return map[string]bool{"ok": true}, nil
	})
	cs := connectInMemory(t, s)
	for range 2 {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "boom"})
		if err != nil || !res.IsError || !strings.HasPrefix(text(res), "INTERNAL_ERROR: ") || !strings.Contains(text(res), "nil map") {
			t.Fatalf("boom: %v %v", text(res), err)
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fine"})
	if err != nil || res.IsError || text(res) != `{"ok":true}` {
		t.Fatalf("fine after the panic: %v %v", text(res), err)
	}
}

// TestVoices: one error, three tool groups' words and codes.
func TestVoices(t *testing.T) {
	s := &Server{log: discard()}
	notFound := fmt.Errorf("%w: no session has id or name %q", session.ErrNotFound, "x")
	ended := fmt.Errorf("%w: the peer closed the connection", session.ErrDisconnected)
	limit := fmt.Errorf("%w: 100 sessions are open", session.ErrLimit)
	arg := invalid("port", "must be an integer between 1 and 65535, got 0")
	for _, c := range []struct {
		err         error
		text, tuple string
		rpc         int64
	}{
		{notFound, "Session not found: no session", "SESSION_NOT_FOUND: Session not found", rpcSession},
		{ended, "Session disconnected: the peer", "SESSION_DEAD: Session disconnected", rpcSession},
		{limit, "RESOURCE_LIMIT: limit reached", "RESOURCE_LIMIT: limit reached", rpcSession},
		{arg, "invalid arguments: port:", "INVALID_INPUT: invalid arguments: port:", rpcInvalidParams},
		{fmt.Errorf("%w: boom", errInternal), "INTERNAL_ERROR: internal error", "INTERNAL_ERROR: internal error", rpcInternal},
	} {
		res, _ := s.fail(textVoice, c.err)
		if !res.IsError || !strings.HasPrefix(text(res), c.text) {
			t.Errorf("text voice of %v: %q", c.err, text(res))
		}
		res, _ = s.fail(testerVoice, c.err)
		if !res.IsError || !strings.HasPrefix(text(res), c.tuple) {
			t.Errorf("tester voice of %v: %q", c.err, text(res))
		}
		_, err := s.fail(sshVoice, c.err)
		var re *jsonrpc.Error
		if !errors.As(err, &re) || re.Code != c.rpc {
			t.Errorf("ssh voice of %v: %v", c.err, err)
		}
	}
}

// TestVoicesOfSSHErrors: the SSH pool's typed errors and a rules refusal
// get their SPEC SSH-7 code and data in the ssh voice, and in the other
// voices the words and codes of what they wrap.
func TestVoicesOfSSHErrors(t *testing.T) {
	s := &Server{log: discard()}
	unknown := &ssh.CredentialError{Err: fmt.Errorf("ssh: %w", &secrets.UnknownError{ID: "lab"})}
	limit := &ssh.SessionError{Err: fmt.Errorf("%w: 8 SSH connections open", session.ErrLimit)}
	gone := &ssh.SessionError{Err: fmt.Errorf("%w: no persistent SSH session", session.ErrNotFound)}
	refused := &policy.BlockedError{Command: "rm -rf /", Rule: "^rm ", Simple: "rm -rf /"}
	connect := &ssh.ConnectError{Err: errors.New("dial tcp: connection refused")}
	for _, c := range []struct {
		err   error
		text  string
		tuple string
		rpc   int64
		data  string
	}{
		{unknown, "ssh: Credential not found", "INTERNAL_ERROR: ssh: Credential not found", rpcCredential, `{"credentialId":"lab"}`},
		{limit, "RESOURCE_LIMIT: limit reached", "RESOURCE_LIMIT: limit reached", rpcSession, ""},
		{gone, "Session not found", "SESSION_NOT_FOUND: Session not found", rpcSession, ""},
		{refused, "", "INVALID_INPUT: ", rpcValidation, `{"command":"rm -rf /","rule":"^rm ","simpleCommand":"rm -rf /"}`},
		{connect, "dial tcp", "INTERNAL_ERROR: dial tcp", rpcConnect, ""},
	} {
		res, _ := s.fail(textVoice, c.err)
		if !res.IsError || !strings.HasPrefix(text(res), c.text) {
			t.Errorf("text voice of %v: %q", c.err, text(res))
		}
		res, _ = s.fail(testerVoice, c.err)
		if !res.IsError || !strings.HasPrefix(text(res), c.tuple) {
			t.Errorf("tester voice of %v: %q", c.err, text(res))
		}
		_, err := s.fail(sshVoice, c.err)
		var re *jsonrpc.Error
		if !errors.As(err, &re) || re.Code != c.rpc || string(re.Data) != c.data || re.Message != c.err.Error() {
			t.Errorf("ssh voice of %v: %v (data %s)", c.err, err, re.Data)
		}
	}
}

func text(res *sdk.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// connectInMemory connects a go-sdk client to s over in-memory transports.
func connectInMemory(t *testing.T, s *Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.mcp.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// TestArgumentSpellings: the other seed's spelling of the session argument
// is accepted on every tool (a model that used sessionId on telnet_read
// tries it on view_screen), and an array or object sent as a string
// holding its JSON (the MCP Inspector CLI's `args=["a"]`) is taken as that
// array or object. A string argument is never reinterpreted.
func TestArgumentSpellings(t *testing.T) {
	tui := schema[tuiSessionIn](nil)
	for _, args := range []string{`{"session_id":"s1"}`, `{"sessionId":"s1"}`, `{"processId":"s1"}`, `{"session_id":"s1","sessionId":"s1"}`} {
		in, err := decodeArgs[tuiSessionIn](tui, json.RawMessage(args))
		if err != nil || in.SessionID != "s1" {
			t.Errorf("%s: %+v %v", args, in, err)
		}
	}
	if _, err := decodeArgs[tuiSessionIn](tui, json.RawMessage(`{"session_id":"s1","sessionId":"s2"}`)); err == nil ||
		err.Error() != "invalid arguments: session_id: given twice with different values (as session_id and as sessionId)" {
		t.Errorf("two different values: %v", err)
	}
	telnet := schema[sessionIn](sessionRef)
	if in, err := decodeArgs[sessionIn](telnet, json.RawMessage(`{"session_id":"t1"}`)); err != nil || in.SessionID != "t1" {
		t.Errorf("session_id on a telnet tool: %+v %v", in, err)
	}

	launch := schema[launchIn](nil)
	in, err := decodeArgs[launchIn](launch, json.RawMessage(`{"command":"vim","args":"[\"notes.txt\", \"-n\"]","env":"{\"A\": \"1\"}"}`))
	if err != nil || len(in.Args) != 2 || in.Args[0] != "notes.txt" || in.Args[1] != "-n" || in.Env["A"] != "1" {
		t.Fatalf("JSON in strings: %+v %v", in, err)
	}
	for _, c := range []struct{ args, want string }{
		{`{"command":"vim","args":"notes.txt"}`, `invalid arguments: args: must be an array, got the string "notes.txt"`},
		{`{"command":"vim","args":"[\"a\"] x"}`, `invalid arguments: args: must be an array, got the string "[\"a\"] x"`},
		{`{"command":"vim","args":"{\"a\":1}"}`, `invalid arguments: args: must be an array, got the string "{\"a\":1}"`},
		{`{"command":"vim","args":"[1]"}`, `invalid arguments: args[0]: must be a string, got the number 1`},
	} {
		if _, err := decodeArgs[launchIn](launch, json.RawMessage(c.args)); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\n want %s", c.args, err, c.want)
		}
	}
	// command is a string: a JSON array in it is the command's text.
	if in, err := decodeArgs[launchIn](launch, json.RawMessage(`{"command":"[\"x\"]"}`)); err != nil || in.Command != `["x"]` {
		t.Errorf("string argument reinterpreted: %+v %v", in, err)
	}
}
