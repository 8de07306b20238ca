package main

// Regression tests for the failures an adversarial run found. Each drives
// the built binary over stdio (go-sdk's client, or raw JSON-RPC lines where
// the client cannot send the frame) against hostile peers and plugin
// directories on this machine, and every wait is bounded. The issue item
// each test covers is named in its comment.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/testutil"
)

// writeTimeout is the --write-timeout most tests run with, to stay quick.
const writeTimeout = 2 * time.Second

var wtFlag = []string{"--write-timeout", writeTimeout.String()}

// roundTrip opens a session to a fresh device simulator and checks that a
// command and its answer go through; it reports what went wrong, or "".
func (h *hostProc) roundTrip(t *testing.T) string {
	t.Helper()
	_, port := startDevsim(t, devsim.Config{NoLogin: true, EOR: true})
	c := h.call(15*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})
	if c.isErr {
		return "telnet_connect to the device simulator: " + c.String()
	}
	id := c.res["sessionId"].(string)
	defer h.call(10*time.Second, "telnet_disconnect", map[string]any{"sessionId": id})
	r := h.call(15*time.Second, "telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 8000})
	if r.isErr || r.res["reason"] != "prompt" || !strings.Contains(fmt.Sprint(r.res["data"]), "edge-r1>") {
		return "reading the device's first prompt: " + r.String()
	}
	word := "rt-" + strconv.Itoa(port)
	if s := h.call(15*time.Second, "telnet_send", map[string]any{"sessionId": id, "command": "echo " + word}); s.isErr {
		return "telnet_send: " + s.String()
	}
	r = h.call(15*time.Second, "telnet_read", map[string]any{"sessionId": id, "until": word + `\r\n.*edge-r1>`, "timeoutMs": 8000})
	if r.isErr || r.res["reason"] != "matched" {
		return "reading the echo back: " + r.String()
	}
	return ""
}

// plugin returns plugins_list's current entry for name (nil if none).
func (h *hostProc) currentPlugin(name string) map[string]any {
	h.t.Helper()
	for _, raw := range h.must("plugins_list", map[string]any{})["plugins"].([]any) {
		p := raw.(map[string]any)
		if p["name"] == name && p["current"] == true {
			return p
		}
	}
	return nil
}

// bufferedSession connects to a peer and waits until at least n bytes are
// buffered unread on the session.
func (h *hostProc) bufferedSession(t *testing.T, port int, n int) string {
	t.Helper()
	id := h.connect(port)
	var unread float64
	if !testutil.Poll(15*time.Second, func() bool {
		e := h.session(id)
		unread, _ = e["unreadBytes"].(float64)
		return unread >= float64(n)
	}) {
		t.Fatalf("the peer's %d bytes never arrived (unreadBytes %v)", n, unread)
	}
	return id
}

// randLetters returns n random letters 'A'..'Z' (no Telnet escaping, and no
// period, so a gap in what a peer received cannot line up by chance).
func randLetters(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = 'A' + byte(rng.IntN(26))
	}
	return b
}

// firstDiff is the first offset where a and b differ (or the shorter
// length).
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// around shows b near offset i.
func around(b []byte, i int) string {
	lo, hi := max(0, i-8), min(len(b), i+8)
	return fmt.Sprintf("%q", b[lo:hi])
}

// lines returns about n bytes of CR LF terminated text without 0xFF.
func lines(n int) []byte {
	line := []byte("interface GigabitEthernet0/1 is up, line protocol is up\r\n")
	return bytes.Repeat(line, n/len(line)+1)[:n]
}

