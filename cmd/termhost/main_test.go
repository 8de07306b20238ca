package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/internal/devsim"

	"github.com/termhost/termhost/internal/testutil"
)

// binary is termhost built once for the whole test binary, so end-to-end
// tests run the real program over stdio, as an MCP client would.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "termhost-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "termhost")
	// Recordings a test makes without naming a directory go here, not
	// into the user's ~/.local/share (a test that checks the default
	// sets XDG_DATA_HOME itself).
	if os.Getenv("XDG_DATA_HOME") == "" {
		os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	}
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building termhost:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cacheDir is the built binary's compilation cache: under
// TERMHOST_CACHE_DIR when set (make test sets it to a directory it removes
// afterwards), else in the user cache directory, so that repeated `go test`
// runs do not compile the plugins again.
func cacheDir() string {
	d := os.Getenv("TERMHOST_CACHE_DIR")
	if d == "" {
		var err error
		if d, err = os.UserCacheDir(); err != nil {
			return "off"
		}
	}
	return filepath.Join(d, "termhost", "wazero-test-e2e")
}

// startServe starts `termhost serve` with args and connects go-sdk's client to
// it over stdio.
func startServe(t testing.TB, args ...string) *sdk.ClientSession {
	t.Helper()
	cs, _ := startServeLogs(t, args...)
	return cs
}

// startServeLogs is startServe that also returns the server's log (stderr).
func startServeLogs(t testing.TB, args ...string) (*sdk.ClientSession, *lockedWriter) {
	t.Helper()
	return startServeClient(t, nil, args...)
}

// startServeWith is startServe with client options (notification handlers).
func startServeWith(t testing.TB, opts *sdk.ClientOptions, args ...string) *sdk.ClientSession {
	t.Helper()
	cs, _ := startServeClient(t, opts, args...)
	return cs
}

func startServeClient(t testing.TB, opts *sdk.ClientOptions, args ...string) (*sdk.ClientSession, *lockedWriter) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--cache-dir", cacheDir(), "--log-level", "debug"}, args...)...)
	logs := &lockedWriter{b: &strings.Builder{}}
	cmd.Stderr = logs
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to termhost serve: %v\nstderr:\n%s", err, logs)
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("termhost stderr:\n%s", logs.String())
		}
	})
	return cs, logs
}

var (
	call     = testutil.Call
	mustCall = testutil.MustCall
)

// expect reads with the given wait options and checks the reason and that
// the data contains want.
func expect(t testing.TB, cs *sdk.ClientSession, args map[string]any, reason, want string) string {
	t.Helper()
	res := mustCall(t, cs, "telnet_read", args)
	data, _ := res["data"].(string)
	if res["reason"] != reason || !strings.Contains(data, want) {
		t.Fatalf("telnet_read %v: reason %v, data %q; want reason %s and %q", args, res["reason"], data, reason, want)
	}
	return data
}

// startDevsim starts the device simulator on loopback for the test and
// returns its host and port.
func startDevsim(t testing.TB, cfg devsim.Config) (string, int) {
	t.Helper()
	dev, err := devsim.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	h, p, _ := net.SplitHostPort(dev.Addr())
	port, _ := strconv.Atoi(p)
	return h, port
}
