// Command vt is termhost's screen plugin: a thin adapter that feeds every
// byte the session's buffer gets into the VT/xterm emulator of package
// core, sends the emulator's answers to terminal queries (cursor position,
// device attributes, colours…) toward the peer, and answers the host's
// control requests with renders of the screen. It never writes toward the
// user: the host keeps the raw bytes; this plugin keeps the screen.
//
// Control requests (JSON, on_control):
//
//	{"op":"resize","cols":C,"rows":R}
//	{"op":"screen","format":"plain"|"ansi"}              the visible rows, cursor, size, title, modes
//	{"op":"scrollback","format":…,"offset":N,"limit":M}  history then screen, oldest first
//	{"op":"modes"}                                       what key encoding needs, and the cursor
//	{"op":"cells"}                                       the visible cells with their styles (for pictures)
//
// A cells reply is the screen reply's head plus "styles", a table of
// [fg, bg, underline colour, attrs, underline style] (colours as
// core.Color's bits: 0 default, 1<<24|i indexed, 2<<24|0xRRGGBB), and
// "cells", one array of runs per row: {"s": style index (omitted: 0),
// "w": 2 for wide characters (omitted: 1), "t": text}. A run's text is one
// character per cell (a wide one takes two columns), except a run with
// "g": true, which is one cell whose character carries combining marks.
// Trailing cells that are blank in the default style are left out.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/termhost/termhost/plugins/vt/core"
	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

func init() {
	sdk.Register(newSession)
}

func main() {}

type session struct {
	t     *core.Terminal
	title string
	buf   []byte // reused render buffer
}

type openOptions struct {
	Cols       int `json:"cols"`
	Rows       int `json:"rows"`
	Scrollback int `json:"scrollback"`
}

func newSession(o sdk.Open) (sdk.Session, error) {
	var opts openOptions
	if len(o.Options) > 0 {
		if err := json.Unmarshal(o.Options, &opts); err != nil {
			return nil, fmt.Errorf("vt: options: %v", err)
		}
	}
	if err := checkSize(opts.Cols, opts.Rows); err != nil {
		return nil, err
	}
	return &session{t: core.New(core.Options{Cols: opts.Cols, Rows: opts.Rows, Scrollback: opts.Scrollback})}, nil
}

// checkSize refuses a screen over core.MaxCells cells: the bound that keeps
// one session from exhausting the instance it shares.
func checkSize(cols, rows int) error {
	if cols > 0 && rows > 0 && cols*rows > core.MaxCells {
		return fmt.Errorf("vt: screen too large: cols×rows = %d×%d = %d cells; at most %d cells (e.g. 256x128, 200x160, 1000x32)",
			cols, rows, cols*rows, core.MaxCells)
	}
	return nil
}

func (s *session) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	if dir == sdk.Outbound {
		return sdk.Consumed // nothing travels through a screen toward the peer
	}
	s.t.Write(p)
	if r := s.t.Replies(); len(r) > 0 {
		out.ToPeer(r)
	}
	if title := s.t.Title(); title != s.title {
		s.title = title
		out.Emit(abi.Title{Title: title})
	}
	endChunk(len(p))
	if s.t.AtRest() {
		return sdk.Settled // text that follows may come late, with what follows it
	}
	return sdk.Consumed
}

