package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
)

// buildTelnet builds the telnet plugin with another manifest version.
func buildTelnet(t testing.TB, version string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "telnet.wasm")
	cmd := exec.Command("go", "run", "../../sdk/cmd/wasmbuild", "-version", version, "-o", out, "../../plugins/telnet")
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wasmbuild: %v\n%s", err, o)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// place writes data into dir/name the way editors and wasmbuild do: a
// temporary file renamed over the target.
func place(t testing.TB, dir, name string, data []byte) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// TestHotReloadLiveSession replaces the telnet plugin under a live session
// of the built binary: the session keeps working on the new version; then a
// corrupt file is rejected and the new version keeps serving.
func TestHotReloadLiveSession(t *testing.T) {
	h, port := startDevsim(t, devsim.Config{NoLogin: true, EOR: true})
	dir := t.TempDir()
	// Replacing the first-party telnet plugin needs its pin (given at
	// start: the build is made first).
	next := buildTelnet(t, "1.0.1-reload")
	cs, logs := startServeLogs(t, append([]string{"--plugin-dir", dir}, pinArgs(t, next)...)...)

	id := mustCall(t, cs, "telnet_connect", map[string]any{"host": h, "port": port})["sessionId"].(string)
	expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "edge-r1>")
	if !servedBy(t, cs, "1.0.0") {
		t.Fatal("the session is not on the embedded telnet 1.0.0")
	}

	place(t, dir, "telnet.wasm", next)
	deadline := time.Now().Add(20 * time.Second)
	for !servedBy(t, cs, "1.0.1-reload") {
		if time.Now().After(deadline) {
			t.Fatalf("the live session never moved to 1.0.1-reload: %v", mustCall(t, cs, "plugins_list", map[string]any{}))
		}
		// Sessions move between chunks: keep this one talking.
		mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": ""})
		expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "edge-r1>")
	}
	// The migrated session still speaks Telnet: EOR prompt marks (an option
	// negotiated on the old version) and commands work.
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo after-reload-" + strconv.Itoa(port)})
	expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "after-reload-"+strconv.Itoa(port))

	// Corrupt files: garbage, and a truncated copy of a real plugin.
	good := buildTelnet(t, "1.0.2-never")
	place(t, dir, "telnet.wasm", []byte("this is not webassembly"))
	place(t, dir, "telnet2.wasm", good[:len(good)/2])
	// Both were looked at (and refused) once the log says so.
	for deadline := time.Now().Add(20 * time.Second); strings.Count(logs.String(), "plugin file rejected") < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the corrupt files were never looked at")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !servedBy(t, cs, "1.0.1-reload") {
		t.Fatalf("a corrupt file replaced the working version: %v", mustCall(t, cs, "plugins_list", map[string]any{}))
	}
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo still-fine"})
	expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "still-fine")
	for _, raw := range mustCall(t, cs, "plugins_list", map[string]any{})["plugins"].([]any) {
		if v := raw.(map[string]any)["version"].(string); strings.Contains(v, "never") {
			t.Fatalf("the truncated plugin was loaded: %v", raw)
		}
	}
}

// TestReadmePluginGuide follows the README's plugin guide: build the upper
// example into a plugin directory, chain it after telnet, then hot-load a
// new version while the session is live; the shout count moves with it.
func TestReadmePluginGuide(t *testing.T) {
	h, port := startDevsim(t, devsim.Config{NoLogin: true, EOR: true})
	dir := t.TempDir()
	build := func(version string) []byte {
		out := filepath.Join(t.TempDir(), "upper.wasm")
		if o, err := exec.Command("go", "run", "../../sdk/cmd/wasmbuild", "-version", version, "-o", out, "../../sdk/examples/upper").CombinedOutput(); err != nil {
			t.Fatalf("wasmbuild: %v\n%s", err, o)
		}
		b, _ := os.ReadFile(out)
		return b
	}
	place(t, dir, "upper.wasm", build("1.0.0"))
	cs := startServe(t, "--plugin-dir", dir)

	id := mustCall(t, cs, "telnet_connect", map[string]any{"host": h, "port": port, "plugins": []string{"upper"}})["sessionId"].(string)
	expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "EDGE-R1>")
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo hello there!"})
	res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000})
	if !strings.Contains(res["data"].(string), "HELLO THERE!") || !strings.Contains(fmtJSON(res["events"]), `"count":1`) {
		t.Fatalf("upper 1.0.0: %v", res)
	}

	place(t, dir, "upper.wasm", build("1.1.0"))
	deadline := time.Now().Add(20 * time.Second)
	for !pluginServes(t, cs, "upper", "1.1.0") {
		if time.Now().After(deadline) {
			t.Fatalf("the session never moved to upper 1.1.0: %v", mustCall(t, cs, "plugins_list", map[string]any{}))
		}
		mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": ""})
		mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000})
	}
	mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo again!"})
	res = mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000})
	if !strings.Contains(res["data"].(string), "AGAIN!") || !strings.Contains(fmtJSON(res["events"]), `"count":2`) {
		t.Fatalf("after the reload the count did not carry over: %v", res)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
