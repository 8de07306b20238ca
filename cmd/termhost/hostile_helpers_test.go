package main

// Helpers for the hostile tests (hostile_test.go): start the built binary
// with flags and know its pid, call tools with a bound on the answer time,
// read the server's resources from /proc, speak raw JSON-RPC, and build
// test plugins.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// memGuard is the resident size at which a test kills the server it
// started: far above what any hostile test allows, low enough that a server
// reading /dev/zero into memory cannot take the machine down with it.
const memGuard = 1 << 30

// hostProc is one `termhost serve` started by a test, with its pid.
type hostProc struct {
	t     testing.TB
	cmd   *exec.Cmd
	cs    *sdk.ClientSession
	pid   int
	logs  *lockedWriter
	stdin io.Closer

	guardMsg  atomic.Pointer[string] // set when the memory guard killed it
	maxRSS    atomic.Int64           // largest VmRSS the guard saw
	stopGuard chan struct{}

	stopOnce sync.Once

	seen transcript // every result and error returned (leak_test.go)

	progMu   sync.Mutex
	progress map[string]int // progress notifications seen, per token
	updated  func(uri string)
}

// onUpdated sets what to do on notifications/resources/updated.
func (h *hostProc) onUpdated(f func(uri string)) {
	h.progMu.Lock()
	h.updated = f
	h.progMu.Unlock()
}

// startHost starts `termhost serve` with args, waits for initialize and
// fails the test if that takes more than 20 s.
func startHost(t testing.TB, args ...string) *hostProc {
	t.Helper()
	h, took, err := startHostWithin(t, 20*time.Second, args...)
	if err != nil {
		t.Fatalf("termhost serve %s: initialize did not complete (after %v): %v%s", strings.Join(args, " "), took.Round(time.Millisecond), err, h.diag())
	}
	return h
}

// startHostWithin starts the server itself (so the pid is known) and
// connects go-sdk's client over its pipes, giving initialize at most within.
// It returns how long initialize took. On error the process is still
// cleaned up by the test.
func startHostWithin(t testing.TB, within time.Duration, args ...string) (*hostProc, time.Duration, error) {
	t.Helper()
	return startHostFull(t, within, nil, args...)
}

// startHostEnv is startHost with extra environment variables.
func startHostEnv(t testing.TB, env []string, args ...string) *hostProc {
	t.Helper()
	h, took, err := startHostFull(t, 20*time.Second, env, args...)
	if err != nil {
		t.Fatalf("termhost serve: initialize did not complete (after %v): %v%s", took, err, h.diag())
	}
	return h
}

func startHostFull(t testing.TB, within time.Duration, env []string, args ...string) (*hostProc, time.Duration, error) {
	t.Helper()
	requireProc(t)
	h := &hostProc{t: t, logs: &lockedWriter{b: &strings.Builder{}}, stopGuard: make(chan struct{}), progress: map[string]int{}}
	h.cmd = exec.Command(binary, append([]string{"serve", "--cache-dir", cacheDir(), "--log-level", "debug"}, args...)...)
	h.cmd.Stderr = h.logs
	if env != nil {
		h.cmd.Env = append(os.Environ(), env...)
	}
	stdin, err := h.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.pid = h.cmd.Process.Pid
	h.stdin = stdin
	t.Cleanup(h.checkLeaks) // runs after cleanup: the log is complete
	t.Cleanup(h.cleanup)
	go h.guard()
	client := sdk.NewClient(&sdk.Implementation{Name: "hostile", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			h.progMu.Lock()
			h.progress[fmt.Sprint(req.Params.ProgressToken)]++
			h.progMu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			h.progMu.Lock()
			f := h.updated
			h.progMu.Unlock()
			if f != nil {
				f(req.Params.URI)
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	start := time.Now()
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		return h, time.Since(start), err
	}
	h.cs = cs
	return h, time.Since(start), nil
}

// guard kills the server when its resident memory passes memGuard.
func (h *hostProc) guard() {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-h.stopGuard:
			return
		case <-tick.C:
		}
		rss, err := procStatusBytes(h.pid, "VmRSS")
		if err != nil {
			return // gone
		}
		if rss > h.maxRSS.Load() {
			h.maxRSS.Store(rss)
		}
		if rss > memGuard {
			msg := fmt.Sprintf("MEMORY GUARD: termhost reached %d MB resident (guard %d MB) and was killed by the test", rss>>20, memGuard>>20)
			h.guardMsg.Store(&msg)
			h.cmd.Process.Kill()
			return
		}
	}
}

// diag is appended to failure messages: the guard's verdict, if it fired.
func (h *hostProc) diag() string {
	if h == nil {
		return ""
	}
	if m := h.guardMsg.Load(); m != nil {
		return "\n" + *m
	}
	return ""
}

// stop ends the server now (the test's cleanup would otherwise).
func (h *hostProc) stop() { h.cleanup() }

func (h *hostProc) cleanup() { h.stopOnce.Do(h.doCleanup) }

