package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/plugin"
	"github.com/termhost/termhost/plugins/vt/core"
	"github.com/termhost/termhost/sdk/abi"
)

// These tests run the real screen plugin (the committed plugins/vt/vt.wasm)
// with every session on one pooled instance, as sessions share one in
// production.

// vtPlugins opens the vt plugin alone, with one instance in its pool.
func vtPlugins(t *testing.T, memMiB uint32) *plugin.Registry {
	t.Helper()
	// Under TERMHOST_CACHE_DIR when set (make test's temporary directory,
	// removed afterwards), else the user cache directory, so that repeated
	// `go test` runs do not compile the plugin again.
	cache := "off"
	if d := os.Getenv("TERMHOST_CACHE_DIR"); d != "" {
		cache = filepath.Join(d, "termhost", "wazero-test-session")
	} else if d, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(d, "termhost", "wazero-test-session")
	}
	pr, err := plugin.Open(context.Background(), plugin.Config{
		Embedded:       os.DirFS("../../plugins/vt"),
		CacheDir:       cache,
		PoolSize:       1,
		MemoryLimitMiB: memMiB,
		CrashLoopTraps: 1000, // the flood's failures must not make the plugin back off
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	return pr
}

// vtSession is a session whose screen is the real vt plugin, fed by a
// pipe the test writes to as the peer.
type vtSession struct {
	s          *Session
	peer       net.Conn
	cols, rows int
	sent       int
}

func openVT(t *testing.T, r *Registry, pr *plugin.Registry, cols, rows int) (*vtSession, error) {
	t.Helper()
	ours, peer := net.Pipe()
	pl := &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}
	attach := func(name string, kind abi.Kind, opts []byte) (Binding, error) {
		return pr.Attach(name, kind, opts)
	}
	s, err := r.Open(context.Background(), attach, Spec{
		Kind: KindPTY, Cols: cols, Rows: rows, Screen: true,
		Options: fmt.Appendf(nil, `{"cols":%d,"rows":%d}`, cols, rows),
		Dial:    func(context.Context) (link.Link, error) { return pl, nil },
	})
	if err != nil {
		ours.Close()
		peer.Close()
		return nil, err
	}
	t.Cleanup(func() { peer.Close() })
	// Drain what the screen answers toward the peer.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := peer.Read(buf); err != nil {
				return
			}
		}
	}()
	return &vtSession{s: s, peer: peer, cols: cols, rows: rows}, nil
}

// feed writes p as the peer and waits until the session's buffer has it.
func (v *vtSession) feed(t *testing.T, p []byte) {
	t.Helper()
	v.peer.SetWriteDeadline(time.Now().Add(60 * time.Second))
	if _, err := v.peer.Write(p); err != nil {
		t.Fatalf("peer write: %v", err)
	}
	v.sent += len(p)
	eventually(t, "the output in the buffer", func() bool { return v.s.buf.Head() == uint64(v.sent) })
}

// failed reports whether the session's screen plugin failed (a
// plugin_failed event).
func (v *vtSession) failed() bool {
	for _, e := range v.s.Events(0) {
		if e.Type == "plugin_failed" {
			return true
		}
	}
	return false
}

