package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/devsim"
)

// percentiles reports p50 and p99 of the samples as benchmark metrics.
func percentiles(b *testing.B, samples []time.Duration, unit string) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	p := func(q float64) float64 {
		return float64(samples[int(q*float64(len(samples)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.50), "p50-"+unit)
	b.ReportMetric(p(0.99), "p99-"+unit)
}

// BenchmarkRoundTripBusyBox: telnet_send → telnet_read(until) over stdio
// against a loopback BusyBox telnetd shell, measured against its floor. In
// one run, each interleaved with the floor, it times:
//   - raw: a bare TCP client through termhost's own TCP link (link.TCP:
//     TCP_NODELAY, QUICKACK after every write, raw system calls) doing the same echo against the
//     same telnetd — the floor;
//   - lean: termhost driven by a minimal JSON-RPC client (one line out,
//     one line in, encoding/json) — what termhost itself costs;
//   - sdk: termhost driven by go-sdk's MCP client, whose own cost per call
//     (its JSON handling) is a large part of the whole.
//
// It reports each p50 and p99 and the ratios of the p50s to the floor.
func BenchmarkRoundTripBusyBox(b *testing.B) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		b.Skip("busybox not installed")
	}
	port := busyboxTelnetd(b, "/bin/sh")
	raw := dialRaw(b, port)
	defer raw.Close()
	lean := startLean(b, "--log-level", "info") // as users run it
	leanID := lean.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	lean.call(b, "telnet_read", map[string]any{"sessionId": leanID, "until": `[#$] $`, "timeoutMs": 10000})
	cs := startServe(b, "--log-level", "info")
	id := mustCall(b, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	mustCall(b, cs, "telnet_read", map[string]any{"sessionId": id, "until": `[#$] $`, "timeoutMs": 10000})
	// Two phases, each interleaved with its own floor: go-sdk's client
	// makes garbage in this process that would slow the others' samples.
	var viaLean, viaSDK, floorLean, floorSDK []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		want := "rt" + strconv.Itoa(i) + "x"
		floorLean = append(floorLean, raw.roundTrip(b, want))
		start := time.Now()
		lean.call(b, "telnet_send", map[string]any{"sessionId": leanID, "command": "echo " + want})
		res := lean.call(b, "telnet_read", map[string]any{"sessionId": leanID, "until": "\n" + want + `\r?\n.*[#$] $`, "timeoutMs": 10000})
		viaLean = append(viaLean, time.Since(start))
		if res["reason"] != "matched" {
			b.Fatalf("round trip %d (lean client): %v", i, res)
		}
	}
	for i := range len(viaLean) {
		want := "rs" + strconv.Itoa(i) + "x"
		floorSDK = append(floorSDK, raw.roundTrip(b, want))
		start := time.Now()
		mustCall(b, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo " + want})
		res := mustCall(b, cs, "telnet_read", map[string]any{"sessionId": id, "until": "\n" + want + `\r?\n.*[#$] $`, "timeoutMs": 10000})
		viaSDK = append(viaSDK, time.Since(start))
		if res["reason"] != "matched" {
			b.Fatalf("round trip %d (go-sdk client): %v", i, res)
		}
	}
	percentiles(b, floorLean, "ms-raw")
	percentiles(b, viaLean, "ms-lean")
	percentiles(b, viaSDK, "ms-sdk")
	b.ReportMetric(float64(median(viaLean))/float64(median(floorLean)), "x-floor-lean")
	b.ReportMetric(float64(median(viaSDK))/float64(median(floorSDK)), "x-floor-sdk")
}

// leanClient speaks MCP over the stdio of `termhost serve` with nothing
// but newline-delimited JSON-RPC, one call at a time.
type leanClient struct {
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startLean(b *testing.B, args ...string) *leanClient {
	cmd := exec.Command(binary, append([]string{"serve", "--cache-dir", cacheDir()}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	c := &leanClient{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	c.request(b, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "lean", "version": "1"}})
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return c
}

func (c *leanClient) request(b *testing.B, method string, params any) json.RawMessage {
	c.id++
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		b.Fatal(err)
	}
	for {
		got, err := c.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("%s: %v", method, err)
		}
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(got, &m) != nil || m.ID != c.id {
			continue // a notification
		}
		if m.Error != nil {
			b.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
}

// call runs a tool and returns its JSON object result.
func (c *leanClient) call(b *testing.B, tool string, args map[string]any) map[string]any {
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	json.Unmarshal(c.request(b, "tools/call", map[string]any{"name": tool, "arguments": args}), &r)
	if r.IsError || len(r.Content) != 1 {
		b.Fatalf("%s: %+v", tool, r)
	}
	var out map[string]any
	json.Unmarshal([]byte(r.Content[0].Text), &out)
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// rawClient is the floor of a round trip: a bare TCP client that does what
// termhost's TCP link does on the wire and nothing else.
type rawClient struct {
	link.TCP
	buf []byte
}

func dialRaw(b *testing.B, port int) *rawClient {
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		b.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	r := &rawClient{TCP: link.NewTCP(tc), buf: make([]byte, 32<<10)}
	r.readUntil(b, func(p []byte) bool { return bytes.HasSuffix(p, []byte("# ")) || bytes.HasSuffix(p, []byte("$ ")) })
	return r
}

func (r *rawClient) readUntil(b *testing.B, done func([]byte) bool) {
	var got []byte
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	for !done(got) {
		n, err := r.Read(r.buf)
		if err != nil {
			b.Fatalf("raw client: %v (got %q)", err, got)
		}
		got = append(got, r.buf[:n]...)
	}
}

func (r *rawClient) roundTrip(b *testing.B, want string) time.Duration {
	start := time.Now()
	if _, err := r.Write([]byte("echo " + want + "\r\n")); err != nil {
		b.Fatal(err)
	}
	marker := []byte("\n" + want)
	r.readUntil(b, func(p []byte) bool {
		i := bytes.Index(p, marker)
		return i >= 0 && (bytes.HasSuffix(p, []byte("# ")) || bytes.HasSuffix(p, []byte("$ ")))
	})
	return time.Since(start)
}

// BenchmarkColdStart: process start to the initialize answer plus
// tools/list, with an empty and with a warm compilation cache.
func BenchmarkColdStart(b *testing.B) {
	for _, warm := range []bool{false, true} {
		name := "empty-cache"
		if warm {
			name = "warm-cache"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			if warm {
				coldStart(b, dir) // fill it
			}
			var samples, inits, lists, first, loaded []time.Duration
			for b.Loop() {
				if !warm {
					os.RemoveAll(dir)
				}
				t := coldStart(b, dir)
				samples = append(samples, t.answered)
				inits = append(inits, t.initialized)
				lists = append(lists, t.answered-t.initialized)
				first = append(first, t.session)
				loaded = append(loaded, t.loaded)
			}
			percentiles(b, samples, "ms")
			for _, m := range []struct {
				d    []time.Duration
				unit string
			}{
				{inits, "initialize-p50-ms"}, {lists, "tools-list-p50-ms"},
				{first, "first-session-p50-ms"}, {loaded, "plugins-loaded-p50-ms"},
			} {
				sort.Slice(m.d, func(i, j int) bool { return m.d[i] < m.d[j] })
				b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds())/1000, m.unit)
			}
		})
	}
}

// coldStart returns how long the server took to answer initialize and
// tools/list, to open a first session (a PTY running cat: it waits for
// the vt plugin only) and to have loaded every plugin (plugins_list waits
// for them).
// startTimes are a cold start's moments, each since the process was
// started: initialize answered (go-sdk's Connect returns once it has the
// answer and has sent notifications/initialized), tools/list answered,
// the first session (launch_app cat) open, every plugin loaded.
type startTimes struct {
	initialized, answered, session, loaded time.Duration
}

func coldStart(b *testing.B, cache string) (t startTimes) {
	start := time.Now()
	cmd := exec.Command(binary, "serve", "--cache-dir", cache, "--log-level", "error")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	t.initialized = time.Since(start)
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	t.answered = time.Since(start)
	if r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "launch_app", Arguments: map[string]any{"command": "cat"}}); err != nil || r.IsError {
		b.Fatal(err, r)
	}
	t.session = time.Since(start)
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "plugins_list", Arguments: map[string]any{}}); err != nil {
		b.Fatal(err)
	}
	t.loaded = time.Since(start)
	cs.Close()
	return t
}

