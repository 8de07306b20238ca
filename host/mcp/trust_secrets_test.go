package mcp_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
)

// newHostWithCreds starts a host with the telnet and ssh plugins (the ssh
// group brings the credentials and send_secret) and a credentials file.
func newHostWithCreds(t *testing.T, creds string) *sdk.ClientSession {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "credentials.json")
	if err := os.WriteFile(path, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	plugins := fstest.MapFS{}
	for _, p := range []string{"telnet/telnet.wasm", "ssh/ssh.wasm"} {
		b, err := os.ReadFile("../../plugins/" + p)
		if err != nil {
			t.Skipf("plugin %s not built: %v", p, err)
		}
		plugins[p] = &fstest.MapFile{Data: b}
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Config{Plugins: plugins, CacheDir: testCacheDir(), CredentialsFile: path,
		RulesFile: filepath.Join(dir, "rules.json"), KnownHostsFile: filepath.Join(dir, "kh")})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := h.MCP.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close(); h.Close() })
	return cs
}

// TRUST-1: telnet_connect with a credential to a target it does not name
// is refused before anything is dialed, naming the credential's own
// target; send_secret into a session to another target types nothing.
func TestCredentialOnlyForItsTarget(t *testing.T) {
	const pass = "mcp-Trust-Pass-1"
	own, other := newRawServer(t), newRawServer(t)
	cs := newHostWithCreds(t, fmt.Sprintf(`{"version":"1.0","credentials":[{"id":"dev","host":"127.0.0.1","port":%d,"username":"u","password":%q}]}`,
		own.port(), base64.StdEncoding.EncodeToString([]byte(pass))))
	ownAddr := fmt.Sprintf("127.0.0.1:%d", own.port())
	_, msg, isErr := call(t, cs, "telnet_connect", map[string]any{"credentialId": "dev", "host": "127.0.0.1", "port": other.port()})
	if !isErr || !strings.Contains(msg, ownAddr) || !strings.Contains(msg, "credentialId") {
		t.Errorf("telnet_connect to another target: %v %q", isErr, msg)
	}
	select {
	case <-other.conns:
		t.Fatal("the other target was dialed")
	case <-time.After(300 * time.Millisecond):
	}
	// A session the agent opened to the other target: send_secret refused.
	id, peer := connect(t, cs, other)
	_, msg, isErr = call(t, cs, "send_secret", map[string]any{"sessionId": id, "credentialId": "dev", "field": "password"})
	if !isErr || !strings.Contains(msg, ownAddr) {
		t.Errorf("send_secret into a session to another target: %v %q", isErr, msg)
	}
	peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	got, _ := io.ReadAll(peer)
	if strings.Contains(string(got), pass) {
		t.Fatalf("the other target got the password: %q", got)
	}
}
