package main

import (
	"os"
	"testing"
	"time"
)

// BenchmarkServerMemoryEmptyCache: BenchmarkServerMemory's idle server on
// a fresh machine — an empty compilation cache each time, so nothing the
// cache could give back is there. The embedded plugins are compiled and
// checked when a session first needs them (plugin.Config.CheckOnUse), one
// at a time: the idle server's peak, and then what the first Telnet
// session costs (its plugins compiled from scratch).
func BenchmarkServerMemoryEmptyCache(b *testing.B) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		b.Skip("busybox not installed")
	}
	requireProc(b)
	port := busyboxTelnetd(b, "/bin/sh")

	var idleRSS, idleHWM, sessHWM, connect []float64
	for b.Loop() {
		s := startMemServer(b, b.TempDir())
		s.c.request(b, "tools/list", map[string]any{})
		time.Sleep(5 * time.Second)
		st := s.settled(b)
		idleRSS, idleHWM = append(idleRSS, st.rss), append(idleHWM, st.hwm)
		start := time.Now()
		id := s.c.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
		connect = append(connect, ms(time.Since(start)))
		s.c.call(b, "telnet_read", map[string]any{"sessionId": id, "until": `[#$] $`, "timeoutMs": 10000})
		s.c.call(b, "telnet_disconnect", map[string]any{"sessionId": id})
		st = s.settled(b)
		sessHWM = append(sessHWM, st.hwm)
		b.Logf("empty cache: idle %.1f MiB (peak %.1f); first telnet_connect %.0f ms, peak with the session %.1f MiB",
			idleRSS[len(idleRSS)-1], idleHWM[len(idleHWM)-1], connect[len(connect)-1], st.hwm)
		s.stop()
	}
	spread(b, idleRSS, "MiB-idle-rss")
	spread(b, idleHWM, "MiB-idle-peak")
	spread(b, connect, "ms-first-connect")
	spread(b, sessHWM, "MiB-session-peak")
}