// TestHostileNullArguments (item 1): tools/call telnet_connect with
// "arguments": null (or no arguments at all) is answered with an error
// naming the missing host, and the server keeps serving: tools/list works
// and a session opened earlier still works.
func TestHostileNullArguments(t *testing.T) {
	p := startPeer(t, 0, sink)
	r := startRaw(t)
	r.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}})
	if msg := r.await(1, 20*time.Second, "initialize"); msg["error"] != nil {
		t.Fatalf("initialize: %v", fmtJSON(msg))
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"telnet_connect","arguments":{"host":"127.0.0.1","port":%d}}}`, p.port))
	text, isErr := toolText(r.await(2, 30*time.Second, "telnet_connect before the null frames"))
	if isErr {
		t.Fatalf("telnet_connect: %s", text)
	}
	var opened struct{ SessionID string }
	if err := json.Unmarshal([]byte(text), &opened); err != nil || opened.SessionID == "" {
		t.Fatalf("telnet_connect result %q", text)
	}

	id := 3
	for _, frame := range []struct{ what, params string }{
		{`"arguments": null`, `{"name":"telnet_connect","arguments":null}`},
		{`no "arguments"`, `{"name":"telnet_connect"}`},
	} {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, frame.params))
		text, isErr := toolText(r.await(id, 10*time.Second, "telnet_connect with "+frame.what))
		if !isErr || !strings.Contains(text, "host") {
			t.Errorf("telnet_connect with %s: isError=%v %q; want an error naming the missing field \"host\"", frame.what, isErr, clip(text))
		}
		id++
	}

	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
	if msg := r.await(id, 5*time.Second, "tools/list after the null frames"); len(asSlice(asMap(msg["result"])["tools"])) == 0 {
		t.Fatalf("tools/list after the null frames: %s", clip(fmtJSON(msg)))
	}
	id++
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"telnet_send","arguments":{"sessionId":%q,"command":"still here"}}}`, id, opened.SessionID))
	if text, isErr := toolText(r.await(id, 10*time.Second, "telnet_send on the earlier session")); isErr {
		t.Fatalf("the session opened before the null frames no longer works: %s", text)
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// TestHostilePluginDirFIFO (item 2a): a FIFO named x.wasm in the plugin
// directory at start-up does not stop initialize or sessions, and a FIFO
// that appears later does not stop the hot reload of a good plugin written
// after it.
func TestHostilePluginDirFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "x.wasm"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	h, took, err := startHostWithin(t, 10*time.Second, "--plugin-dir", dir)
	if err != nil {
		t.Fatalf("with a FIFO x.wasm in the plugin directory, initialize did not answer within 10 s (gave up after %v): %v%s", took.Round(time.Millisecond), err, h.diag())
	}
	if msg := h.roundTrip(t); msg != "" {
		t.Fatalf("with a FIFO x.wasm in the plugin directory, a telnet session does not work: %s", msg)
	}

	// A FIFO appears while serving. If the server opens it for reading,
	// give it a writer that never writes (the hostile case: open succeeds,
	// read blocks), then write a good plugin.
	fifo := filepath.Join(dir, "y.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var w *os.File
	testutil.Poll(3*time.Second, func() bool {
		// O_NONBLOCK write-open fails (ENXIO) until somebody has it open for reading.
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			w = f
		}
		return err == nil
	})
	if w != nil {
		t.Cleanup(func() { w.Close() })
		t.Log("the server opened the FIFO y.wasm for reading; holding its write end open without writing")
	}
	upper, err := os.ReadFile("../../sdk/examples/upper/upper.wasm")
	if err != nil {
		t.Fatal(err)
	}
	place(t, dir, "upper.wasm", upper)
	if !testutil.Poll(20*time.Second, func() bool { return h.currentPlugin("upper") != nil }) {
		t.Fatalf("after a FIFO y.wasm appeared in the plugin directory, upper.wasm (a good plugin) written afterwards was not loaded within 20 s: hot reload is stuck; plugins_list: %s", clip(fmtJSON(h.must("plugins_list", map[string]any{}))))
	}
	h.alive("after the FIFOs")
}

// TestHostilePluginDirHugeSparseFile (item 2b): a 1.5 GiB sparse file
// big.wasm in the plugin directory, at start-up and dropped in later, is
// rejected without the server reading it into memory.
func TestHostilePluginDirHugeSparseFile(t *testing.T) {
	const size = 3 << 29               // 1.5 GiB
	limitMB := baselinePeakMB(t) + 100 // reading the file would add 1,500
	dir := t.TempDir()
	sparse := func(name string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Skipf("cannot make a sparse file: %v", err)
		}
	}
	sparse("big.wasm")
	h := startHost(t, "--plugin-dir", dir)
	if peak := h.peakMB(); peak > limitMB {
		t.Errorf("with a 1.5 GiB sparse big.wasm in the plugin directory, the server's peak RSS at start-up was %d MB (limit %d MB): it read the file into memory", peak, limitMB)
	}
	if msg := h.roundTrip(t); msg != "" {
		t.Fatalf("with a 1.5 GiB big.wasm in the plugin directory, a telnet session does not work: %s%s", msg, h.diag())
	}

	// Dropped in while serving, then a good plugin after it.
	sparse("big2.wasm")
	upper, err := os.ReadFile("../../sdk/examples/upper/upper.wasm")
	if err != nil {
		t.Fatal(err)
	}
	place(t, dir, "upper.wasm", upper)
	if !testutil.Poll(30*time.Second, func() bool {
		if h.guardMsg.Load() != nil {
			return true
		}
		return h.currentPlugin("upper") != nil
	}) {
		t.Errorf("after a 1.5 GiB big2.wasm appeared, upper.wasm written afterwards was not loaded within 30 s")
	}
	if peak := h.peakMB(); peak > limitMB {
		t.Fatalf("after a 1.5 GiB sparse big2.wasm was dropped into the plugin directory, the server's peak RSS was %d MB (limit %d MB): it read the file into memory%s", peak, limitMB, h.diag())
	}
	for _, raw := range h.must("plugins_list", map[string]any{})["plugins"].([]any) {
		if src := fmt.Sprint(raw.(map[string]any)["source"]); strings.Contains(src, "big") {
			t.Errorf("a 1.5 GiB file of zeros was loaded as a plugin: %v", raw)
		}
	}
}

// TestHostilePluginDirDevZero (item 2c): a symlink zero.wasm → /dev/zero in
// the plugin directory: start-up succeeds, the server serves, and its
// memory stays bounded.
func TestHostilePluginDirDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	limitMB := baselinePeakMB(t) + 100
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.wasm")); err != nil {
		t.Fatal(err)
	}
	h, took, err := startHostWithin(t, 10*time.Second, "--plugin-dir", dir)
	if err != nil {
		t.Fatalf("with zero.wasm → /dev/zero in the plugin directory, initialize did not answer within 10 s (gave up after %v): %v%s", took.Round(time.Millisecond), err, h.diag())
	}
	if msg := h.roundTrip(t); msg != "" {
		t.Fatalf("with zero.wasm → /dev/zero in the plugin directory, a telnet session does not work: %s%s", msg, h.diag())
	}
	if peak := h.peakMB(); peak > limitMB {
		t.Errorf("with zero.wasm → /dev/zero in the plugin directory, the server's peak RSS was %d MB (limit %d MB: a plain server's peak + 100)", peak, limitMB)
	}
}

