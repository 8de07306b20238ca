package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/session"
)

// TestHumanControlVoices: the agent's input refused while a person holds
// the keyboard says HUMAN_CONTROL in every tool group's voice, the SSH
// tools' with the session code and data marking it retryable.
func TestHumanControlVoices(t *testing.T) {
	s := &Server{}
	err := fmt.Errorf("%w; retry later", session.ErrHumanControl)
	for _, v := range []voice{textVoice, testerVoice} {
		res, rerr := s.fail(v, err)
		if rerr != nil || !res.IsError || !strings.HasPrefix(textOf(res), "HUMAN_CONTROL: a person has taken control") {
			t.Fatalf("voice %d: %v %v", v, res, rerr)
		}
	}
	_, rerr := s.fail(sshVoice, err)
	var je *jsonrpc.Error
	if !errors.As(rerr, &je) || je.Code != rpcSession || !strings.HasPrefix(je.Message, "HUMAN_CONTROL: ") {
		t.Fatalf("ssh voice: %v", rerr)
	}
	var data map[string]any
	if json.Unmarshal(je.Data, &data) != nil || data["code"] != "HUMAN_CONTROL" || data["retryable"] != true {
		t.Fatalf("ssh voice data: %s", je.Data)
	}
}

func textOf(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
