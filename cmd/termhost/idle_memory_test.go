package main

// Idle sessions' memory (issue 19, item 3): what an idle Telnet or bash
// session costs the server once it has settled, and that a screen evicted
// from the shared vt instance reads the same when it is rebuilt.

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// idleSettle is how long sessions sit idle before the reading (the issue
// measured after a 10 s settle).
const idleSettle = 10 * time.Second

// BenchmarkIdleSessionSettled: the server's resident memory per idle
// session, 10 s after the last one opened: Telnet sessions to a loopback
// BusyBox telnetd shell, and bash sessions under a PTY with a short
// scrollback (a listing of about a screenful). The baseline is read after
// one session of the kind (its plugins compiled), settled the same way.
// TERMHOST_IDLE_SESSIONS sets the number (default 50);
// TERMHOST_IDLE_PROFILE=DIR saves the heap and goroutine profiles there.
func BenchmarkIdleSessionSettled(b *testing.B) {
	n := 50
	if v, err := strconv.Atoi(os.Getenv("TERMHOST_IDLE_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	b.Run("telnet", func(b *testing.B) {
		if _, err := os.Stat("/bin/busybox"); err != nil {
			b.Skip("busybox not installed")
		}
		port := freePort(b)
		cmd := exec.Command("/bin/busybox", "telnetd", "-F", "-b", "127.0.0.1", "-p", strconv.Itoa(port), "-l", "/bin/sh")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		time.Sleep(200 * time.Millisecond)
		idleMemory(b, n, func(h *hostProc) string {
			id := h.connect(port)
			h.must("telnet_read", map[string]any{"sessionId": id, "until": `[$#] $`, "timeoutMs": 10000})
			return id
		})
	})
	b.Run("bash", func(b *testing.B) {
		if _, err := exec.LookPath("bash"); err != nil {
			b.Skip("bash missing")
		}
		idleMemory(b, n, func(h *hostProc) string {
			id := h.must("launch_app", map[string]any{"command": "bash", "env": map[string]string{"HOME": b.TempDir(), "PS1": `\$ `}})["session_id"].(string)
			h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 20000})
			h.must("send_keys", map[string]any{"session_id": id, "text": "ls -l /usr/bin | head -40", "keys": "Enter", "prompt": true, "timeoutMs": 20000})
			return id
		})
	})
}

// idleMemory opens one session with open, settles, reads the server's
// RSS, opens n more, settles and reports the growth per session.
func idleMemory(b *testing.B, n int, open func(h *hostProc) string) {
	for b.Loop() {
		h := startHost(b, "--log-level", "info", "--debug-addr", "127.0.0.1:0", "--max-sessions", strconv.Itoa(n+10))
		addr := pprofAddr(b, h)
		open(h)
		time.Sleep(idleSettle)
		before, g0 := h.rssKiB(), goroutines(b, addr)
		for range n {
			open(h)
		}
		time.Sleep(idleSettle)
		after, g1 := h.rssKiB(), goroutines(b, addr)
		b.ReportMetric(float64(after-before)/float64(n), "KiB/session")
		b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/session")
		b.ReportMetric(float64(after)/1024, "MiB-total")
		b.Logf("RSS %d KiB after one session, %d KiB after %d more (%.0f KiB each); goroutines %d → %d; heap: %s",
			before, after, n, float64(after-before)/float64(n), g0, g1, soakHeap(addr))
		if dir := os.Getenv("TERMHOST_IDLE_PROFILE"); dir != "" {
			for _, p := range []string{"heap", "goroutine"} {
				saveProfile(b, addr, p, filepath.Join(dir, b.Name()[len("BenchmarkIdleSessionSettled/"):]+"."+p))
			}
		}
		h.stop()
	}
}

func (h *hostProc) rssKiB() int64 {
	v, err := procStatusBytes(h.pid, "VmRSS")
	if err != nil {
		h.t.Fatal(err)
	}
	return v >> 10
}

func pprofAddr(t testing.TB, h *hostProc) string {
	t.Helper()
	re := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/debug/pprof/`)
	var addr string
	if !testutil.Poll(10*time.Second, func() bool {
		if m := re.FindStringSubmatch(h.logs.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}) {
		t.Fatalf("no profiler address in the log")
	}
	return addr
}

func goroutines(t testing.TB, addr string) int {
	t.Helper()
	n, err := soakGoroutines(addr)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func saveProfile(t testing.TB, addr, name, path string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile(path, p, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s profile: %s", name, path)
}
