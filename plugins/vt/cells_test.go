package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/plugins/vt/core"
	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

type cellsReply struct {
	Cols, Rows int
	Cursor     struct{ Row, Col int }
	Cells      [][]struct {
		S int    `json:"s"`
		W int    `json:"w"`
		G bool   `json:"g"`
		T string `json:"t"`
	} `json:"cells"`
	Styles [][5]uint64 `json:"styles"`
}

// TestCellsOp: the cells reply gives every visible cell's text, width and
// style: runs split where the style or width changes, a character with
// combining marks its own run, colours as core.Color's bits, trailing
// default blanks left out, a coloured blank kept.
func TestCellsOp(t *testing.T) {
	s, err := newSession(sdkOpen(`{"cols":20,"rows":3}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Data(&sdk.Out{}, sdk.Inbound, []byte("ab\x1b[1;31mcd\x1b[0m\xe4\xbd\xa0\xe5\xa5\xbde\xcc\x81x\r\n\x1b[38;2;1;2;3;44m  \x1b[0m\r\n\x1b[7mz"))
	out, err := s.(*session).Control(&sdk.Out{}, []byte(`{"op":"cells"}`))
	if err != nil {
		t.Fatal(err)
	}
	var r cellsReply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Cols != 20 || r.Rows != 3 || len(r.Cells) != 3 || r.Cursor.Row != 2 || r.Cursor.Col != 1 {
		t.Fatalf("reply %s", out)
	}
	row := r.Cells[0]
	want := []struct {
		t    string
		w    int
		g    bool
		bold bool
		fg   uint64
	}{{"ab", 0, false, false, 0}, {"cd", 0, false, true, 1<<24 | 1}, {"你好", 2, false, false, 0}, {"e\u0301", 0, true, false, 0}, {"x", 0, false, false, 0}}
	if len(row) != len(want) {
		t.Fatalf("row 0: %d runs, want %d: %s", len(row), len(want), out)
	}
	for i, w := range want {
		st := r.Styles[row[i].S]
		if row[i].T != w.t || row[i].W != w.w || row[i].G != w.g || (st[3]&1 != 0) != w.bold || st[0] != w.fg {
			t.Errorf("run %d: %+v style %v, want %+v", i, row[i], st, w)
		}
	}
	if len(r.Cells[1]) != 1 || r.Cells[1][0].T != "  " {
		t.Fatalf("row 1 (coloured blanks): %+v", r.Cells[1])
	}
	if st := r.Styles[r.Cells[1][0].S]; st[0] != 2<<24|0x010203 || st[1] != 1<<24|4 {
		t.Errorf("row 1 style %v: want fg rgb 1,2,3 and bg indexed 4", st)
	}
	if len(r.Cells[2]) != 1 || r.Cells[2][0].T != "z" || r.Styles[r.Cells[2][0].S][3]&(1<<5) == 0 {
		t.Errorf("row 2 (reverse z): %+v", r.Cells[2])
	}
}

// TestCellsWorstSessionsFit: a cells reply of each of the worst sessions an
// instance may share (every cell its own true-colour style and grapheme,
// scrollback full) is whole and leaves the instance inside its cap with
// room to spare, like the ansi page of TestSharedInstanceHoldsWorstSessions.
func TestCellsWorstSessionsFit(t *testing.T) {
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
	n := uint32(max(1, man.SessionsPerInstance))
	for first := uint32(1); first <= uint32(len(sizes)); first += n {
		cellsWorstSessions(t, m, sizes, first, first+n-1, capMiB)
	}
}

func cellsWorstSessions(t *testing.T, m *wasmhost.Module, sizes [][2]int, first, last uint32, capMiB float64) {
	in, err := m.Instantiate(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for sid := first; sid <= last; sid++ {
		size := sizes[int(sid-1)%len(sizes)]
		if _, err := in.Open(sid, abi.KindPTY, fmt.Appendf(nil, `{"cols":%d,"rows":%d}`, size[0], size[1])); err != nil {
			t.Fatal(err)
		}
		lines := max(core.MaxCells/size[0], core.SBMaxBytes/24/size[0]) + size[1] + 20
		p := core.WorstLines(size[0], lines, int(sid))
		for off := 0; off < len(p); off += 32 << 10 {
			if _, _, err := in.Data(sid, abi.Inbound, p[off:min(off+32<<10, len(p))]); err != nil {
				t.Fatalf("session %d: %v", sid, err)
			}
		}
	}
	for sid := first; sid <= last; sid++ {
		ems, err := in.Control(sid, []byte(`{"op":"cells"}`))
		if err != nil {
			t.Fatalf("session %d: cells: %v", sid, err)
		}
		var out []byte
		for _, e := range ems {
			if e.Stream == abi.Reply {
				out = append(out, e.Data...)
			}
		}
		var r cellsReply
		if err := json.Unmarshal(out, &r); err != nil || len(r.Cells) != r.Rows || len(r.Styles) < 2 {
			t.Fatalf("session %d: cells reply (%d bytes): %v, %d rows of %d, %d styles", sid, len(out), err, len(r.Cells), r.Rows, len(r.Styles))
		}
		t.Logf("session %d: cells reply %d bytes, %d styles; instance %.1f MiB", sid, len(out), len(r.Styles), float64(in.MemSize())/(1<<20))
	}
	if mem := float64(in.MemSize()) / (1 << 20); mem > capMiB*7/8 {
		t.Errorf("instance at %.1f MiB: less than an eighth of the %.0f MiB cap to spare", mem, capMiB)
	}
}