// TestHostilePluginFloodsUser (item 3): a plugin chained after telnet that
// emits 2.4 GiB toward the user per chunk must not drive the host's memory
// up: the session reports plugin_failed, and the server keeps serving.
//
// The bound is on the growth over the server's resident size before the
// flood (about 250 MB with every embedded plugin compiled): the flooding
// instance may use its 64 MiB, a fresh instance replaces it, and the Go
// heap has its slack; the host itself must copy none of the flood.
func TestHostilePluginFloodsUser(t *testing.T) {
	const growthMB = 220
	dir := t.TempDir()
	place(t, dir, "flood.wasm", testPlugin(t, "flood", ""))
	h := startHost(t, "--plugin-dir", dir)
	_, port := startDevsim(t, devsim.Config{NoLogin: true, EOR: true})
	h.pluginsLoaded()
	before := h.rssMB()
	id := h.connect(port, "plugins", []string{"flood"})

	var seen []string
	failed := false
	deadline := time.Now().Add(30 * time.Second)
	for !failed && time.Now().Before(deadline) {
		r := h.call(20*time.Second, "telnet_read", map[string]any{"sessionId": id, "waitMs": 1000})
		if r.isErr {
			t.Fatalf("telnet_read on the flood session: %v (peak RSS %d MB)", r, h.peakMB())
		}
		for _, e := range asSlice(r.res["events"]) {
			typ := fmt.Sprint(asMap(e)["type"])
			seen = append(seen, typ)
			failed = failed || typ == "plugin_failed"
		}
		if r.res["state"] == "terminated" {
			break
		}
	}
	t.Logf("resident size %d MB before the flood, peak %d MB", before, h.peakMB())
	if peak := h.peakMB(); peak-before > growthMB {
		t.Errorf("a plugin emitting 50 × 48 MiB per chunk drove the server's peak RSS from %d to %d MB (at most %d MB more)%s", before, peak, growthMB, h.diag())
	}
	if !failed {
		t.Errorf("the flood session never reported a plugin_failed event within 30 s; events seen: %v", seen)
	}
	h.alive("after the flood")
	if msg := h.roundTrip(t); msg != "" {
		t.Errorf("after the flood, a plain telnet session does not work: %s", msg)
	}
}

// checkStuckSendError checks a send to a stuck peer: an answer within bound that,
// if an error, says the peer stopped reading and how many bytes went out.
func checkStuckSendError(t *testing.T, what string, r callResult, bound time.Duration) {
	t.Helper()
	switch {
	case r.expired:
		t.Errorf("%s: no answer within %v (write timeout + 5 s): the send is stuck behind a peer that does not read", what, bound)
	case !r.isErr:
		t.Errorf("%s: succeeded (%s) although the peer never read", what, clip(r.msg))
	case !regexp.MustCompile(`(?i)stopped reading|timed out|timeout`).MatchString(r.msg) || !regexp.MustCompile(`\d+ (of \d+ )?bytes`).MatchString(r.msg):
		t.Errorf("%s: error %q; want it to say the peer stopped reading / the write timed out, and how many bytes were written", what, clip(r.msg))
	}
}

// TestHostileSendStuckPeer (item 4): sends toward peers that do not read
// answer within the write timeout plus a margin, and cancelling a stuck
// send leaves the server responsive.
func TestHostileSendStuckPeer(t *testing.T) {
	bound := writeTimeout + 5*time.Second
	h := startHost(t, wtFlag...)

	t.Run("non-reader", func(t *testing.T) {
		p := startPeer(t, 4096, nonReader)
		id := h.connect(p.port)
		big := string(letters(10<<20, 'A'))
		r := h.call(bound, "telnet_send", map[string]any{"sessionId": id, "command": big})
		checkStuckSendError(t, "a 10 MiB telnet_send to a peer that never reads", r, bound)
		r = h.call(bound, "telnet_send", map[string]any{"sessionId": id, "command": "abc"}) // 5 bytes with CR LF
		if r.expired {
			t.Errorf("a 5-byte telnet_send after the stuck one: no answer within %v", bound)
		}
	})

	t.Run("negotiation-flood", func(t *testing.T) {
		stalled := make(chan struct{}, 1)
		p := startPeer(t, 4096, negotiationFlood(stalled))
		id := h.connect(p.port)
		// Until the client has stopped reading the flood (its answers
		// filled the way toward a peer that does not read) or dropped the
		// connection; a server that keeps up may never get there.
		select {
		case <-stalled:
		case <-time.After(20 * time.Second):
			t.Log("the server kept reading the negotiation flood for 20 s")
		}
		r := h.call(bound, "telnet_send", map[string]any{"sessionId": id, "command": "twelve bytes"})
		if r.expired {
			t.Errorf("a 14-byte telnet_send to a peer flooding negotiation without reading: no answer within %v", bound)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		reached := make(chan struct{}, 1)
		stuck := startPeer(t, 4096, stallAfter(64<<10, reached))
		healthy := startPeer(t, 0, sink)
		stuckID := h.connect(stuck.port)
		okID := h.connect(healthy.port)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan callResult, 1)
		go func() {
			done <- h.callCtx(ctx, "telnet_send", map[string]any{"sessionId": stuckID, "command": string(letters(10<<20, 'A'))}, "")
		}()
		select {
		case <-reached: // the send is under way and the peer has stopped reading
		case r := <-done:
			t.Fatalf("the 10 MiB send answered before the peer stopped reading: %v", r)
		case <-time.After(15 * time.Second):
			t.Fatal("the peer never received the first 64 KiB of the send")
		}
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("go-sdk's client did not give up on a cancelled call within 5 s")
		}
		h.alive("after cancelling a stuck send")
		r := h.call(5*time.Second, "telnet_send", map[string]any{"sessionId": okID, "command": "fine"})
		if r.isErr {
			t.Errorf("after cancelling a stuck send, a send to a healthy session: %v", r)
		}
	})
}

