package testutil

import (
	"context"
	"errors"
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
