// Package render draws a terminal screen as a picture: a PNG (pure Go,
// golang.org/x/image with the Go Mono fonts) or an SVG. Its input is the
// screen plugin's cells reply (plugins/vt, op "cells"): rows of runs of
// cells, a style table, the cursor.
package render

import (
	"fmt"
	"unicode/utf8"
)

// Screen is the vt plugin's cells reply.
type Screen struct {
	Cols          int                    `json:"cols"`
	Rows          int                    `json:"rows"`
	Cursor        struct{ Row, Col int } `json:"cursor"`
	CursorVisible bool                   `json:"cursorVisible"`
	// Cells holds one slice of runs per row.
	Cells [][]Run `json:"cells"`
	// Styles are [fg, bg, underline colour, attrs, underline style]; a
	// run's S indexes it (0 is the default style).
	Styles [][5]uint32 `json:"styles"`
}

// Run is cells of one style and width: one character per cell, or with G
// one cell whose character carries combining marks.
type Run struct {
	S int    `json:"s,omitempty"`
	W int    `json:"w,omitempty"` // 2: wide characters (two columns each); else 1
	G bool   `json:"g,omitempty"`
	T string `json:"t"`
}

// Color is a cell colour as the vt plugin encodes it: 0 the default,
// 1<<24|i indexed colour i, 2<<24|0xRRGGBB a true colour.
type Color uint32

// Attribute bits (plugins/vt/core.Attrs).
const (
	attrBold = 1 << iota
	attrDim
	attrItalic
	attrUnderline
	attrBlink
	attrReverse
	attrInvisible
	attrStrike
	attrOverline
)

// MaxCells bounds the screens drawn (the vt plugin's own bound).
const MaxCells = 32768

// cell is one resolved cell: text, width, colours after reverse video,
// dim, invisibility and the cursor.
type cell struct {
	text    string // "" for a blank; the right half of a wide character is skipped
	wide    bool
	spacer  bool
	fg, bg  rgb
	ul      rgb
	attrs   uint16
	ulStyle uint8
}

type rgb struct{ r, g, b uint8 }

// grid resolves s into cols*rows cells, row-major.
func grid(s *Screen, th *Theme) ([]cell, error) {
	if s.Cols < 1 || s.Rows < 1 || s.Cols*s.Rows > MaxCells || s.Cols > MaxCells || s.Rows > MaxCells {
		return nil, fmt.Errorf("screen size %dx%d: cols and rows must be at least 1 and cols×rows at most %d", s.Cols, s.Rows, MaxCells)
	}
	g := make([]cell, s.Cols*s.Rows)
	for i := range g {
		g[i] = cell{fg: th.FG, bg: th.BG, ul: th.FG}
	}
	for r, runs := range s.Cells {
		if r >= s.Rows {
			break
		}
		col := 0
		for _, run := range runs {
			st := [5]uint32{}
			if run.S > 0 && run.S < len(s.Styles) {
				st = s.Styles[run.S]
			}
			put := func(text string, wide bool) {
				if col >= s.Cols || wide && col+1 >= s.Cols {
					col = s.Cols
					return
				}
				c := th.style(st)
				if text != " " {
					c.text = text
				}
				c.wide = wide
				g[r*s.Cols+col] = c
				col++
				if wide {
					sp := c
					sp.text, sp.wide, sp.spacer = "", false, true
					g[r*s.Cols+col] = sp
					col++
				}
			}
			wide := run.W == 2
			if run.G {
				put(run.T, wide)
				continue
			}
			for i := 0; i < len(run.T) && col < s.Cols; {
				_, n := utf8.DecodeRuneInString(run.T[i:])
				put(run.T[i:i+n], wide)
				i += n
			}
		}
	}
	if s.CursorVisible && s.Cursor.Row >= 0 && s.Cursor.Row < s.Rows && s.Cursor.Col >= 0 {
		col := min(s.Cursor.Col, s.Cols-1)
		i := s.Cursor.Row*s.Cols + col
		if g[i].spacer && col > 0 {
			i--
		}
		for j := i; j <= i+1 && j < len(g); j++ {
			if j > i && !g[i].wide {
				break
			}
			c := &g[j]
			c.fg, c.bg = c.bg, th.Cursor
			if c.fg == th.Cursor {
				c.fg = th.BG
			}
		}
	}
	return g, nil
}

// style resolves a style entry: colours from the theme, reverse video,
// dim (halfway to the background), invisible (the background).
func (th *Theme) style(st [5]uint32) cell {
	attrs := uint16(st[3])
	fg, bg := th.color(Color(st[0]), th.FG), th.color(Color(st[1]), th.BG)
	if attrs&attrBold != 0 {
		if i, ok := indexed(Color(st[0])); ok && i < 8 && th.BoldBright {
			fg = th.Palette[i+8]
		}
	}
	if attrs&attrReverse != 0 {
		fg, bg = bg, fg
	}
	if attrs&attrDim != 0 {
		fg = rgb{uint8((int(fg.r) + int(bg.r)) / 2), uint8((int(fg.g) + int(bg.g)) / 2), uint8((int(fg.b) + int(bg.b)) / 2)}
	}
	if attrs&attrInvisible != 0 {
		fg = bg
	}
	ul := fg
	if Color(st[2]) != 0 {
		ul = th.color(Color(st[2]), fg)
	}
	us := uint8(st[4])
	if attrs&attrUnderline != 0 && us == 0 {
		us = 1
	}
	if attrs&attrUnderline == 0 {
		us = 0
	}
	return cell{fg: fg, bg: bg, ul: ul, attrs: attrs, ulStyle: us}
}

func indexed(c Color) (int, bool) { return int(c & 0xff), c>>24 == 1 }

func (th *Theme) color(c Color, def rgb) rgb {
	switch c >> 24 {
	case 1:
		return th.Palette[c&0xff]
	case 2:
		return rgb{uint8(c >> 16), uint8(c >> 8), uint8(c)}
	}
	return def
}