// TestHostileSendStuckPeerDefaultWriteTimeout (item 4, default write
// timeout of 10 s): the same non-reading peer, no --write-timeout flag.
func TestHostileSendStuckPeerDefaultWriteTimeout(t *testing.T) {
	bound := 10*time.Second + 5*time.Second
	h := startHost(t)
	p := startPeer(t, 4096, nonReader)
	id := h.connect(p.port)
	r := h.call(bound, "telnet_send", map[string]any{"sessionId": id, "command": string(letters(10<<20, 'A'))})
	checkStuckSendError(t, "a 10 MiB telnet_send to a peer that never reads (default write timeout)", r, bound)
}

// TestHostileSendPausedReader (item 5): the peer stops reading for three
// write timeouts in the middle of an 8 MiB send, then reads everything.
// The send's result must not claim bytes that were not written: success
// means the peer got exactly the command and CR LF; an error must say how
// many bytes were written, and the peer must have received exactly that
// prefix, with no gap.
func TestHostileSendPausedReader(t *testing.T) {
	const wt = time.Second
	h := startHost(t, "--write-timeout", wt.String())
	recs := make(chan *recorder, 1)
	p := startPeer(t, 4096, recording(3*wt, recs))
	id := h.connect(p.port)
	var rec *recorder
	select {
	case rec = <-recs:
	case <-time.After(10 * time.Second):
		t.Fatal("the peer never saw the connection")
	}
	cmd := randLetters(8<<20, 5)
	want := append(append([]byte(nil), cmd...), '\r', '\n')
	r := h.call(60*time.Second, "telnet_send", map[string]any{"sessionId": id, "command": string(cmd)})
	if r.expired {
		t.Fatalf("the 8 MiB send did not answer within 60 s")
	}
	// Let the peer drain: until it has everything, the connection ends, or
	// nothing more arrives for 2 s.
	testutil.Poll(60*time.Second, func() bool {
		raw, eof, last := rec.snapshot()
		return eof || len(nvtData(raw)) >= len(want) || (!last.IsZero() && time.Since(last) > 2*time.Second)
	})
	got := rec.data()
	d := firstDiff(got, want)
	if !r.isErr {
		if !bytes.Equal(got, want) {
			t.Fatalf("the send reported success (%s) but the peer received %d of %d bytes, first difference at offset %d (got %s, want %s): bytes were claimed that were not written",
				clip(r.msg), len(got), len(want), d, around(got, d), around(want, d))
		}
		return
	}
	if d < len(got) {
		t.Fatalf("the send failed (%s) and the peer received %d bytes that are not a prefix of the command: first difference at offset %d (got %s, want %s): a gap in the stream",
			clip(r.msg), len(got), d, around(got, d), around(want, d))
	}
	claimed := false
	for _, n := range regexp.MustCompile(`\d+`).FindAllString(r.msg, -1) {
		if v, _ := strconv.Atoi(n); v == len(got) {
			claimed = true
		}
	}
	if !claimed {
		t.Fatalf("the send failed with %q, but the peer received %d bytes of it: the error must state how many bytes were written", clip(r.msg), len(got))
	}
}

// TestHostileLongCommandsExact (item 6): commands of k·65536+d bytes, around
// the 64 KiB chunks they travel through the plugin in, reach the peer
// exactly, followed by CR LF: no CR NUL, nothing lost.
func TestHostileLongCommandsExact(t *testing.T) {
	h := startHost(t)
	recs := make(chan *recorder, 1)
	p := startPeer(t, 0, recording(0, recs))
	for _, k := range []int{1, 2} {
		for d := -3; d <= 3; d++ {
			n := k*65536 + d
			t.Run("L="+strconv.Itoa(n), func(t *testing.T) {
				id := h.connect(p.port)
				defer h.call(10*time.Second, "telnet_disconnect", map[string]any{"sessionId": id})
				var rec *recorder
				select {
				case rec = <-recs:
				case <-time.After(10 * time.Second):
					t.Fatal("the peer never saw the connection")
				}
				cmd := randLetters(n, uint64(n))
				want := append(append([]byte(nil), cmd...), '\r', '\n')
				r := h.call(30*time.Second, "telnet_send", map[string]any{"sessionId": id, "command": string(cmd)})
				if r.isErr {
					t.Fatalf("telnet_send of %d bytes: %v", n, r)
				}
				if sent, _ := r.res["sentBytes"].(float64); int(sent) != len(want) {
					t.Errorf("sentBytes %v, want %d", r.res["sentBytes"], len(want))
				}
				testutil.Poll(10*time.Second, func() bool { return len(rec.data()) >= len(want) })
				got := rec.data()
				if i := firstDiff(got, want); i < len(want) || len(got) != len(want) {
					t.Fatalf("command of %d bytes: the peer received %d bytes, want %d (the command and CR LF); first difference at offset %d: got %s, want %s",
						n, len(got), len(want), i, around(got, i), around(want, i))
				}
			})
		}
	}
}

