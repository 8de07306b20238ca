package main

// Issue 33 item 7: a session's slot is free when the call that closes it
// answers. 100 parallel telnet_disconnect calls answered, then 100
// parallel telnet_connect calls got 4 RESOURCE_LIMIT errors: an open
// counted twice against the live limit (reserved and registered) from
// the moment it was registered until its call returned.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// parallelCalls makes n calls of tool at once, args(i) for the i-th, and
// returns the results in order.
func (h *hostProc) parallelCalls(n int, tool string, args func(i int) map[string]any) []callResult {
	out := make([]callResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = h.call(60*time.Second, tool, args(i)) })
	}
	wg.Wait()
	return out
}

// TestSlotsFreeWhenDisconnectAnswers: open the live limit's 100 Telnet
// sessions at once, disconnect them all at once, and once every
// disconnect has answered open 100 again at once: none is refused. Four
// rounds: the double count this caught lasted only while an open's call
// was returning (host/session TestOpenCountsOnce catches it every time).
func TestSlotsFreeWhenDisconnectAnswers(t *testing.T) {
	h := startHost(t)
	peer := startPeer(t, 0, sink)
	connect := func(int) map[string]any { return map[string]any{"host": "127.0.0.1", "port": peer.port} }
	open := func(round string) []string {
		t.Helper()
		ids := make([]string, 0, 100)
		var bad []string
		for i, r := range h.parallelCalls(100, "telnet_connect", connect) {
			if r.isErr {
				bad = append(bad, r.String())
				continue
			}
			if id, _ := r.res["sessionId"].(string); id != "" {
				ids = append(ids, id)
			} else {
				bad = append(bad, fmt.Sprintf("call %d: no sessionId: %v", i, r))
			}
		}
		if len(bad) > 0 {
			limits := 0
			for _, b := range bad {
				if strings.Contains(b, "RESOURCE_LIMIT") {
					limits++
				}
			}
			t.Fatalf("%s: %d of 100 parallel telnet_connect calls failed (%d with RESOURCE_LIMIT; the limit is 100 live sessions), the first: %s",
				round, len(bad), limits, bad[0])
		}
		return ids
	}
	for round := range 4 {
		what := "the first 100 sessions"
		if round > 0 {
			what = fmt.Sprintf("100 sessions right after 100 parallel disconnects answered (round %d)", round)
		}
		ids := open(what)
		for i, r := range h.parallelCalls(len(ids), "telnet_disconnect", func(i int) map[string]any { return map[string]any{"sessionId": ids[i]} }) {
			if r.isErr || r.res["disconnected"] != true {
				t.Fatalf("telnet_disconnect %s: %v", ids[i], r)
			}
		}
	}
}
