package mcp_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
)

// A client that asks for progress gets notifications while a read waits.
func TestLongWaitSendsProgress(t *testing.T) {
	var notes atomic.Int32
	var lastTotal atomic.Int64
	_, cs := newHostClient(t, host.Config{}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			notes.Add(1)
			lastTotal.Store(int64(req.Params.Total))
		},
	})
	srv := newRawServer(t)
	id, _ := connect(t, cs, srv)
	params := &sdk.CallToolParams{Name: "telnet_read", Arguments: map[string]any{"sessionId": id, "until": "never", "timeoutMs": 3500}}
	params.SetProgressToken("read-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("read: %v %v", err, res)
	}
	if n := notes.Load(); n < 2 {
		t.Fatalf("%d progress notifications during a 3.5 s wait, want at least 2", n)
	}
	if lastTotal.Load() != 3500 {
		t.Fatalf("progress total %d, want the wait's 3500 ms", lastTotal.Load())
	}
	// Without a token, none.
	notes.Store(0)
	mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "until": "never", "timeoutMs": 1200})
	if notes.Load() != 0 {
		t.Fatal("progress sent without a progressToken")
	}
}

// notifications/cancelled on a waiting call stops the wait; the session
// and the server carry on.
func TestCancelStopsWaitingRead(t *testing.T) {
	h, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	sess, err := h.Sessions.Get("", id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the server is waiting.
		for deadline := time.Now().Add(10 * time.Second); sess.Info().Waiting == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "telnet_read", Arguments: map[string]any{"sessionId": id, "exit": true, "timeoutMs": 60000}})
	if err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	// The server's wait ended too (go-sdk sent notifications/cancelled).
	for deadline := time.Now().Add(5 * time.Second); sess.Info().Waiting != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the server is still waiting after the call was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn.Write([]byte("still here"))
	if got := readText(t, cs, id, "still here"); got != "still here" {
		t.Fatalf("after cancel: %q", got)
	}
}