type request struct {
	Op     string `json:"op"`
	Cols   int    `json:"cols"`
	Rows   int    `json:"rows"`
	Format string `json:"format"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// maxLimit bounds the lines of one scrollback page, maxPage its bytes
// (wide truecolour lines in the ansi format take 120 bytes a cell): a page
// that reaches it ends early, and its lines say how far it got.
const (
	maxLimit = 5000
	maxPage  = 2 << 20
)

func (s *session) Control(out *sdk.Out, req []byte) ([]byte, error) {
	var r request
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, fmt.Errorf("vt: bad request: %v", err)
	}
	defer endControl()
	ansi := r.Format == "ansi"
	if r.Format != "" && r.Format != "plain" && !ansi {
		return nil, fmt.Errorf("vt: unknown format %q", r.Format)
	}
	b := s.buf[:0]
	switch r.Op {
	case "resize":
		if r.Cols < 1 || r.Rows < 1 {
			return nil, errors.New("vt: resize needs cols and rows of at least 1")
		}
		if err := checkSize(r.Cols, r.Rows); err != nil {
			return nil, err
		}
		s.t.Resize(r.Cols, r.Rows)
		return []byte(`{}`), nil
	case "modes":
		b = s.head(b)
		b = append(b, '}')
	case "screen":
		b = s.head(b)
		b = append(b, `,"lines":[`...)
		_, rows := s.t.Size()
		var line []byte
		for i := 0; i < rows; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			line = s.row(line[:0], i, ansi)
			b = appendString(b, line)
		}
		b = append(b, `],"wrapped":[`...)
		first := true
		for i := 0; i < rows; i++ {
			if s.t.RowWrapped(i) {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = strconv.AppendInt(b, int64(i), 10)
			}
		}
		b = append(b, "]}"...)
	case "cells":
		b = s.cells(s.head(b))
	case "scrollback":
		_, rows := s.t.Size()
		hist := s.t.ScrollbackLen()
		total := hist + rows
		off, limit := r.Offset, r.Limit
		if off < 0 {
			off = 0
		}
		if limit <= 0 || limit > maxLimit {
			limit = maxLimit
		}
		b = s.head(b)
		b = append(b, `,"total":`...)
		b = strconv.AppendInt(b, int64(total), 10)
		b = append(b, `,"history":`...)
		b = strconv.AppendInt(b, int64(hist), 10)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, int64(off), 10)
		b = append(b, `,"lines":[`...)
		var line []byte
		for i := off; i < total && i < off+limit && (i == off || len(b) < maxPage); i++ {
			if i > off {
				b = append(b, ',')
			}
			if i < hist {
				if ansi {
					line = s.t.AppendScrollbackANSI(line[:0], i)
				} else {
					line = s.t.AppendScrollbackText(line[:0], i)
				}
			} else {
				line = s.row(line[:0], i-hist, ansi)
			}
			b = appendString(b, line)
		}
		b = append(b, "]}"...)
	default:
		return nil, fmt.Errorf("vt: unknown op %q", r.Op)
	}
	if cap(b) <= 1<<20 {
		s.buf = b
	}
	return b, nil
}

// cells appends the "styles" and "cells" members of a cells reply (see
// the package comment) and closes the object.
func (s *session) cells(b []byte) []byte {
	type key struct {
		fg, bg, ul core.Color
		attrs      core.Attrs
		ul2        int
	}
	cols, rows := s.t.Size()
	index := map[key]int{{}: 0}
	styles := []key{{}}
	b = append(b, `,"cells":[`...)
	var text []byte
	for r := 0; r < rows; r++ {
		if r > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		end := cols
		for end > 0 {
			c := s.t.Cell(r, end-1)
			if c.Width != 1 || c.Text != " " || c.FG != 0 || c.BG != 0 || c.UnderlineColor != 0 || c.Attrs != 0 {
				break
			}
			end--
		}
		first, open := true, false
		prevStyle, prevWidth := -1, 0
		for col := 0; col < end; col++ {
			c := s.t.Cell(r, col)
			if c.Width == 0 {
				continue
			}
			k := key{c.FG, c.BG, c.UnderlineColor, c.Attrs, c.UnderlineStyle}
			si, seen := index[k]
			if !seen {
				si = len(styles)
				index[k] = si
				styles = append(styles, k)
			}
			grapheme := utf8.RuneCountInString(c.Text) > 1
			if open && (grapheme || si != prevStyle || c.Width != prevWidth) {
				b = appendString(b, text)
				b = append(b, '}')
				open = false
			}
			if !open {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = append(b, '{')
				if si != 0 {
					b = append(b, `"s":`...)
					b = strconv.AppendInt(b, int64(si), 10)
					b = append(b, ',')
				}
				if c.Width == 2 {
					b = append(b, `"w":2,`...)
				}
				if grapheme {
					b = append(b, `"g":true,`...)
				}
				b = append(b, `"t":`...)
				text, open = text[:0], true
				prevStyle, prevWidth = si, c.Width
			}
			text = append(text, c.Text...)
			if grapheme {
				b = appendString(b, text)
				b = append(b, '}')
				open = false
			}
		}
		if open {
			b = appendString(b, text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `],"styles":[`...)
	for i, k := range styles {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, v := range []uint64{uint64(k.fg), uint64(k.bg), uint64(k.ul), uint64(k.attrs), uint64(k.ul2)} {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, v, 10)
		}
		b = append(b, ']')
	}
	return append(b, "]}"...)
}

func (s *session) row(dst []byte, i int, ansi bool) []byte {
	if ansi {
		return s.t.AppendRowANSI(dst, i)
	}
	return s.t.AppendRowText(dst, i)
}

// head opens the reply object with what every reply carries.
func (s *session) head(b []byte) []byte {
	cols, rows := s.t.Size()
	row, col, visible := s.t.Cursor()
	m := s.t.Modes()
	b = append(b, `{"cols":`...)
	b = strconv.AppendInt(b, int64(cols), 10)
	b = append(b, `,"rows":`...)
	b = strconv.AppendInt(b, int64(rows), 10)
	b = append(b, `,"cursor":{"row":`...)
	b = strconv.AppendInt(b, int64(row), 10)
	b = append(b, `,"col":`...)
	b = strconv.AppendInt(b, int64(col), 10)
	b = append(b, `},"cursorVisible":`...)
	b = strconv.AppendBool(b, visible)
	b = append(b, `,"altScreen":`...)
	b = strconv.AppendBool(b, s.t.AltScreen())
	b = append(b, `,"title":`...)
	b = appendString(b, []byte(s.t.Title()))
	b = append(b, `,"modes":{"appCursor":`...)
	b = strconv.AppendBool(b, m.AppCursor)
	b = append(b, `,"appKeypad":`...)
	b = strconv.AppendBool(b, m.AppKeypad)
	b = append(b, `,"bracketedPaste":`...)
	b = strconv.AppendBool(b, m.BracketedPaste)
	b = append(b, `,"mouse":`...)
	b = strconv.AppendInt(b, int64(m.Mouse), 10)
	b = append(b, '}')
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends p as a JSON string: valid UTF-8 (invalid bytes
// become U+FFFD), with quotes, backslashes and control characters (ESC
// of the ansi format included) escaped.
func appendString(b, p []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			b = append(b, p[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, p[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, p[start:]...)
	return append(b, '"')
}

func (s *session) ExportState() ([]byte, error) { return s.t.MarshalBinary() }

func (s *session) ImportState(b []byte) error {
	t := core.New(core.Options{})
	if err := t.UnmarshalBinary(b); err != nil {
		return err
	}
	s.t, s.title = t, t.Title()
	return nil
}
