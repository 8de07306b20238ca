package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// acmeDevice is a made-up device no embedded dialect knows: a banner, an
// "edge-r1::> " prompt, "show status" with 30 lines paged by "-- next --"
// every 10, and "?? unknown verb" for anything else. It echoes what is
// typed and reads CR (NUL or LF after it ignored) as the end of a line.
func acmeDevice(t *testing.T) int {
	t.Helper()
	return startPeer(t, 0, func(c net.Conn, _ <-chan struct{}) { acmeServe(c) }).port
}

func acmeServe(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	const prompt = "edge-r1::> "
	fmt.Fprintf(c, "Acme OS 7.1 -- (c) Acme Corp\r\n\r\n%s", prompt)
	var line []byte
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		switch {
		case b == 0 || b == '\n':
		case b != '\r':
			line = append(line, b)
			c.Write([]byte{b})
		default:
			c.Write([]byte("\r\n"))
			cmd := strings.TrimSpace(string(line))
			line = line[:0]
			switch cmd {
			case "":
			case "show status":
				for i := 1; i <= 30; i++ {
					fmt.Fprintf(c, "port %02d  up  1000baseT  rx %d tx %d\r\n", i, i*1000, i*700)
					if i%10 == 0 && i < 30 {
						c.Write([]byte("-- next --"))
						k, err := r.ReadByte()
						for err == nil && (k == 0 || k == '\n') { // the rest of the CR NUL line end
							k, err = r.ReadByte()
						}
						if err != nil {
							return
						}
						c.Write([]byte("\r          \r"))
						if k != ' ' {
							break
						}
					}
				}
			default:
				fmt.Fprintf(c, "?? unknown verb '%s'\r\n", strings.Fields(cmd)[0])
			}
			c.Write([]byte(prompt))
		}
	}
}

// A new dialect dropped in live, as the README's guide does it: a JSON
// table (testdata/acme/acme_os.json) built into the dialect plugin, the
// build placed in the plugin directory of a running server. The session
// opened before knows nothing of the device; it moves to the new version
// and then recognises its prompt, pager and errors; a new session names the
// dialect.
func TestDialectDropInLive(t *testing.T) {
	port := acmeDevice(t)
	dir := t.TempDir()

	// Build the dialect plugin with the new table added (an overlay, so
	// the tree stays as it is), under a new version.
	table, _ := filepath.Abs("testdata/acme/acme_os.json")
	target, _ := filepath.Abs("../../plugins/dialect/core/dialects/acme_os.json")
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{target: table}})
	ovFile := filepath.Join(t.TempDir(), "overlay.json")
	os.WriteFile(ovFile, ov, 0o644)
	built := filepath.Join(t.TempDir(), "dialect.wasm")
	if o, err := exec.Command("go", "run", "../../sdk/cmd/wasmbuild", "-overlay", ovFile, "-version", "1.1.1-acme", "-o", built, "../../plugins/dialect").CombinedOutput(); err != nil {
		t.Fatalf("wasmbuild: %v\n%s", err, o)
	}
	wasm, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}

	// The build replaces the first-party dialect plugin: the server is
	// started with its pin (termhost plugins pin FILE prints it), and the
	// file dropped in while a session is live.
	h := startHost(t, append([]string{"--plugin-dir", dir}, pinArgs(t, wasm)...)...)
	old := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "auto"})["sessionId"].(string)
	h.must("wait_for", map[string]any{"session_id": old, "until": `::>\s*$`, "timeoutMs": 10000})
	if r := h.call(20*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "acme_os"}); !r.isErr {
		t.Fatalf("acme_os is known before it was dropped in: %v", r.res)
	}
	place(t, dir, "dialect.wasm", wasm)

	// The live session moves to the new version between two chunks.
	deadline := time.Now().Add(60 * time.Second)
	for !pluginServes(t, h.cs, "dialect", "1.1.1-acme") {
		if time.Now().After(deadline) {
			t.Fatalf("the live session never moved to the new dialect plugin: %v", h.must("plugins_list", map[string]any{}))
		}
		h.must("telnet_send", map[string]any{"sessionId": old, "command": ""})
		h.must("wait_for", map[string]any{"session_id": old, "until": `::>\s*$`, "timeoutMs": 10000})
	}
	check := func(id string) {
		t.Helper()
		r := h.must("run_command", map[string]any{"sessionId": id, "command": "show status", "timeoutMs": 10000})
		out, _ := r["output"].(string)
		if r["reason"] != "done" || r["dialect"] != "acme_os" || r["pages"] != 2.0 || strings.Count(out, "\n") != 30 ||
			strings.Contains(out, "next") || strings.Contains(out, "::>") || strings.Contains(out, "show status") {
			delete(r, "output")
			t.Fatalf("show status: %v, %d lines:\n%s", r, strings.Count(out, "\n"), out)
		}
		r = h.must("run_command", map[string]any{"sessionId": id, "command": "frobnicate now", "timeoutMs": 10000})
		if r["error"] != "?? unknown verb 'frobnicate'" {
			t.Errorf("an unknown verb: %v", r)
		}
	}
	check(old)
	fresh := h.must("telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "acme_os"})["sessionId"].(string)
	h.must("wait_for", map[string]any{"session_id": fresh, "until": `::>\s*$`, "timeoutMs": 10000})
	check(fresh)
}