func (h *hostProc) doCleanup() {
	select {
	case <-h.stopGuard:
	default:
		close(h.stopGuard)
	}
	if h.cs != nil {
		h.cs.Close()
	}
	h.stdin.Close() // the server exits when its client goes away
	waited := make(chan struct{})
	go func() { h.cmd.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		h.t.Logf("note: termhost did not exit within 5 s of its client going away; killed")
		h.cmd.Process.Kill()
		<-waited
	}
	if m := h.guardMsg.Load(); m != nil {
		h.t.Error(*m)
	}
	if h.t.Failed() {
		logs := h.logs.String()
		if len(logs) > 20000 {
			logs = "…" + logs[len(logs)-20000:]
		}
		h.t.Logf("termhost stderr (tail):\n%s", logs)
	}
}

// callResult is one tool call's outcome.
type callResult struct {
	res     map[string]any // the JSON object result (nil on error)
	msg     string         // the error text, or the raw result text
	isErr   bool           // a tool error or a protocol error
	took    time.Duration
	expired bool // no answer within the bound: the client gave up (and cancelled)
}

func (r callResult) String() string {
	switch {
	case r.expired:
		return fmt.Sprintf("no answer within %v", r.took.Round(time.Millisecond))
	case r.isErr:
		return fmt.Sprintf("error after %v: %s", r.took.Round(time.Millisecond), clip(r.msg))
	}
	return fmt.Sprintf("result after %v: %s", r.took.Round(time.Millisecond), clip(r.msg))
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

// callCtx calls a tool under ctx; progress, if not empty, is the progress
// token to ask for.
func (h *hostProc) callCtx(ctx context.Context, tool string, args any, progress string) callResult {
	start := time.Now()
	p := &sdk.CallToolParams{Name: tool, Arguments: args}
	if progress != "" {
		p.SetProgressToken(progress)
	}
	r, err := h.cs.CallTool(ctx, p)
	out := callResult{took: time.Since(start)}
	if err != nil {
		h.seen.add(err.Error())
		out.isErr, out.msg = true, err.Error()+h.diag()
		out.expired = ctx.Err() != nil
		return out
	}
	var text string
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	out.msg = text
	h.seen.add(text)
	if r.IsError {
		out.isErr = true
		return out
	}
	if err := json.Unmarshal([]byte(text), &out.res); err != nil {
		out.isErr, out.msg = true, fmt.Sprintf("result is not a JSON object: %q", clip(text))
	}
	return out
}

// call calls a tool and gives it at most within to answer.
func (h *hostProc) call(within time.Duration, tool string, args any) callResult {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return h.callCtx(ctx, tool, args, "")
}

// must calls a tool that must succeed within 30 s.
func (h *hostProc) must(tool string, args any) map[string]any {
	h.t.Helper()
	r := h.call(30*time.Second, tool, args)
	if r.isErr {
		h.t.Fatalf("%s %s: %v", tool, clip(fmtJSON(args)), r)
	}
	return r.res
}

// pluginsLoaded waits until the server has compiled its plugins (they load
// behind the first answer): plugins_list waits for them. Memory readings
// meant to exclude the loading come after it.
func (h *hostProc) pluginsLoaded() {
	h.t.Helper()
	h.must("plugins_list", map[string]any{})
}

// connect opens a telnet session to 127.0.0.1:port and returns its id.
func (h *hostProc) connect(port int, extra ...any) string {
	h.t.Helper()
	args := map[string]any{"host": "127.0.0.1", "port": port}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	return h.must("telnet_connect", args)["sessionId"].(string)
}

// alive checks that the server still answers tools/list promptly.
func (h *hostProc) alive(what string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := h.cs.ListTools(ctx, nil); err != nil {
		h.t.Fatalf("%s: the server no longer answers tools/list (after %v): %v%s", what, time.Since(start).Round(time.Millisecond), err, h.diag())
	}
}

// session returns the telnet_list entry of id (nil if absent).
func (h *hostProc) session(id string) map[string]any {
	h.t.Helper()
	for _, raw := range h.must("telnet_list", map[string]any{})["sessions"].([]any) {
		if e := raw.(map[string]any); e["sessionId"] == id {
			return e
		}
	}
	return nil
}

func (h *hostProc) progressSeen(token string) int {
	h.progMu.Lock()
	defer h.progMu.Unlock()
	return h.progress[token]
}

// --- /proc -----------------------------------------------------------------

// requireProc skips when there is no /proc to measure the server with.
func requireProc(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: cannot observe the server process")
	}
}

// procStatusBytes reads a kB field of /proc/<pid>/status (VmRSS, VmHWM) in
// bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// rssMB is the server's resident memory now, in MB.
func (h *hostProc) rssMB() int64 {
	h.t.Helper()
	b, err := procStatusBytes(h.pid, "VmRSS")
	if err != nil {
		h.t.Fatalf("reading the server's VmRSS: %v%s", err, h.diag())
	}
	return b >> 20
}

