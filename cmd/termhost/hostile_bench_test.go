package main

// Benchmarks for the hostile cases (hostile_test.go). Run them with a fixed
// count, e.g. go test -run '^$' -bench Hostile -benchtime 2x ./cmd/termhost.

import (
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// BenchmarkHostileEndedSessionsRSS: the server's resident memory after 300
// sessions whose peer sent 1 MiB and hung up (item 10), once it has
// settled, and the sockets it still holds.
func BenchmarkHostileEndedSessionsRSS(b *testing.B) {
	p := startPeer(b, 0, burstThenClose(lines(1<<20)))
	var rss, socks int64
	for b.Loop() {
		h := startHost(b)
		connectEnded(b, h, p.port, 300)
		testutil.Poll(10*time.Second, func() bool {
			n, err := sockets(h.pid)
			socks = int64(n)
			return err != nil || n <= 8
		})
		// Memory given back to the system lags the discards: read it once
		// it has stopped falling (at most 10 s).
		last := h.rssMB()
		testutil.Poll(10*time.Second, func() bool {
			time.Sleep(200 * time.Millisecond) // spacing between readings
			now := h.rssMB()
			settled := now >= last
			last = now
			return settled
		})
		rss = max(rss, last)
		h.stop()
	}
	b.ReportMetric(float64(rss), "MB-RSS")
	b.ReportMetric(float64(socks), "sockets")
}

// BenchmarkHostileSendToNonReader: the worst answer time of a 10 MiB
// telnet_send to a peer that never reads, with the default write timeout
// (item 4). A send that does not answer within 60 s counts as 60 s.
func BenchmarkHostileSendToNonReader(b *testing.B) {
	h := startHost(b)
	p := startPeer(b, 4096, nonReader)
	big := string(letters(10<<20, 'A'))
	var worst time.Duration
	for b.Loop() {
		id := h.connect(p.port)
		r := h.call(60*time.Second, "telnet_send", map[string]any{"sessionId": id, "command": big})
		if r.expired {
			b.Errorf("a 10 MiB send to a peer that never reads: no answer within 60 s")
		}
		worst = max(worst, r.took)
		h.call(10*time.Second, "telnet_disconnect", map[string]any{"sessionId": id})
	}
	b.ReportMetric(worst.Seconds(), "s-worst")
}
