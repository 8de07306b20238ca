package mcp_test

import (
	"testing"

	"github.com/termhost/termhost/host"
)

// A client's place in a session survives whatever the server does for
// other sessions (issue 18, item 3): after thousands of other sessions
// were keyed and closed, a wait_for on the first session still starts
// where its last wait left off, so the prompt that wait consumed does not
// satisfy the next one at once. (When the server kept every client's
// mark in one map of at most 1024, dropping one at random beyond, the
// first session's mark was gone here with a chance of 99%, and the
// wait, from the start of the buffer, saw the old prompt.)
func TestWaitMarkSurvivesOtherSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("6000 sessions; host/session's TestReadersFloodKeepsPlaces is the short form")
	}
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	conn.Write([]byte("login ok\r\nrouter> \xff\xf9")) // a prompt, with a GA
	if got := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 5000}); got["reason"] != "prompt" {
		t.Fatalf("first wait: %v, want the prompt", got)
	}
	for range 6000 {
		srv.dropPending()
		other := mustCall(t, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": srv.port()})["sessionId"].(string)
		mustCall(t, cs, "send_keys", map[string]any{"session_id": other, "text": "x"})
		mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": other})
	}
	if got := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 300}); got["reason"] != "timeout" {
		t.Fatalf("second wait on the same session: %v, want a timeout (the first wait consumed the prompt)", got)
	}
	conn.Write([]byte("show version\r\nrouter> \xff\xf9"))
	if got := mustCall(t, cs, "wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 5000}); got["reason"] != "prompt" {
		t.Fatalf("wait for a new prompt: %v", got)
	}
}