// peakMB is the server's peak resident memory so far (VmHWM), in MB; if the
// process is gone, the largest size the guard saw.
func (h *hostProc) peakMB() int64 {
	b, err := procStatusBytes(h.pid, "VmHWM")
	if err != nil {
		return h.maxRSS.Load() >> 20
	}
	return b >> 20
}

// cpuTicks is utime+stime of the process in clock ticks (1/100 s on Linux).
func cpuTicks(pid int) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/<pid>/stat")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("short /proc/<pid>/stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return u + st, nil
}

const ticksPerSecond = 100 // USER_HZ on Linux

// sockets counts the socket file descriptors the process holds.
func sockets(pid int) (int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n, nil
}

// --- raw JSON-RPC over stdio -------------------------------------------------

// rawServer drives `termhost serve` with hand-written JSON-RPC lines, for
// frames go-sdk's client will not send (e.g. "arguments": null).
type rawServer struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
	logs  *lockedWriter
	mu    sync.Mutex
}

func startRaw(t testing.TB, args ...string) *rawServer {
	t.Helper()
	r := &rawServer{t: t, lines: make(chan []byte, 64), logs: &lockedWriter{b: &strings.Builder{}}}
	r.cmd = exec.Command(binary, append([]string{"serve", "--cache-dir", cacheDir(), "--log-level", "debug"}, args...)...)
	r.cmd.Stderr = r.logs
	var err error
	if r.in, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			r.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		r.in.Close()
		waited := make(chan struct{})
		go func() { r.cmd.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			r.cmd.Process.Kill()
			<-waited
		}
		if t.Failed() {
			t.Logf("termhost stderr:\n%s", r.logs.String())
		}
	})
	return r
}

// send writes one JSON-RPC message (a raw line when v is a string).
func (r *rawServer) send(v any) {
	r.t.Helper()
	var line []byte
	if s, ok := v.(string); ok {
		line = []byte(s)
	} else {
		var err error
		if line, err = json.Marshal(v); err != nil {
			r.t.Fatal(err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.in.Write(append(line, '\n')); err != nil {
		r.t.Fatalf("writing to termhost's stdin: %v (has it exited?)", err)
	}
}

// await returns the response with the given id, skipping notifications and
// other responses; it fails the test if none comes within the bound.
func (r *rawServer) await(id int, within time.Duration, what string) map[string]any {
	r.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("%s: termhost closed stdout (exited?) while we waited for the answer to request %d", what, id)
			}
			var msg map[string]any
			if err := json.Unmarshal(line, &msg); err != nil {
				r.t.Fatalf("termhost wrote a line that is not JSON: %q", clip(string(line)))
			}
			if got, ok := msg["id"].(float64); ok && int(got) == id {
				return msg
			}
		case <-timer.C:
			r.t.Fatalf("%s: no answer to request %d within %v", what, id, within)
		}
	}
}

// toolText extracts a tools/call response's outcome: isErr for a JSON-RPC
// error or an isError result, and the text.
func toolText(msg map[string]any) (text string, isErr bool) {
	if e, ok := msg["error"].(map[string]any); ok {
		return fmt.Sprint(e["message"], " ", fmtJSON(e["data"])), true
	}
	res, _ := msg["result"].(map[string]any)
	for _, c := range asSlice(res["content"]) {
		if m, ok := c.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				text += s
			}
		}
	}
	return text, res["isError"] == true
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// --- test plugins ------------------------------------------------------------

var (
	pluginMu    sync.Mutex
	pluginBuilt = map[string][]byte{}
)

// testPlugin builds ./testdata/<name> (a Go plugin with a manifest.json)
// to wasm once per test binary and returns the module; version, if not
// empty, overrides the manifest's.
func testPlugin(t testing.TB, name, version string) []byte {
	t.Helper()
	pluginMu.Lock()
	defer pluginMu.Unlock()
	key := name + "@" + version
	if b, ok := pluginBuilt[key]; ok {
		return b
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	args := []string{"run", "../../sdk/cmd/wasmbuild", "-o", out}
	if version != "" {
		args = append(args, "-version", version)
	}
	cmd := exec.Command("go", append(args, "./testdata/"+name)...)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building test plugin %s: %v\n%s", name, err, o)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pluginBuilt[key] = b
	return b
}

var (
	baselineOnce sync.Once
	baselinePeak int64
)

// baselinePeakMB is the peak resident size of a plain server (every
// embedded plugin compiled, from the test run's cache) after one Telnet
// round trip, measured once per test binary: memory bounds are set above
// what an ordinary server already takes, so they test what a hostile input
// adds, not what the plugins cost.
func baselinePeakMB(t *testing.T) int64 {
	t.Helper()
	baselineOnce.Do(func() {
		h := startHost(t)
		if msg := h.roundTrip(t); msg != "" {
			t.Fatalf("the reference server: %s", msg)
		}
		baselinePeak = h.peakMB()
		h.cleanup()
	})
	return baselinePeak
}
