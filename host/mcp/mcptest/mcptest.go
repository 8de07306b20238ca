// Package mcptest holds helpers for tests that drive termhost through
// go-sdk's MCP client: call a tool and decode its JSON result.
package mcptest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call runs a tool and decodes its JSON object result. isErr reports a
// tool error or a protocol error, whose text is returned as msg.
func Call(t testing.TB, cs *sdk.ClientSession, tool string, args any) (res map[string]any, msg string, isErr bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err.Error(), true
	}
	var text string
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	if r.IsError {
		return nil, text, true
	}
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatalf("%s: result is not a JSON object: %q", tool, text)
	}
	return res, text, false
}

// MustCall is Call that fails the test on an error.
func MustCall(t testing.TB, cs *sdk.ClientSession, tool string, args any) map[string]any {
	t.Helper()
	res, msg, isErr := Call(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s %v: %s", tool, args, msg)
	}
	return res
}
