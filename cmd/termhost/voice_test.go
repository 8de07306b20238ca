package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termhost/termhost/internal/testutil"
)

// Issue 17's "one voice for agents", end to end over stdio.

// TestOnScreenSeesThePromptBlank: a prompt ends with a blank, and the
// screen's rows are sent without their trailing blanks; a pattern on the
// screen still sees `$ ` where the cursor waits after it.
func TestOnScreenSeesThePromptBlank(t *testing.T) {
	testutil.NeedProgram(t, "sh")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": "sh", "args": []string{"-i"}, "env": map[string]string{"PS1": "$ ", "ENV": ""}})["session_id"].(string)
	r := h.must("wait_for", map[string]any{"session_id": id, "until": `\$ $`, "onScreen": true, "timeoutMs": 10000})
	if r["reason"] != "matched" {
		t.Fatalf("wait_for onScreen `\\$ $`: %v\nscreen:\n%q", r, h.view(id))
	}
}

// TestOtherSpellings: the session argument in the other seed's spelling,
// and an array given as a string holding its JSON (the MCP Inspector CLI).
func TestOtherSpellings(t *testing.T) {
	testutil.NeedProgram(t, "cat")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": "cat", "args": `["-u"]`})["session_id"].(string)
	h.must("send_keys", map[string]any{"sessionId": id, "text": "spelled", "keys": `["Enter"]`})
	h.screenHas(id, "spelled")
	if c := h.must("view_screen", map[string]any{"sessionId": id})["content"].(string); !strings.Contains(c, "spelled") {
		t.Fatalf("view_screen with sessionId: %q", c)
	}
	if r := h.must("telnet_read", map[string]any{"session_id": id, "waitMs": 100}); r["data"] == nil {
		t.Fatalf("telnet_read with session_id: %v", r)
	}
	if r := h.must("kill_pty", map[string]any{"session_id": id}); r["killed"] != true {
		t.Fatalf("kill_pty with session_id: %v", r)
	}
}

// TestPluginDirCreated: `serve --plugin-dir DIR` before DIR exists (the
// README's walkthrough order) creates it, writable by its owner alone, and
// serves.
func TestPluginDirCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins.d")
	cs := startServe(t, "--plugin-dir", dir)
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "plugins_list"}); err != nil {
		t.Fatalf("plugins_list: %v", err)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("plugin dir: %v %v", st, err)
	}
}
