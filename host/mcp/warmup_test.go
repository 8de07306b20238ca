package mcp_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
)

// TestWarmupAfterToolsList: with a warm-up delay, the plugins are not
// compiled while the client is being answered; listing the tools starts
// the load at once (not the delay), and so does a call that needs a
// plugin.
func TestWarmupAfterToolsList(t *testing.T) {
	h, cs := newHost(t, host.Config{WarmupDelay: time.Hour})
	select {
	case <-h.Plugins.Loaded():
		t.Fatal("the plugins loaded before the client listed the tools")
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Plugins.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("listing the tools did not start the plugin load")
	}

	// A call that needs a plugin, with no tools/list first.
	h2, cs2 := newHost(t, host.Config{WarmupDelay: time.Hour})
	srv := newRawServer(t)
	res, err := cs2.CallTool(context.Background(), &sdk.CallToolParams{Name: "telnet_connect", Arguments: map[string]any{"host": "127.0.0.1", "port": srv.port()}})
	if err != nil || res.IsError {
		t.Fatalf("telnet_connect before any tools/list: %v %v", res, err)
	}
	select {
	case <-h2.Plugins.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("a call did not start the plugin load")
	}
}
