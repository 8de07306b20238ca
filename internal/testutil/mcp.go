package testutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is what a tool call came back with: a tool result (Text, with
// IsError set for a tool error), or Err when the call failed, with RPC set
// when that failure is a JSON-RPC error answer (not a closed connection or
// a timeout).
type Result struct {
	Text    string // the text blocks, joined
	Blocks  int    // content blocks in the result
	IsError bool   // the result is a tool error
	Err     error
	RPC     *jsonrpc.Error
}

// CallTool calls an MCP tool within the bound and gathers its answer. It
// asserts nothing, so any goroutine may use it.
func CallTool(cs *sdk.ClientSession, within time.Duration, tool string, args any) Result {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		res := Result{Err: err}
		errors.As(err, &res.RPC)
		return res
	}
	res := Result{Blocks: len(r.Content), IsError: r.IsError}
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			res.Text += tc.Text
		}
	}
	return res
}

// T is what the call helpers need of a test: *testing.T and *testing.B,
// and rapid's *T too.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CallJSON calls a tool and decodes its result. A tool error or a failed
// call comes back as msg with isErr set; a successful result that is not
// one text block holding one JSON object (the form every termhost tool
// answers in) is err. It asserts nothing, so any goroutine may use it.
func CallJSON(cs *sdk.ClientSession, tool string, args any) (res map[string]any, msg string, isErr bool, err error) {
	r := CallTool(cs, 30*time.Second, tool, args)
	switch {
	case r.Err != nil:
		return nil, r.Err.Error(), true, nil
	case r.IsError:
		return nil, r.Text, true, nil
	case r.Blocks != 1:
		return nil, r.Text, false, fmt.Errorf("%s: result has %d content blocks, want one text block", tool, r.Blocks)
	}
	if err := json.Unmarshal([]byte(r.Text), &res); err != nil || res == nil {
		return nil, r.Text, false, fmt.Errorf("%s: result is not a JSON object: %q", tool, r.Text)
	}
	return res, r.Text, false, nil
}

// Call is CallJSON that fails the test on a result not in that form.
func Call(t T, cs *sdk.ClientSession, tool string, args any) (res map[string]any, msg string, isErr bool) {
	t.Helper()
	res, msg, isErr, err := CallJSON(cs, tool, args)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return res, msg, isErr
}

// MustCall is Call that fails the test on an error.
func MustCall(t T, cs *sdk.ClientSession, tool string, args any) map[string]any {
	t.Helper()
	res, msg, isErr := Call(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s %v: %s", tool, args, msg)
	}
	return res
}
