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