// checkScreen compares what the session's screen shows (history and
// screen, plain) with what a fresh emulator fed the session's raw buffer
// shows, and that it is not blank.
func checkScreen(t *testing.T, name string, v *vtSession) {
	t.Helper()
	raw, cut := v.s.Raw(v.s.cfg.BufferSize)
	if cut {
		t.Fatalf("%s: the buffer lost bytes; the test must keep its sessions within it", name)
	}
	want := core.New(core.Options{Cols: v.cols, Rows: v.rows})
	want.Write(raw)
	var wantLines []string
	for i := range want.ScrollbackLen() {
		wantLines = append(wantLines, string(want.AppendScrollbackText(nil, i)))
	}
	for i := range v.rows {
		wantLines = append(wantLines, string(want.AppendRowText(nil, i)))
	}

	var got []string
	for off := 0; ; {
		rep, err := v.s.Screen(context.Background(), fmt.Appendf(nil, `{"op":"scrollback","format":"plain","offset":%d}`, off))
		if err != nil {
			t.Fatalf("%s: scrollback: %v", name, err)
		}
		var page struct {
			Total int      `json:"total"`
			Lines []string `json:"lines"`
		}
		if err := json.Unmarshal(rep, &page); err != nil {
			t.Fatalf("%s: %v: %.200s", name, err, rep)
		}
		got = append(got, page.Lines...)
		off += len(page.Lines)
		if off >= page.Total || len(page.Lines) == 0 {
			break
		}
	}
	if strings.TrimSpace(strings.Join(got, "")) == "" {
		t.Fatalf("%s: blank screen and scrollback while the session is %s (buffer holds %d bytes)", name, v.s.Info().State, len(raw))
	}
	if len(got) != len(wantLines) {
		t.Fatalf("%s: %d lines of history and screen, want %d (a fresh emulator fed the raw buffer)", name, len(got), len(wantLines))
	}
	for i := range got {
		if got[i] != wantLines[i] {
			t.Fatalf("%s: line %d = %q, want %q", name, i, got[i], wantLines[i])
		}
	}
}

// smallOutput is what a quiet neighbour printed: more lines than its
// screen holds, in colour.
func smallOutput(n int) []byte {
	var b []byte
	for i := range 60 {
		b = fmt.Appendf(b, "\x1b[3%dmsession %d line %d\x1b[0m of quiet output\r\n", 1+i%6, n, i)
	}
	return append(b, fmt.Appendf(nil, "neighbour-%d$ ", n)...)
}

// truecolour is lines lines of cols cells, each cell its own 24-bit
// foreground and background.
func truecolour(cols, lines, seed int) []byte {
	var b []byte
	for l := range lines {
		for c := range cols {
			v := seed*7919 + l*cols + c
			b = fmt.Appendf(b, "\x1b[38;2;%d;%d;%d;48;2;%d;%d;%dm%c", v&255, v>>8&255, v>>16&255, v*3&255, v>>5&255, seed&255, 'a'+c%26)
		}
		b = append(b, "\x1b[0m\r\n"...)
	}
	return b
}

// TestNeighboursRebuiltAfterSharedScreenFails: one session's flood kills
// the screen instance it shares with three quiet ones (a small memory cap
// makes sure it does). Every quiet session shows, right after, what a fresh
// emulator fed its raw buffer shows — whether its next use is a view (a
// control request) or more output (a chunk).
func TestNeighboursRebuiltAfterSharedScreenFails(t *testing.T) {
	pr := vtPlugins(t, 6)
	r := newRegistry(t, Limits{}, Config{Plugins: Plugins{Screen: "vt"}})
	var quiet []*vtSession
	for i := range 3 {
		v, err := openVT(t, r, pr, 80, 24)
		if err != nil {
			t.Fatal(err)
		}
		v.feed(t, smallOutput(i))
		quiet = append(quiet, v)
	}
	for i, v := range quiet {
		checkScreen(t, fmt.Sprintf("quiet session %d before the flood", i), v)
	}

	flood, err := openVT(t, r, pr, 200, 50)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; !flood.failed(); round++ {
		if round == 2000 {
			t.Fatal("the flood did not make the shared screen instance fail")
		}
		flood.feed(t, truecolour(200, 4, round))
	}

	// The first quiet session's next use is more output; the others' is a
	// view.
	quiet[0].feed(t, []byte("more output after the failure\r\n"))
	for i, v := range quiet {
		checkScreen(t, fmt.Sprintf("quiet session %d after its instance failed", i), v)
	}
	// And they stay right as output goes on.
	quiet[1].feed(t, []byte("\x1b[1mstill here\x1b[0m\r\n"))
	checkScreen(t, "quiet session 1 after more output", quiet[1])
}

