package main

import (
	"encoding/json"
	"testing"

	"github.com/termhost/termhost/sdk"
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
