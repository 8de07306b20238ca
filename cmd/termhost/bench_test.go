package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// against a loopback BusyBox telnetd shell, measured against its floor: in
// the same run, interleaved, a raw TCP client (TCP_NODELAY, QUICKACK
// re-armed after every read, as termhost's TCP link does) does the same
// echo against the same telnetd. Reports both p50s and their ratio.
func BenchmarkRoundTripBusyBox(b *testing.B) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		b.Skip("busybox not installed")
	}
	port := freePort(b)
	cmd := exec.Command("/bin/busybox", "telnetd", "-F", "-b", "127.0.0.1", "-p", strconv.Itoa(port), "-l", "/bin/sh")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitListening(b, port)
	raw := dialRaw(b, port)
	defer raw.Close()
	cs := startServe(b, "--log-level", "info") // as users run it
	id := mustCall(b, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
	mustCall(b, cs, "telnet_read", map[string]any{"sessionId": id, "until": `[#$] $`, "timeoutMs": 10000})
	var samples, floor []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		want := "rt" + strconv.Itoa(i) + "x"
		floor = append(floor, raw.roundTrip(b, want))
		start := time.Now()
		mustCall(b, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo " + want})
		res := mustCall(b, cs, "telnet_read", map[string]any{"sessionId": id, "until": "\n" + want + `\r?\n.*[#$] $`, "timeoutMs": 10000})
		samples = append(samples, time.Since(start))
		if res["reason"] != "matched" {
			b.Fatalf("round trip %d: %v", i, res)
		}
	}
	percentiles(b, samples, "ms")
	percentiles(b, floor, "ms-raw")
	b.ReportMetric(float64(median(samples))/float64(median(floor)), "x-floor-p50")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// rawClient is the floor of a round trip: a bare TCP client that does what
// termhost's TCP link does on the wire and nothing else.
type rawClient struct {
	*net.TCPConn
	buf []byte
}

func dialRaw(b *testing.B, port int) *rawClient {
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		b.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	r := &rawClient{TCPConn: tc, buf: make([]byte, 32<<10)}
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
		link.QuickAck(r.TCPConn)
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
			var samples []time.Duration
			for b.Loop() {
				if !warm {
					os.RemoveAll(dir)
				}
				samples = append(samples, coldStart(b, dir))
			}
			percentiles(b, samples, "ms")
		})
	}
}

func coldStart(b *testing.B, cache string) time.Duration {
	start := time.Now()
	cmd := exec.Command(binary, "serve", "--cache-dir", cache, "--log-level", "error")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	cs.Close()
	return d
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
	cs := startServe(b, "--plugin-dir", dir)
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
