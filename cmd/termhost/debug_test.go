package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// TestDebugAddr: --debug-addr serves Go's profiler on loopback (issue 19),
// and refuses any other address.
func TestDebugAddr(t *testing.T) {
	_, logs := startServeLogs(t, "--debug-addr", "127.0.0.1:0")
	re := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/debug/pprof/`)
	var addr string
	if !testutil.Poll(10*time.Second, func() bool {
		m := re.FindStringSubmatch(logs.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}) {
		t.Fatalf("no profiler address in the log:\n%s", logs)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine profile") {
		t.Fatalf("goroutine profile: %d %.200s", resp.StatusCode, b)
	}
	for _, a := range []string{"0.0.0.0:6060", "192.0.2.1:6060", "6060"} {
		_, stderr, status := runBinary(t, nil, "serve", "--debug-addr", a)
		if status != 2 || !strings.Contains(stderr, "debug-addr") {
			t.Errorf("--debug-addr %s: status %d, %q", a, status, stderr)
		}
	}
}

// TestServeGovernsProcessors: serve starts on one processor (its
// governor logs each change at debug level), and leaves the number alone
// when GOMAXPROCS is set in its environment (issue 19, internal/procs).
func TestServeGovernsProcessors(t *testing.T) {
	const line = "processors for goroutines: 1"
	_, logs := startServeLogs(t)
	if !testutil.Poll(10*time.Second, func() bool { return strings.Contains(logs.String(), line) }) {
		t.Fatalf("no %q in the log:\n%s", line, logs)
	}
	t.Run("GOMAXPROCS set", func(t *testing.T) {
		t.Setenv("GOMAXPROCS", "2")
		cs, logs := startServeLogs(t)
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // past the governor's first tick
		if strings.Contains(logs.String(), "processors for goroutines") {
			t.Fatalf("GOMAXPROCS=2 in the environment, but the governor ran:\n%s", logs)
		}
	})
}