// TestHostileUntilRegex (item 7): an enormous until pattern is refused up
// front; an allowed but costly one is bounded by the read's timeout; and a
// cancelled read stops using CPU.
func TestHostileUntilRegex(t *testing.T) {
	const buffered = 256 << 10
	h := startHost(t)
	still := startPeer(t, 0, sendThenHold(letters(buffered, 'a'), 0))
	trickle := startPeer(t, 0, sendThenHold(letters(buffered, 'a'), 20*time.Millisecond))

	t.Run("huge-pattern-refused", func(t *testing.T) {
		id := h.bufferedSession(t, still.port, buffered)
		pat := strings.Repeat("[a-z]", 30000) + "Q"
		r := h.call(5*time.Second, "telnet_read", map[string]any{"sessionId": id, "until": pat, "timeoutMs": 100})
		if r.expired || !r.isErr || !strings.Contains(r.msg, "until") {
			t.Errorf("telnet_read with a 150 KB until pattern ([a-z]×30000 Q) on 256 KiB of letters: %v; want an argument error naming until, at once", r)
		}
	})

	// Costly patterns, most costly first; the first one the server accepts
	// is used for the CPU check.
	var accepted string
	t.Run("costly-pattern-bounded", func(t *testing.T) {
		for _, pat := range []string{`[a-z]{1000}Q`, `[a-z]{200}Q`} {
			id := h.bufferedSession(t, trickle.port, buffered)
			r := h.call(20*time.Second, "telnet_read", map[string]any{"sessionId": id, "until": pat, "timeoutMs": 100})
			h.call(10*time.Second, "telnet_disconnect", map[string]any{"sessionId": id})
			if r.isErr && !r.expired && strings.Contains(r.msg, "until") {
				t.Logf("until %q refused: %s", pat, clip(r.msg))
				continue
			}
			if r.expired || r.took > 3*time.Second {
				t.Errorf("telnet_read with until %q and timeoutMs 100 on 256 KiB of letters: %v; want an answer within 3 s: matching is not bounded by the read's timeout", pat, r)
			} else if r.isErr {
				t.Errorf("telnet_read with until %q and timeoutMs 100: %v", pat, r)
			}
			accepted = pat
			return
		}
		t.Log("no costly pattern was accepted")
	})

	t.Run("cancelled-read-stops-cpu", func(t *testing.T) {
		if accepted == "" {
			t.Skip("the server accepts no costly until pattern: nothing can burn")
		}
		id := h.bufferedSession(t, trickle.port, buffered)
		base, err := cpuTicks(h.pid)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan callResult, 1)
		go func() {
			done <- h.callCtx(ctx, "telnet_read", map[string]any{"sessionId": id, "until": accepted, "timeoutMs": 60000}, "")
		}()
		// Until the read has cost half a second of CPU (or 5 s went by:
		// a server that matches cheaply never gets there).
		testutil.Poll(5*time.Second, func() bool {
			c, err := cpuTicks(h.pid)
			return err != nil || c-base >= ticksPerSecond/2
		})
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("go-sdk's client did not give up on a cancelled call within 5 s")
		}
		time.Sleep(time.Second) // the server has ~1 s to stop
		c1, err1 := cpuTicks(h.pid)
		time.Sleep(time.Second) // the measurement window
		c2, err2 := cpuTicks(h.pid)
		if err1 != nil || err2 != nil {
			t.Fatalf("reading the server's CPU time: %v %v%s", err1, err2, h.diag())
		}
		if used := float64(c2-c1) / ticksPerSecond; used > 0.3 {
			t.Errorf("1 s after a cancelled telnet_read with until %q, the server still used %.2f s of CPU in the next second: the match keeps running", accepted, used)
		}
		h.alive("after the cancelled read")
	})
}

