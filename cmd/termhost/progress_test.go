package main

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProgressAndCancelOverStdio: a waiting read of the built binary sends
// progress notifications when the client asks for them, and stops when
// the client cancels it (the next read of the session, which would wait
// behind it, answers at once).
func TestProgressAndCancelOverStdio(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	var progress atomic.Int32
	waiting := make(chan struct{}, 1)
	cs := startServeWith(t, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		progress.Add(1)
		if req.Params.ProgressToken == "p2" {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
	}}, "--log-level", "info")
	id := mustCall(t, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": ln.Addr().(*net.TCPAddr).Port})["sessionId"].(string)

	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{
		Name: "telnet_read", Arguments: map[string]any{"sessionId": id, "until": "never", "timeoutMs": 2500},
		Meta: sdk.Meta{"progressToken": "p1"},
	})
	if err != nil || res.IsError {
		t.Fatalf("read: %v %v", res, err)
	}
	if n := progress.Load(); n < 2 {
		t.Fatalf("%d progress notifications during a 2.5 s wait; want one a second", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		cs.CallTool(ctx, &sdk.CallToolParams{Name: "telnet_read", Arguments: map[string]any{"sessionId": id, "exit": true, "timeoutMs": 300000},
			Meta: sdk.Meta{"progressToken": "p2"}})
		close(done)
	}()
	// Cancel once the read is waiting (its progress says so). Reads of a
	// session are served in turn, so the read below would hang behind it
	// if the wait went on.
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the long read never reported progress")
	}
	cancel()
	<-done
	start := time.Now()
	r := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "until": "never", "timeoutMs": 100})
	if r["reason"] != "timeout" || time.Since(start) > 5*time.Second {
		t.Fatalf("a read after the cancelled one: %v after %v (the cancelled wait goes on)", r, time.Since(start))
	}
}
