package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/internal/testutil"
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

// tb is what the helpers below need from a test. *testing.T has it, and so
// has *rapid.T: inside a property every helper is given the property's
// *rapid.T, so a failed assertion fails that case (rapid then shrinks it and
// prints a seed that replays it) and a cleanup runs when that case ends.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// The tool-call helpers (internal/testutil): callTool asserts nothing, so
// any goroutine may use it; call fails the test on a result not in MCP
// form, mustCall also on an error.
var (
	callTool = testutil.CallJSON
	call     = testutil.Call
	mustCall = testutil.MustCall
)

// rawServer is a bare TCP server: tests write exactly the bytes a Telnet
// server would, and see exactly what the client sent. One serves every case
// of a property; each case takes its own connections from it.
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

// accept returns the next connection, closed when t ends.
func (s *rawServer) accept(t tb) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(5 * time.Second):
		t.Fatalf("no connection accepted")
		return nil
	}
}

// dropPending closes connections accepted but never taken (left by a case
// that failed half-way), so the next accept returns the caller's own.
func (s *rawServer) dropPending() {
	for {
		select {
		case c := <-s.conns:
			c.Close()
		default:
			return
		}
	}
}

// connect opens a session to the raw server and returns its id and the
// server side of the connection. Both are closed when t ends.
func connect(t tb, cs *sdk.ClientSession, s *rawServer) (string, net.Conn) {
	t.Helper()
	return connectTo(t, cs, s, "127.0.0.1")
}

// connectTo is connect naming the server by host.
func connectTo(t tb, cs *sdk.ClientSession, s *rawServer, host string) (string, net.Conn) {
	t.Helper()
	s.dropPending()
	res := mustCall(t, cs, "telnet_connect", map[string]any{"host": host, "port": s.port()})
	id, _ := res["sessionId"].(string)
	if id == "" {
		t.Fatalf("no sessionId in %v", res)
	}
	t.Cleanup(func() { disconnect(cs, id) })
	return id, s.accept(t)
}

// disconnect closes a session, for cleanups: it asserts nothing.
func disconnect(cs *sdk.ClientSession, id string) {
	callTool(cs, "telnet_disconnect", map[string]any{"sessionId": id})
}

// decode turns a read's data back into bytes.
func decode(t tb, enc, data string) []byte {
	t.Helper()
	var b []byte
	var err error
	switch enc {
	case "base64":
		b, err = base64.StdEncoding.DecodeString(data)
	case "hex":
		b, err = hex.DecodeString(data)
	case "binary": // latin1: one rune per byte
		for _, r := range data {
			if r > 0xff {
				t.Fatalf("binary data holds %U", r)
			}
			b = append(b, byte(r))
		}
	default:
		b = []byte(data)
	}
	if err != nil {
		t.Fatalf("%s data %q: %v", enc, data, err)
	}
	return b
}

// readN reads with encoding enc until n bytes have arrived or 10 s passed;
// each read returns once output has been quiet for 2 ms.
func readN(t tb, cs *sdk.ClientSession, id, enc string, n int) []byte {
	t.Helper()
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); len(got) < n && time.Now().Before(deadline); {
		res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "encoding": enc, "idleMs": 2, "timeoutMs": 2000, "maxBytes": 1 << 20})
		got = append(got, decode(t, enc, res["data"].(string))...)
	}
	return got
}

// readText reads (utf8) until the text contains want or 5 s passed.
func readText(t tb, cs *sdk.ClientSession, id, want string) string {
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
func recvExactly(t tb, c net.Conn, n int) []byte {
	t.Helper()
	buf := make([]byte, n)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := 0
	for got < n {
		k, err := c.Read(buf[got:])
		got += k
		if err != nil {
			t.Fatalf("server read %d of %d bytes (% x): %v", got, n, buf[:got], err)
		}
	}
	return buf
}