// readProgress reads repeatedly with waitMs 300 until the decoded data
// reaches want, failing on a spin (an immediate empty read that says
// hasMore) or when want is not reached within 8 s.
func readProgress(t *testing.T, h *hostProc, id, encoding, want string) {
	t.Helper()
	var got string
	var trail []string
	deadline := time.Now().Add(8 * time.Second)
	for got != want {
		if time.Now().After(deadline) {
			t.Fatalf("8 s after the peer went silent, reads have delivered %q, want %q (the dangling byte is never delivered); reads: %v", got, want, trail)
		}
		args := map[string]any{"sessionId": id, "waitMs": 300}
		if encoding != "" {
			args["encoding"] = encoding
		}
		r := h.call(10*time.Second, "telnet_read", args)
		if r.isErr {
			t.Fatalf("telnet_read: %v", r)
		}
		data, _ := r.res["data"].(string)
		if encoding == "base64" {
			b, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				t.Fatalf("base64 data %q: %v", data, err)
			}
			data = string(b)
		}
		trail = append(trail, fmt.Sprintf("%q/hasMore=%v/%v", data, r.res["hasMore"], r.took.Round(time.Millisecond)))
		if data == "" && r.res["hasMore"] == true && r.took < 50*time.Millisecond {
			t.Fatalf("telnet_read {waitMs: 300} returned after %v with no data and hasMore:true: a client following hasMore spins; reads so far: %v", r.took.Round(time.Millisecond), trail)
		}
		if len(trail) == 1 && !strings.HasPrefix(data, "abc") {
			t.Errorf("the first read returned %q, want \"abc\" (and, once the peer has been silent long enough, the dangling byte)", data)
		}
		got += data
		if len(got) > len(want) {
			t.Fatalf("reads delivered %q, want %q", got, want)
		}
	}
}

// TestHostileReadProgress (item 8): a dangling incomplete UTF-8 character
// at the end of the output is delivered once the peer stays silent, reads
// never spin, and maxBytes 1 on a two-byte character returns it whole.
func TestHostileReadProgress(t *testing.T) {
	h := startHost(t)
	dangling := startPeer(t, 0, sendThenHold([]byte("abc\xc3"), 0))
	accent := startPeer(t, 0, sendThenHold([]byte("é"), 0))

	t.Run("utf8", func(t *testing.T) {
		id := h.bufferedSession(t, dangling.port, 4)
		readProgress(t, h, id, "", "abc\uFFFD")
	})
	t.Run("base64", func(t *testing.T) {
		id := h.bufferedSession(t, dangling.port, 4)
		readProgress(t, h, id, "base64", "abc\xc3")
	})
	t.Run("maxBytes-1", func(t *testing.T) {
		id := h.bufferedSession(t, accent.port, 2)
		r := h.call(10*time.Second, "telnet_read", map[string]any{"sessionId": id, "maxBytes": 1})
		if r.isErr || r.res["data"] != "é" {
			t.Fatalf("telnet_read {maxBytes: 1} on a buffered \"é\": %v; want data \"é\" (a character is never split, so one that does not fit is returned whole)", r)
		}
	})
}

// TestHostileConcurrentUntil (item 9): two reads waiting at once on one
// session with the same until pattern are serialized: any result with
// reason "matched" holds a match, and the two together hold the output
// once.
func TestHostileConcurrentUntil(t *testing.T) {
	h := startHost(t)
	cue := make(chan string)
	p := startPeer(t, 0, sendOnCue(cue))
	id := h.connect(p.port)
	const pat = `token-\d+`
	results := make(chan callResult, 2)
	for _, tok := range []string{"r1", "r2"} {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			results <- h.callCtx(ctx, "telnet_read", map[string]any{"sessionId": id, "until": pat, "timeoutMs": 15000}, tok)
		}()
	}
	// Both reads are waiting once each has sent a progress notification
	// (a server that queues the second may not: go on after 4 s).
	testutil.Poll(4*time.Second, func() bool { return h.progressSeen("r1") > 0 && h.progressSeen("r2") > 0 })
	cueOrFail := func(s string) {
		select {
		case cue <- s:
		case <-time.After(10 * time.Second):
			t.Fatal("the peer did not take its cue")
		}
	}
	var got []callResult
	await := func() {
		select {
		case r := <-results:
			got = append(got, r)
		case <-time.After(30 * time.Second):
			t.Fatal("a read did not return within 30 s")
		}
	}
	cueOrFail("token-1\r\n")
	await()
	cueOrFail("token-2\r\n")
	await()
	re := regexp.MustCompile(pat)
	var all string
	for i, r := range got {
		if r.isErr {
			t.Fatalf("read %d: %v", i+1, r)
		}
		data, _ := r.res["data"].(string)
		all += data
		if r.res["reason"] == "matched" && !re.MatchString(data) {
			t.Errorf("read %d of two concurrent reads returned reason \"matched\" with data %q, which holds no match of %s", i+1, data, pat)
		}
	}
	if all != "token-1\r\ntoken-2\r\n" {
		t.Errorf("the two reads returned %q together, want %q (each byte once, in order)", all, "token-1\r\ntoken-2\r\n")
	}
}

// connectEnded opens n sessions (4 at a time, each ending before the next
// opens) to peer port, which sends a burst and hangs up, and waits until
// they have all ended.
func connectEnded(t testing.TB, h *hostProc, port, n int) []string {
	t.Helper()
	ids := make([]string, n)
	errs := make(chan string, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	fin := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { fin <- struct{}{} }()
			for i := range next {
				r := h.call(30*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})
				if r.isErr {
					errs <- fmt.Sprintf("connect #%d: %v", i, r)
					continue
				}
				ids[i] = r.res["sessionId"].(string)
				// Each worker lets its session end before the next: the
				// point is that ended sessions pile up, not live ones (a
				// session spends its 1 MiB in the screen as well).
				h.call(60*time.Second, "telnet_read", map[string]any{"sessionId": ids[i], "exit": true, "maxBytes": 1, "timeoutMs": 60000})
			}
		}()
	}
	for range 4 {
		<-fin
	}
	close(errs)
	var failed []string
	for e := range errs {
		failed = append(failed, e)
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d connects failed; first: %s", len(failed), n, failed[0])
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var live int
	if !testutil.Poll(120*time.Second, func() bool {
		live = 0
		for _, raw := range h.must("telnet_list", map[string]any{})["sessions"].([]any) {
			e := raw.(map[string]any)
			if want[fmt.Sprint(e["sessionId"])] && e["state"] != "terminated" {
				live++
			}
		}
		return live == 0
	}) {
		t.Fatalf("%d of %d sessions had not ended 120 s after their peer hung up", live, n)
	}
	return ids
}

