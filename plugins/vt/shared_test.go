package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/plugins/vt/core"
	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

// TestSharedInstanceHoldsWorstSessions: as many sessions as the manifest
// lets share an instance, each at the largest screen (core.MaxCells cells)
// and fed the worst output for its memory, then asked for an ansi
// scrollback page and resized, fit in the host's default cap (64 MiB)
// with room to spare: one session cannot exhaust the instance it shares
// (RATIONALE "One screen cannot exhaust the instance it shares").
func TestSharedInstanceHoldsWorstSessions(t *testing.T) {
	path := os.Getenv("VT_WASM")
	if path == "" {
		path = "vt.wasm"
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var man abi.Manifest
	if b, err := os.ReadFile("manifest.json"); err != nil || json.Unmarshal(b, &man) != nil {
		t.Fatalf("manifest: %v", err)
	}
	ctx := context.Background()
	const capMiB = 64
	m, err := wasmhost.Compile(ctx, wasm, wasmhost.Options{MemoryLimitMiB: capMiB})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	sizes := [][2]int{{256, 128}, {1000, 32}, {200, 160}, {174, 96}}
	n := man.SessionsPerInstance
	if n <= 0 || n > 16 {
		t.Fatalf("sessionsPerInstance %d", n)
	}
	// Every size is tried: with fewer sessions an instance than sizes,
	// in as many fresh instances as it takes.
	for first := uint32(1); first <= uint32(len(sizes)); first += uint32(n) {
		holdWorstSessions(t, m, sizes, first, first+uint32(n)-1, capMiB)
	}
}

func holdWorstSessions(t *testing.T, m *wasmhost.Module, sizes [][2]int, first, last uint32, capMiB float64) {
	in, err := m.Instantiate(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for sid := first; sid <= last; sid++ {
		size := sizes[int(sid-1)%len(sizes)]
		if size[0]*size[1] > core.MaxCells {
			t.Fatalf("size %v over core.MaxCells", size)
		}
		if _, err := in.Open(sid, abi.KindPTY, fmt.Appendf(nil, `{"cols":%d,"rows":%d}`, size[0], size[1])); err != nil {
			t.Fatal(err)
		}
		// Enough for the style and grapheme tables to fill and be
		// compacted, and the scrollback to reach its byte bound (a
		// line of these takes 24 bytes a cell there).
		lines := max(core.MaxCells/size[0], core.SBMaxBytes/24/size[0]) + size[1] + 20
		for round := range 2 {
			p := core.WorstLines(size[0], lines/2, int(sid)*10+round)
			for off := 0; off < len(p); off += 32 << 10 {
				if _, _, err := in.Data(sid, abi.Inbound, p[off:min(off+32<<10, len(p))]); err != nil {
					t.Fatalf("session %d (%dx%d): %v", sid, size[0], size[1], err)
				}
			}
		}
		t.Logf("session %d (%dx%d) full: instance %.1f MiB", sid, size[0], size[1], float64(in.MemSize())/(1<<20))
	}
	for sid := first; sid <= last; sid++ {
		if _, err := in.Control(sid, []byte(`{"op":"scrollback","format":"ansi","offset":0,"limit":5000}`)); err != nil {
			t.Fatalf("session %d: scrollback page: %v", sid, err)
		}
		if _, err := in.Control(sid, []byte(`{"op":"resize","cols":160,"rows":100}`)); err != nil {
			t.Fatalf("session %d: resize: %v", sid, err)
		}
	}
	mem := float64(in.MemSize()) / (1 << 20)
	t.Logf("%d worst sessions, paged and resized: instance %.1f MiB of %.0f", last-first+1, mem, capMiB)
	if mem > capMiB*7/8 {
		t.Errorf("instance at %.1f MiB: less than an eighth of the %.0f MiB cap to spare", mem, capMiB)
	}
}

// TestScreenSizeRefused: a screen over core.MaxCells cells is refused at
// open and at resize, naming the fields and the limit.
func TestScreenSizeRefused(t *testing.T) {
	if _, err := newSession(sdkOpen(`{"cols":1000,"rows":1000}`)); err == nil ||
		!containsAll(err.Error(), "cols×rows", "1000×1000", fmt.Sprint(core.MaxCells)) {
		t.Errorf("open 1000x1000: %v", err)
	}
	s, err := newSession(sdkOpen(`{"cols":80,"rows":24}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.(*session).Control(nil, []byte(`{"op":"resize","cols":500,"rows":500}`)); err == nil ||
		!containsAll(err.Error(), "cols×rows", "500×500", fmt.Sprint(core.MaxCells)) {
		t.Errorf("resize 500x500: %v", err)
	}
}

func sdkOpen(opts string) sdk.Open { return sdk.Open{SID: 1, Options: []byte(opts)} }

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