// BenchmarkIdleSessionMemory: growth of the server's resident memory per
// idle Telnet session, with 100 sessions open.
func BenchmarkIdleSessionMemory(b *testing.B) {
	h, port := startDevsim(b, devsim.Config{NoLogin: true, EOR: true})
	for b.Loop() {
		cmd := exec.Command(binary, "serve", "--cache-dir", cacheDir(), "--log-level", "error")
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		// One session first, so the plugin instances exist in both readings.
		first := mustCall(b, cs, "telnet_connect", map[string]any{"host": h, "port": port})["sessionId"].(string)
		mustCall(b, cs, "telnet_read", map[string]any{"sessionId": first, "prompt": true, "timeoutMs": 5000})
		before := steadyRSS(b, cmd.Process.Pid)
		for range 99 {
			id := mustCall(b, cs, "telnet_connect", map[string]any{"host": h, "port": port})["sessionId"].(string)
			mustCall(b, cs, "telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000})
		}
		after := steadyRSS(b, cmd.Process.Pid)
		b.ReportMetric(float64(after-before)/99/1024, "KiB/session")
		b.ReportMetric(float64(after)/1024/1024, "MiB-total-RSS")
		cs.Close()
	}
}

// steadyRSS reads the resident memory once it has stopped moving (two
// readings 50 ms apart within 1%, at most 5 s).
func steadyRSS(b *testing.B, pid int) int64 {
	last := rss(b, pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		now := rss(b, pid)
		if d := now - last; d*100 < last && -d*100 < last {
			return now
		}
		last = now
	}
	return last
}

func rss(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Skip("no /proc: cannot read resident memory")
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb * 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkHotReload: a new telnet.wasm renamed into the plugin directory
// until the live session is served by it.
func BenchmarkHotReload(b *testing.B) {
	h, port := startDevsim(b, devsim.Config{NoLogin: true, EOR: true})
	dir := b.TempDir()
	versions := []string{"1.0.0-a", "1.0.0-b"}
	built := map[string][]byte{}
	for _, v := range versions {
		out := filepath.Join(b.TempDir(), "telnet.wasm")
		if o, err := exec.Command("go", "run", "../../sdk/cmd/wasmbuild", "-version", v, "-o", out, "../../plugins/telnet").CombinedOutput(); err != nil {
			b.Fatalf("wasmbuild: %v\n%s", err, o)
		}
		built[v], _ = os.ReadFile(out)
	}
	cs := startServe(b, append([]string{"--plugin-dir", dir}, pinArgs(b, built[versions[0]], built[versions[1]])...)...)
	id := mustCall(b, cs, "telnet_connect", map[string]any{"host": h, "port": port})["sessionId"].(string)
	mustCall(b, cs, "telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000})
	var samples []time.Duration
	for i := 0; b.Loop(); i++ {
		v := versions[i%2]
		tmp := filepath.Join(dir, ".telnet.wasm.tmp")
		os.WriteFile(tmp, built[v], 0o644)
		start := time.Now()
		os.Rename(tmp, filepath.Join(dir, "telnet.wasm"))
		for {
			// The session moves at its next chunk: keep it talking.
			mustCall(b, cs, "telnet_send", map[string]any{"sessionId": id, "command": ""})
			if servedBy(b, cs, v) {
				break
			}
			if time.Since(start) > 20*time.Second {
				b.Fatalf("version %s never served the session", v)
			}
			time.Sleep(5 * time.Millisecond)
		}
		samples = append(samples, time.Since(start))
	}
	percentiles(b, samples, "ms")
}

// servedBy reports whether the live session runs telnet version v.
func servedBy(b testing.TB, cs *sdk.ClientSession, v string) bool {
	return pluginServes(b, cs, "telnet", v)
}

// pluginServes reports whether version v of plugin name serves one session.
func pluginServes(b testing.TB, cs *sdk.ClientSession, name, v string) bool {
	for _, raw := range mustCall(b, cs, "plugins_list", map[string]any{})["plugins"].([]any) {
		pl := raw.(map[string]any)
		if pl["name"] == name && pl["version"] == v && pl["sessions"].(float64) == 1 {
			return true
		}
	}
	return false
}

// BenchmarkToolsListSize reports the size of tools/list as the client
// receives it, and a token estimate (bytes/4).
func BenchmarkToolsListSize(b *testing.B) {
	cs := startServe(b)
	for b.Loop() {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		b.ReportMetric(float64(len(raw)), "bytes")
		b.ReportMetric(float64(len(raw))/4, "tokens-est")
	}
}

// BenchmarkToolCallLatency: one trivial tool call (telnet_list) over stdio,
// by a minimal JSON-RPC client, then as many by go-sdk's client (apart: its
// garbage would slow the other's samples in this process) — what a call
// costs in termhost, and what go-sdk's client adds to it.
func BenchmarkToolCallLatency(b *testing.B) {
	lean := startLean(b, "--log-level", "info")
	cs := startServe(b, "--log-level", "info")
	var viaLean, viaSDK []time.Duration
	for b.Loop() {
		start := time.Now()
		lean.call(b, "telnet_list", map[string]any{})
		viaLean = append(viaLean, time.Since(start))
	}
	for range len(viaLean) {
		start := time.Now()
		mustCall(b, cs, "telnet_list", map[string]any{})
		viaSDK = append(viaSDK, time.Since(start))
	}
	percentiles(b, viaLean, "ms-lean")
	percentiles(b, viaSDK, "ms-sdk")
}
