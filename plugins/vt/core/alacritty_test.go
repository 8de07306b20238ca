package core

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// alacrittyKnown lists the alacritty reference tests we fail, with the reason.
var alacrittyKnown = map[string]string{
	"decaln_reset":      "DECALN homes the cursor and resets the rendition as xterm (charproc.c), kitty and DEC STD 070 do; alacritty does neither",
	"selective_erasure": "DECSCA/DECSED protect cells as in xterm and the VT220 on; alacritty implements neither and ignores CSI ? J",
}

type alacrittyColor struct {
	Named   string
	Indexed *int
	Spec    *struct{ R, G, B int }
}

type alacrittyCell struct {
	C     string
	FG    alacrittyColor `json:"fg"`
	BG    alacrittyColor `json:"bg"`
	Flags string
	Extra *struct {
		Zerowidth []string `json:"zerowidth"`
	}
}

type alacrittyGrid struct {
	Raw struct {
		Inner []struct {
			Inner []alacrittyCell
		}
		Zero         int `json:"zero"`
		VisibleLines int `json:"visible_lines"`
		Len          int `json:"len"`
	}
	Columns int
	Lines   int
}

var alacrittyNamed = map[string]int{
	"Black": 0, "Red": 1, "Green": 2, "Yellow": 3, "Blue": 4, "Magenta": 5, "Cyan": 6, "White": 7,
	"BrightBlack": 8, "BrightRed": 9, "BrightGreen": 10, "BrightYellow": 11, "BrightBlue": 12,
	"BrightMagenta": 13, "BrightCyan": 14, "BrightWhite": 15,
}

func (c alacrittyColor) toColor() (Color, error) {
	switch {
	case c.Spec != nil:
		return RGBColor(uint8(c.Spec.R), uint8(c.Spec.G), uint8(c.Spec.B)), nil
	case c.Indexed != nil:
		return IndexedColor(uint8(*c.Indexed)), nil
	case c.Named == "Foreground", c.Named == "Background":
		return 0, nil
	}
	if i, ok := alacrittyNamed[c.Named]; ok {
		return IndexedColor(uint8(i)), nil
	}
	return 0, fmt.Errorf("unknown colour %+v", c)
}

func colorString(c Color) string {
	if i, ok := c.Indexed(); ok {
		return fmt.Sprintf("idx(%d)", i)
	}
	if r, g, b, ok := c.RGB(); ok {
		return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b)
	}
	return "default"
}

// TestAlacrittyRef replays alacritty's reference recordings and compares
// every visible cell: text with combining marks, colours and the main
// attributes, and the soft-wrap flag of each row.
func TestAlacrittyRef(t *testing.T) {
	dir := testdataDir(t, "alacritty-ref")
	dirs, _ := filepath.Glob(filepath.Join(dir, "*", "grid.json"))
	failed := map[string]string{}
	for _, g := range dirs {
		d := filepath.Dir(g)
		name := filepath.Base(d)
		var size struct {
			Columns     int `json:"columns"`
			ScreenLines int `json:"screen_lines"`
		}
		var grid alacrittyGrid
		var cfg struct {
			HistorySize int `json:"history_size"`
		}
		for f, v := range map[string]any{"size.json": &size, "grid.json": &grid, "config.json": &cfg} {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				if f == "config.json" {
					continue
				}
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("%s/%s: %v", name, f, err)
			}
		}
		rec, err := os.ReadFile(filepath.Join(d, "alacritty.recording"))
		if err != nil {
			t.Fatal(err)
		}
		sb := cfg.HistorySize
		if sb == 0 {
			sb = -1
		}
		term := New(Options{Cols: size.Columns, Rows: size.ScreenLines, Scrollback: sb})
		term.Write(rec)
		if msg := compareAlacritty(term, &grid); msg != "" {
			failed[name] = msg
		}
	}
	checkKnown(t, "alacritty ref", failed, alacrittyKnown, len(dirs))
}

func compareAlacritty(term *Terminal, g *alacrittyGrid) string {
	var diffs []string
	n := len(g.Raw.Inner)
	vis := term.rows // older dumps give visible_lines as the last index
	for r := 0; r < vis && r < term.rows; r++ {
		row := g.Raw.Inner[((g.Raw.Zero+vis-1-r)%n+n)%n].Inner
		for c, want := range row {
			if c >= term.cols {
				break
			}
			got := term.Cell(r, c)
			wtext := want.C
			if want.Extra != nil {
				wtext += strings.Join(want.Extra.Zerowidth, "")
			}
			gtext := got.Text
			if strings.Contains(want.Flags, "WIDE_CHAR_SPACER") {
				wtext = ""
			}
			if wtext == "\t" { // alacritty keeps the tab character in the cell it started at
				wtext = " "
			}
			fg, err1 := want.FG.toColor()
			bg, err2 := want.BG.toColor()
			if err1 != nil || err2 != nil {
				return fmt.Sprint(err1, err2)
			}
			var wattrs Attrs
			for _, f := range strings.Split(want.Flags, " | ") {
				switch f {
				case "BOLD":
					wattrs |= Bold
				case "DIM":
					wattrs |= Dim
				case "ITALIC":
					wattrs |= Italic
				case "INVERSE":
					wattrs |= Reverse
				case "HIDDEN":
					wattrs |= Invisible
				case "STRIKEOUT":
					wattrs |= Strike
				case "UNDERLINE", "DOUBLE_UNDERLINE", "UNDERCURL", "DOTTED_UNDERLINE", "DASHED_UNDERLINE":
					wattrs |= Underline
				}
			}
			mask := Bold | Dim | Italic | Reverse | Invisible | Strike | Underline
			if gtext != wtext || got.FG != fg || got.BG != bg || got.Attrs&mask != wattrs {
				diffs = append(diffs, fmt.Sprintf("cell %d,%d: got %q fg=%s bg=%s attrs=%b; want %q fg=%s bg=%s attrs=%b (%s)",
					r, c, gtext, colorString(got.FG), colorString(got.BG), got.Attrs&mask,
					wtext, colorString(fg), colorString(bg), wattrs, want.Flags))
			}
			if c == len(row)-1 {
				if w := strings.Contains(want.Flags, "WRAPLINE"); w != term.RowWrapped(r) {
					diffs = append(diffs, fmt.Sprintf("row %d: wrapped %v, want %v", r, term.RowWrapped(r), w))
				}
			}
		}
	}
	if len(diffs) > 8 {
		diffs = append(diffs[:8], fmt.Sprintf("... %d more", len(diffs)-8))
	}
	return strings.Join(diffs, "\n")
}