// TestFloodCannotExhaustSharedScreen: four sessions at the largest screen
// flood truecolour lines next to three quiet ones, under the default
// memory cap: no instance fails, and the quiet sessions show what a fresh
// emulator fed their raw buffers shows. A screen over MaxScreenCells is
// refused, naming the fields and the limit.
func TestFloodCannotExhaustSharedScreen(t *testing.T) {
	if MaxScreenCells != core.MaxCells {
		t.Fatalf("MaxScreenCells %d, the vt core's MaxCells %d", MaxScreenCells, core.MaxCells)
	}
	pr := vtPlugins(t, 0)
	r := newRegistry(t, Limits{}, Config{Plugins: Plugins{Screen: "vt"}})
	var quiet []*vtSession
	for i := range 3 {
		v, err := openVT(t, r, pr, 80, 24)
		if err != nil {
			t.Fatal(err)
		}
		v.feed(t, smallOutput(i))
		quiet = append(quiet, v)
	}
	var big []*vtSession
	v, err := openVT(t, r, pr, 1000, 1000)
	if err == nil {
		t.Errorf("a 1000x1000 screen was opened")
		big = append(big, v)
	} else if !errors.Is(err, ErrScreenSize) || !strings.Contains(err.Error(), "cols×rows = 1000×1000") ||
		!strings.Contains(err.Error(), fmt.Sprint(MaxScreenCells)) {
		t.Errorf("a 1000x1000 screen: %v", err)
	}
	for len(big) < 4 {
		v, err := openVT(t, r, pr, 1000, MaxScreenCells/1000)
		if err != nil {
			t.Fatal(err)
		}
		big = append(big, v)
	}
	if err := big[len(big)-1].s.Resize(context.Background(), 1000, 1000); !errors.Is(err, ErrScreenSize) {
		t.Errorf("resize to 1000x1000: %v", err)
	}
	for round := range 3 {
		for i, v := range big {
			v.feed(t, truecolour(1000, 20, round*10+i))
		}
	}
	for i, v := range append(append([]*vtSession(nil), quiet...), big...) {
		if v.failed() {
			t.Errorf("session %d: its screen plugin failed: %+v", i, v.s.Events(0))
		}
	}
	for i, v := range quiet {
		checkScreen(t, fmt.Sprintf("quiet session %d after the floods", i), v)
	}
}

// TestWorstScreenKeepsWorking: a session at the largest screen is fed the
// worst output for its memory, round after round, its history paged, its
// cells drawn and its screen resized in between, under the default cap;
// its screen plugin never fails (a session alone on an instance whose
// memory passed half the cap moves to a fresh one: plugin.Binding's
// compact), and a quiet neighbour's screen stays right.
func TestWorstScreenKeepsWorking(t *testing.T) {
	pr := vtPlugins(t, 0)
	r := newRegistry(t, Limits{}, Config{Plugins: Plugins{Screen: "vt"}})
	quiet, err := openVT(t, r, pr, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	quiet.feed(t, smallOutput(0))
	v, err := openVT(t, r, pr, 256, 128)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for round := range 12 {
		v.feed(t, core.WorstLines(256, 180, round))
		for _, req := range []string{`{"op":"scrollback","format":"ansi","offset":0,"limit":5000}`, `{"op":"cells"}`} {
			if _, err := v.s.Screen(ctx, []byte(req)); err != nil {
				t.Fatalf("round %d: %s: %v", round, req, err)
			}
		}
		cols, rows := 160, 100
		if round%2 == 1 {
			cols, rows = 256, 128
		}
		if err := v.s.Resize(ctx, cols, rows); err != nil {
			t.Fatalf("round %d: resize: %v", round, err)
		}
		if v.failed() {
			t.Fatalf("round %d: the worst screen's plugin failed: %+v", round, v.s.Events(0))
		}
	}
	v.feed(t, core.WorstLines(256, 130, 99))
	rep, err := v.s.Screen(ctx, []byte(`{"op":"screen","format":"plain"}`))
	var scr struct{ Lines []string }
	if err != nil || json.Unmarshal(rep, &scr) != nil {
		t.Fatalf("the worst screen after the rounds: %v %.300q", err, rep)
	}
	// Every row but the cursor's (the last) holds a line of 256 letters,
	// each with its marks.
	full := 0
	for _, l := range scr.Lines {
		if strings.Count(l, "z") == 256/26 {
			full++
		}
	}
	if full != 127 {
		t.Errorf("the worst screen after the rounds shows %d full rows, want 127", full)
	}
	if quiet.failed() {
		t.Errorf("the quiet session's screen plugin failed: %+v", quiet.s.Events(0))
	}
	checkScreen(t, "the quiet session", quiet)
}