// TestHostileEndedSessions (item 10): 300 sessions whose peer sends 1 MiB
// and hangs up. Ended sessions give back their sockets, memory stays
// bounded (the oldest ended sessions are discarded: reading one says
// "Session expired"), and they do not count against the live-session limit.
func TestHostileEndedSessions(t *testing.T) {
	const n = 300
	baseline := baselinePeakMB(t)
	h := startHost(t)
	p := startPeer(t, 0, burstThenClose(lines(1<<20)))
	before, err := sockets(h.pid)
	if err != nil {
		t.Fatal(err)
	}
	ids := connectEnded(t, h, p.port, n)

	var held int
	if !testutil.Poll(10*time.Second, func() bool {
		held, _ = sockets(h.pid)
		return held <= before+5
	}) {
		t.Errorf("10 s after %d sessions ended, the server still holds %d sockets (%d before): ended sessions keep their connections open", n, held, before)
	}
	// Memory given back to the system lags the discards a little.
	// The bound: a plain server's peak (every embedded plugin compiled),
	// the ended sessions' 64 MiB (buffers and frozen screens), the
	// plugins' pools, and what the collector has not yet returned on a
	// loaded machine. Keeping all 300 MiB would not pass.
	var rss int64
	limit := baseline + 200
	if !testutil.Poll(10*time.Second, func() bool { rss = h.rssMB(); return rss <= limit }) {
		t.Errorf("10 s after %d ended sessions of 1 MiB each, the server's RSS is %d MB (limit %d MB: a plain server's peak + 200): ended sessions are not bounded in bytes", n, rss, limit)
	}
	t.Logf("RSS after %d ended sessions: %d MB (peak %d MB)", n, rss, h.peakMB())
	r := h.call(10*time.Second, "telnet_read", map[string]any{"sessionId": ids[0]})
	if !r.isErr || !strings.Contains(r.msg, "Session expired") {
		t.Errorf("reading the oldest of %d ended sessions (1 MiB each): %v; want an error containing \"Session expired\" (it was discarded to bound memory)", n, r)
	}
	r = h.call(10*time.Second, "telnet_read", map[string]any{"sessionId": ids[n-1]})
	if n, _ := r.res["bytes"].(float64); r.isErr || n == 0 {
		t.Errorf("reading the newest ended session: %v; want its output", r)
	}

	// The live limit (100) still holds, and ended sessions do not use it up.
	live := startPeer(t, 0, sink)
	for i := range 100 {
		r := h.call(30*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": live.port})
		if r.isErr {
			t.Fatalf("live session %d of 100 (after %d ended ones): %v", i+1, n, r)
		}
	}
	r = h.call(30*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": live.port})
	if !r.isErr || !strings.Contains(r.msg, "RESOURCE_LIMIT") {
		t.Errorf("the 101st live session: %v; want a RESOURCE_LIMIT error", r)
	}
}

// TestHostileNumbers (item 11): numbers out of range, or beyond int64, are
// argument errors naming the field in the server's own voice, never a
// silently wrapped duration or a JSON decoder message.
func TestHostileNumbers(t *testing.T) {
	h := startHost(t)
	p := startPeer(t, 0, sink)
	id := h.connect(p.port)
	huge := json.Number("99999999999999999999")
	cases := []struct {
		tool, field string
		args        map[string]any
	}{
		{"telnet_read", "timeoutMs", map[string]any{"sessionId": id, "until": "x", "timeoutMs": json.Number("18446744073710")}},
		{"telnet_connect", "timeout", map[string]any{"host": "127.0.0.1", "port": p.port, "timeout": json.Number("1000000000000000000")}},
		{"telnet_connect", "timeout", map[string]any{"host": "127.0.0.1", "port": p.port, "timeout": json.Number("1e18")}},
		{"telnet_connect", "timeout", map[string]any{"host": "127.0.0.1", "port": p.port, "timeout": huge}},
		{"telnet_read", "waitMs", map[string]any{"sessionId": id, "waitMs": huge}},
		{"telnet_read", "timeoutMs", map[string]any{"sessionId": id, "timeoutMs": huge}},
		{"telnet_read", "idleMs", map[string]any{"sessionId": id, "idleMs": huge}},
		{"telnet_read", "maxBytes", map[string]any{"sessionId": id, "maxBytes": huge}},
	}
	for _, c := range cases {
		r := h.call(10*time.Second, c.tool, c.args)
		if !r.isErr || r.expired || !strings.Contains(r.msg, "invalid arguments") || !strings.Contains(r.msg, c.field) || strings.Contains(r.msg, "cannot unmarshal") {
			t.Errorf("%s %s: %v; want an \"invalid arguments\" error naming %s (not a JSON decoder message, not a wrapped value)", c.tool, clip(fmtJSON(c.args)), r, c.field)
		}
	}
	h.alive("after the numbers")
}

// TestHostileNames (item 12): session names are at most 64 printable
// characters; others are refused naming the field. IPv6 literals appear
// bracketed once in errors.
func TestHostileNames(t *testing.T) {
	h := startHost(t)
	p := startPeer(t, 0, sink)
	nameErr := regexp.MustCompile(`\bname\b`)
	for _, c := range []struct{ what, name string }{
		{"a NUL", "r1\x00x"},
		{"U+202E (right-to-left override)", "evil\u202Etxt.exe"},
		{"an escape character", "r1\x1b[31m"},
		{"65 characters", strings.Repeat("n", 65)},
		{"1 MB", strings.Repeat("a", 1<<20)},
	} {
		r := h.call(30*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": p.port, "name": c.name})
		if !r.isErr || !nameErr.MatchString(r.msg) {
			t.Errorf("telnet_connect with a name holding %s: %v; want an error naming the field name", c.what, r)
			if !r.isErr {
				h.call(10*time.Second, "telnet_disconnect", map[string]any{"sessionId": r.res["sessionId"]})
			}
		}
	}
	ok64 := strings.Repeat("n", 64)
	if r := h.call(30*time.Second, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": p.port, "name": ok64}); r.isErr {
		t.Errorf("telnet_connect with a name of 64 printable characters: %v; want it accepted", r)
	}

	port := freePort(t)
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	want := fmt.Sprintf("[::1]:%d", port)
	for _, host := range []string{"::1", "[::1]"} {
		r := h.call(20*time.Second, "telnet_connect", map[string]any{"host": host, "port": port})
		if !r.isErr || !strings.Contains(r.msg, want) || strings.Contains(r.msg, "[[") {
			t.Errorf("telnet_connect host %q to a closed port: %v; want an error showing %s (never [[::1]])", host, r, want)
		}
	}
}

// TestHostileLoopingTelnetPlugin (item 14): a plugin named telnet whose
// on_data loops forever, in the plugin directory at start-up and dropped in
// later, never takes over: the canary feeds it data and rejects it, sessions
// keep working on the embedded telnet, and the log does not call the
// guarded plugin unabortable.
func TestHostileLoopingTelnetPlugin(t *testing.T) {
	dir := t.TempDir()
	place(t, dir, "telnet.wasm", testPlugin(t, "looptelnet", ""))
	// Pinned, so that the canary is what refuses them.
	h := startHost(t, append([]string{"--plugin-dir", dir}, pinArgs(t, testPlugin(t, "looptelnet", ""), testPlugin(t, "looptelnet", "6.6.7-loop"))...)...)
	embedded := func(when string) {
		t.Helper()
		cur := h.currentPlugin("telnet")
		if cur == nil || cur["source"] != "embedded" || strings.Contains(fmt.Sprint(cur["version"]), "loop") {
			t.Errorf("%s: the current telnet plugin is %s; want the embedded one (the looping plugin must be rejected by the canary)", when, clip(fmtJSON(cur)))
		}
	}
	embedded("with a looping telnet.wasm in the plugin directory at start-up")
	if msg := h.roundTrip(t); msg != "" {
		t.Errorf("with a looping telnet.wasm in the plugin directory at start-up, a telnet session does not work: %s", msg)
	}

	place(t, dir, "evil.wasm", testPlugin(t, "looptelnet", "6.6.7-loop"))
	rejected := regexp.MustCompile(`(?i)evil\.wasm.*reject|reject.*evil\.wasm`)
	if !testutil.Poll(30*time.Second, func() bool {
		if rejected.MatchString(h.logs.String()) {
			return true
		}
		cur := h.currentPlugin("telnet")
		return cur != nil && cur["version"] == "6.6.7-loop"
	}) {
		t.Errorf("the looping telnet plugin evil.wasm was neither rejected nor loaded within 30 s")
	}
	embedded("after a looping evil.wasm (manifest name telnet) was dropped in")
	if msg := h.roundTrip(t); msg != "" {
		t.Errorf("after a looping telnet plugin was dropped in, a new telnet session does not work: %s", msg)
	}
	if strings.Contains(h.logs.String(), "cannot be aborted (unguarded)") {
		t.Errorf("the server log says a plugin call \"cannot be aborted (unguarded)\", but directory plugins are guarded")
	}
}

// TestHostileUnreadCountsHeldBytes (item 15): after a peer sends 3 MiB into
// the 1 MiB buffer, telnet_list's unreadBytes counts only what is held.
func TestHostileUnreadCountsHeldBytes(t *testing.T) {
	h := startHost(t)
	p := startPeer(t, 0, burstThenClose(lines(3<<20)))
	id := h.connect(p.port)
	var e map[string]any
	if !testutil.Poll(30*time.Second, func() bool {
		e = h.session(id)
		return e != nil && e["state"] == "terminated"
	}) {
		t.Fatalf("the session did not end within 30 s of the peer hanging up: %v", e)
	}
	if u, _ := e["unreadBytes"].(float64); u > 1<<20 {
		t.Errorf("telnet_list reports unreadBytes %.0f after 3 MiB went into a 1 MiB buffer: it counts evicted bytes, want at most 1048576", u)
	}
}
