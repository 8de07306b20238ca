package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/mcp"
	"github.com/termhost/termhost/internal/testutil"
)

// newAskViewHost is newViewHost (the telnet and vt plugins behind an
// httptest server) with the local programs ask_secret types into.
func newAskViewHost(t *testing.T, askPrograms ...string) (*host.Host, string) {
	t.Helper()
	plugins := fstest.MapFS{}
	for _, p := range []string{"telnet/telnet.wasm", "vt/vt.wasm"} {
		b, err := os.ReadFile("../../plugins/" + p)
		if err != nil {
			t.Fatalf("plugin %s: %v", p, err)
		}
		plugins[p] = &fstest.MapFile{Data: b}
	}
	h, err := host.New(context.Background(), host.Config{Plugins: plugins, CacheDir: testCacheDir(), AskPrograms: askPrograms})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.MCP.HTTPHandler(mcp.HTTPOptions{Token: testToken}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		h.Close()
	})
	return h, srv.URL
}

// fakeRouter is a device a hijacked agent runs in a session of its own:
// a prompt, and an enable that asks for a password and prints what it
// got reversed.
const fakeRouter = `
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print("PORT=%d" % s.getsockname()[1], flush=True)
c, _ = s.accept()
c.sendall(b"\r\nedge-r1>")
buf = b""
while True:
    d = c.recv(1024)
    if not d:
        break
    buf += d
    while b"\r" in buf:
        line, buf = buf.split(b"\r", 1)
        line = bytes(b for b in line if 32 <= b < 127).decode()
        if line == "enable":
            c.sendall(b"\r\nPassword: ")
        elif line:
            print("GOT:" + line[::-1], flush=True)
            c.sendall(b"\r\nedge-r1#")
        else:
            c.sendall(b"\r\nedge-r1>")
`

// TestSetModeAsksOnlyWhereAskSecretTypes (issue 33, item 1): a login
// without a credential asks the person only where ask_secret would type:
// set_mode to a "device" that a session of the server started (a
// listener of the agent's) is refused before any page is made, naming
// the program that holds it.
func TestSetModeAsksOnlyWhereAskSecretTypes(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = testutil.NeedProgram(t, "python3")
	}
	a := newAskHost(t, `{"version":"1.0","credentials":[]}`)
	lid := mustCall(t, a.cs, "launch_app", map[string]any{"command": py, "args": []string{"-u", "-c", fakeRouter}})["session_id"].(string)
	testutil.Eventually(t, 10*time.Second, "the listener's port", func() bool { return strings.Contains(viewText(t, a.cs, lid), "PORT=") })
	m := regexp.MustCompile(`PORT=(\d+)`).FindStringSubmatch(viewText(t, a.cs, lid))
	port, _ := strconv.Atoi(m[1])
	id := mustCall(t, a.cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "cisco_ios"})["sessionId"].(string)
	mustCall(t, a.cs, "telnet_read", map[string]any{"sessionId": id, "until": `edge-r1>\s*$`, "timeoutMs": 10000})
	result := make(chan testutil.Result, 1)
	go func() {
		result <- testutil.CallTool(a.cs, 60*time.Second, "set_mode", map[string]any{"sessionId": id, "mode": "privileged"})
	}()
	select {
	case url := <-a.urls:
		t.Errorf("the person was sent a page for a device the agent runs: %s", url)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("secret=Set-Mode-Secret-5&confirm=yes"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", a.base)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		if testutil.Poll(10*time.Second, func() bool { return strings.Contains(viewText(t, a.cs, lid), "GOT:5-terceS") }) {
			t.Error("the agent's listener got the secret")
		}
	case r := <-result: // an error, or a result that says it stopped at the enable
		if r.Err != nil || !strings.Contains(r.Text, "python") || !strings.Contains(r.Text, "sessions started") || strings.Contains(r.Text, `"mode":"privileged"`) {
			t.Fatalf("set_mode: %+v", r)
		}
		t.Log(r.Text)
	case <-time.After(60 * time.Second):
		t.Fatal("set_mode neither asked nor ended")
	}
}
