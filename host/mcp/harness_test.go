package mcp_test

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/mcp/mcptest"

	"github.com/termhost/termhost/host"
)

// newHost starts a host with the real telnet plugin and connects go-sdk's
// client to it over the in-memory transport.
func newHost(t testing.TB, cfg host.Config) (*host.Host, *sdk.ClientSession) {
	t.Helper()
	return newHostClient(t, cfg, nil)
}

// newHostClient is newHost with client options (notification handlers).
func newHostClient(t testing.TB, cfg host.Config, copts *sdk.ClientOptions) (*host.Host, *sdk.ClientSession) {
	t.Helper()
	ctx := context.Background()
	cfg.Plugins = os.DirFS("../../plugins/telnet")
	if cfg.CacheDir == "" {
		cfg.CacheDir = testCacheDir()
	}
	h, err := host.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := h.MCP.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Close()
		h.Close()
	})
	return h, cs
}

func testCacheDir() string {
	dir, err := testCacheBase()
	if err != nil {
		return "off"
	}
	// Each test binary its own cache: the registry prunes entries of other
	// wazero versions, and test binaries report their wazero version as
	// "dev" while the real binary knows it.
	return dir + "/termhost/wazero-test-hostmcp"
}

var (
	call     = mcptest.Call
	mustCall = mcptest.MustCall
)

// rawServer is a bare TCP server: tests write exactly the bytes a Telnet
// server would, and see exactly what the client sent.
type rawServer struct {
	ln    net.Listener
	conns chan net.Conn
	mu    sync.Mutex
	all   []net.Conn
}

func newRawServer(t testing.TB) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, conns: make(chan net.Conn, 128)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.all = append(s.all, c)
			s.mu.Unlock()
			s.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.all {
			c.Close()
		}
		s.mu.Unlock()
	})
	return s
}

func (s *rawServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *rawServer) accept(t testing.TB) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// connect opens a session to the raw server and returns its id and the
// server side of the connection.
func connect(t testing.TB, cs *sdk.ClientSession, s *rawServer) (string, net.Conn) {
	t.Helper()
	res := mustCall(t, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": s.port()})
	id, _ := res["sessionId"].(string)
	if id == "" {
		t.Fatalf("no sessionId in %v", res)
	}
	return id, s.accept(t)
}

// readBytes reads (base64) until n bytes have arrived or 5 s passed.
func readBytes(t testing.TB, cs *sdk.ClientSession, id string, n int) []byte {
	t.Helper()
	var got []byte
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "encoding": "base64", "idleMs": 20, "timeoutMs": 1000, "maxBytes": 1 << 20})
		b, err := base64.StdEncoding.DecodeString(res["data"].(string))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	return got
}

// readText reads (utf8) until the text contains want or 5 s passed.
func readText(t testing.TB, cs *sdk.ClientSession, id, want string) string {
	t.Helper()
	var got strings.Builder
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(got.String(), want) && time.Now().Before(deadline) {
		res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "idleMs": 20, "timeoutMs": 1000})
		got.WriteString(res["data"].(string))
	}
	return got.String()
}

// recvExactly reads n bytes from the server side of a connection.
func recvExactly(t testing.TB, c net.Conn, n int) []byte {
	t.Helper()
	buf := make([]byte, n)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := 0
	for got < n {
		k, err := c.Read(buf[got:])
		got += k
		if err != nil {
			t.Fatalf("server read %d of %d bytes: %v", got, n, err)
		}
	}
	return buf
}
