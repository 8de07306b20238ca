package core

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// libvtermKnown lists the libvterm expectations (file:line) we fail, with
// the reason. Callback-level expectations (putglyph, movecursor, damage…)
// are not counted at all: they observe libvterm's internals, not a screen.
var libvtermKnown = map[string]string{
	"03encoding_utf8.test:43":     "libvterm decodes F7 BF BF BF to U+1FFFFF; beyond U+10FFFF is invalid UTF-8, so we print U+FFFD per byte",
	"03encoding_utf8.test:89":     "overlong C0 80 / C1 BF: we replace each invalid byte (C0, C1 are never valid lead bytes), libvterm one per sequence",
	"11state_movecursor.test:194": "CSI k (VPB) is ignored as xterm does (xterm.js fixture t0032-VPB, recorded from xterm)",
	"12state_scroll.test:75":      "DECSLRM (left/right margins) is not implemented, so DECRQSS s is answered invalid",
	"13state_edit.test:269":       "DECRQSS \"q reports protection as 0/1; libvterm echoes the DECSCA parameter 2",
	"13state_edit.test:81":        "IL homes the cursor column as xterm does (xterm.js fixture t0051-IL); libvterm keeps the column",
	"15state_mode.test:72":        "DECSLRM (left/right margins) is not implemented",
	"16state_resize.test:36":      "the main screen reflows on resize; libvterm's state-level test runs without reflow and clamps",
	"26state_query.test:12":       "XTVERSION answers termhost(1.0), not libvterm",
	"26state_query.test:27":       "DECXCPR answers CSI ? r;c;1 R with the page number, as xterm does",
	"26state_query.test:37":       "DECRQSS m answers with a leading 0; (a complete SGR from the default pen)",
	"26state_query.test:42":       "DECRQSS m answers with a leading 0;",
	"26state_query.test:47":       "DECRQSS m answers with a leading 0;",
	"26state_query.test:52":       "DECRQSS m answers with a leading 0; and semicolon colour forms",
	"26state_query.test:57":       "DECRQSS m answers with a leading 0; and semicolon colour forms",
	"26state_query.test:62":       "answers always use 7-bit C1 (ESC [), never 8-bit CSI",
	"26state_query.test:7":        "DA1 answers as a VT220-class xterm (CSI ?62;22c), not libvterm's CSI ?1;2c",
	"28state_dbl_wh.test:27":      "DECDWL double-width lines are not implemented",
	"30state_pen.test:111":        "bold does not turn ANSI colours bright in the pen (a renderer may); libvterm's bold_highbright",
	"30state_pen.test:114":        "bold does not turn ANSI colours bright in the pen (a renderer may); libvterm's bold_highbright",
	"61screen_unicode.test:35":    "a cell keeps up to 32 bytes of combining marks; libvterm keeps 5",
	"61screen_unicode.test:41":    "a cell keeps up to 32 bytes of combining marks; libvterm keeps 5",
	"63screen_resize.test:103":    "RESET here is RIS, which also clears the scrollback, so there is nothing to pull back on growing",
	"63screen_resize.test:104":    "RESET here is RIS, which also clears the scrollback, so there is nothing to pull back on growing",
	"63screen_resize.test:105":    "RESET here is RIS, which also clears the scrollback, so there is nothing to pull back on growing",
	"63screen_resize.test:106":    "RESET here is RIS, which also clears the scrollback, so there is nothing to pull back on growing",
	"64screen_pen.test:28":        "alternative fonts (SGR 10-19) are not tracked",
	"64screen_pen.test:41":        "sub/superscript (SGR 73/74) are not tracked",
	"64screen_pen.test:42":        "sub/superscript (SGR 73/74) are not tracked",
	"64screen_pen.test:46":        "erase uses only the pen's background, as xterm and alacritty do; libvterm also keeps the foreground",
	"64screen_pen.test:47":        "erase uses only the pen's background, as xterm and alacritty do; libvterm also keeps the foreground",
	"64screen_pen.test:51":        "DECSCNM (reverse screen) is a mode for the renderer, not applied to cells",
	"64screen_pen.test:52":        "DECSCNM (reverse screen) is a mode for the renderer, not applied to cells",
	"64screen_pen.test:67":        "SETDEFAULTCOL (harness palette change) has no equivalent",
	"64screen_pen.test:70":        "SETDEFAULTCOL (harness palette change) has no equivalent",
	"64screen_pen.test:71":        "SETDEFAULTCOL (harness palette change) has no equivalent",
	"67screen_dbl_wh.test:16":     "DECDWL/DECDHL double-width/height lines are not implemented",
	"67screen_dbl_wh.test:24":     "DECDWL/DECDHL double-width/height lines are not implemented",
	"67screen_dbl_wh.test:25":     "DECDWL/DECDHL double-width/height lines are not implemented",
	"67screen_dbl_wh.test:32":     "DECDWL/DECDHL double-width/height lines are not implemented",
	"67screen_dbl_wh.test:37":     "DECDWL/DECDHL double-width/height lines are not implemented",
}

// TestLibvterm interprets the screen-level commands of libvterm's t/*.test
// files: INIT, RESET, RESIZE, PUSH, ENCIN and the checks ?screen_row,
// ?screen_chars, ?screen_text, ?screen_cell, ?screen_eol, ?cursor, ?pen,
// ?lineinfo, output and encout.
func TestLibvterm(t *testing.T) {
	dir := testdataDir(t, "libvterm")
	files, _ := filepath.Glob(filepath.Join(dir, "*.test"))
	failed := map[string]string{}
	total := 0
	for _, f := range files {
		r := runLibvterm(t, f)
		name := filepath.Base(f)
		for _, fl := range r.fails {
			failed[name+":"+strconv.Itoa(fl.line)] = fl.msg
		}
		total += r.pass + len(r.fails)
		t.Logf("libvterm %-32s pass %3d fail %3d n/a %3d", name, r.pass, len(r.fails), r.na)
	}
	checkKnown(t, "libvterm", failed, libvtermKnown, total)
}

type lvFail struct {
	line int
	msg  string
}

type lvResult struct {
	pass, na int
	fails    []lvFail
}

type lvRunner struct {
	term       *Terminal
	rows, cols int
	lastCmd    string
	utf8Off    bool
	enc        *Terminal // decoder for ENCIN
	encRead    int
	res        lvResult
	line       int
}

func runLibvterm(t *testing.T, path string) lvResult {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r := &lvRunner{rows: 25, cols: 80}
	r.reset()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		r.line++
		r.do(sc.Text())
	}
	return r.res
}

func (r *lvRunner) reset() {
	r.term = New(Options{Cols: r.cols, Rows: r.rows})
}

func (r *lvRunner) pass() { r.res.pass++ }
func (r *lvRunner) na()   { r.res.na++ }
func (r *lvRunner) fail(f string, a ...any) {
	r.res.fails = append(r.res.fails, lvFail{r.line, fmt.Sprintf(f, a...)})
}

func (r *lvRunner) do(line string) {
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
		return
	}
	if line[0] == ' ' || line[0] == '\t' || line[0] == '?' {
		r.check(strings.TrimSpace(line))
		return
	}
	if strings.HasPrefix(line, "$SEQ ") || strings.HasPrefix(line, "$REP ") {
		head, cmd, _ := strings.Cut(line, ": ")
		f := strings.Fields(head)
		if f[0] == "$REP" {
			n, _ := strconv.Atoi(f[1])
			for i := 0; i < n; i++ {
				r.command(cmd)
			}
			return
		}
		a, _ := strconv.Atoi(f[1])
		b, _ := strconv.Atoi(f[2])
		for i := a; i <= b; i++ {
			r.command(strings.ReplaceAll(cmd, `\#`, strconv.Itoa(i)))
		}
		return
	}
	r.command(line)
}

func (r *lvRunner) command(line string) {
	cmd, arg, _ := strings.Cut(line, " ")
	r.lastCmd = cmd
	switch cmd {
	case "INIT":
		r.rows, r.cols = 25, 80
		r.utf8Off = false
		r.enc = nil
		r.reset()
	case "RESET":
		r.term.Write([]byte("\x1bc"))
		r.term.Replies()
	case "RESIZE":
		a, b, _ := strings.Cut(arg, ",")
		r.rows, _ = strconv.Atoi(strings.TrimSpace(a))
		r.cols, _ = strconv.Atoi(strings.TrimSpace(b))
		r.term.Resize(r.cols, r.rows)
	case "UTF8":
		r.utf8Off = strings.TrimSpace(arg) == "0"
	case "PUSH":
		// "str"xN repeats the string.
		n := 1
		if i := strings.LastIndex(arg, `"x`); i > 0 {
			if v, err := strconv.Atoi(arg[i+2:]); err == nil {
				n, arg = v, arg[:i+1]
			}
		}
		b := unquoteLV(arg)
		for ; n > 0; n-- {
			r.term.Write(b)
		}
	case "ENCIN":
		if r.enc == nil {
			r.enc = New(Options{Cols: 1000, Rows: 1})
			r.encRead = 0
		}
		r.enc.Write(unquoteLV(arg))
	}
}

func (r *lvRunner) check(line string) {
	if r.utf8Off {
		r.na()
		return
	}
	kind, rest, _ := strings.Cut(line, " ")
	lhs, want, hasEq := strings.Cut(rest, "=")
	lhs, want = strings.TrimSpace(lhs), strings.TrimSpace(want)
	t := r.term
	switch kind {
	case "?screen_row":
		row, _ := strconv.Atoi(lhs)
		got := r.chars(row, 0, row+1, r.cols)
		r.cmpStr(got, want)
	case "?screen_chars":
		a := ints(lhs)
		if len(a) != 4 {
			r.na()
			return
		}
		r.cmpStr(r.chars(a[0], a[1], a[2], a[3]), want)
	case "?screen_text":
		a := ints(lhs)
		if len(a) != 4 {
			r.na()
			return
		}
		var hex []string
		for _, b := range []byte(r.chars(a[0], a[1], a[2], a[3])) {
			hex = append(hex, fmt.Sprintf("0x%x", b))
		}
		r.cmp(strings.Join(hex, ","), normHex(want))
	case "?cursor":
		row, col, _ := t.Cursor()
		r.cmp(fmt.Sprintf("%d,%d", row, col), want)
	case "?screen_eol":
		a := ints(lhs)
		eol := 1
		for c := a[1]; c < t.cols; c++ {
			if x := t.cur.row(a[0])[c]; x.r() != 0 || x.flags() != 0 {
				eol = 0
			}
		}
		r.cmp(strconv.Itoa(eol), want)
	case "?screen_cell":
		a := ints(lhs)
		r.cmp(r.cellString(a[0], a[1]), want)
	case "?lineinfo":
		row, _ := strconv.Atoi(lhs)
		got := ""
		if row > 0 && t.RowWrapped(row-1) {
			got = "cont"
		}
		r.cmp(got, want)
	case "?pen":
		got, ok := r.penAttr(lhs)
		if !ok {
			r.na()
			return
		}
		r.cmp(got, want)
	case "output":
		if r.lastCmd != "PUSH" || !hasEq && want != "" {
			r.na()
			return
		}
		wantB := string(unquoteLV(rest))
		got := string(t.Replies())
		if got != wantB {
			r.fail("output %q, want %q", got, wantB)
		} else {
			r.pass()
		}
	case "encout":
		if r.enc == nil {
			r.na()
			return
		}
		var got []string
		cells := r.enc.cur.row(0)
		end := r.enc.x
		if r.enc.wrapNext {
			end++
		}
		for c := r.encRead; c < end && c < len(cells); c++ {
			if cells[c].flags()&cellSpacer != 0 {
				continue
			}
			for _, cp := range r.enc.cellText(nil, cells[c]) {
				_ = cp
			}
			for _, cp := range string(r.enc.cellText(nil, cells[c])) {
				got = append(got, fmt.Sprintf("0x%x", cp))
			}
		}
		r.encRead = end
		r.cmp(strings.Join(got, ","), normHex(rest))
	default:
		r.na()
	}
}

func (r *lvRunner) cmp(got, want string) {
	if got != want {
		r.fail("got %s, want %s", got, want)
		return
	}
	r.pass()
}

func (r *lvRunner) cmpStr(got, want string) {
	if !strings.HasPrefix(want, `"`) && want != "" {
		// A list of code points.
		var cps []string
		for _, cp := range got {
			cps = append(cps, fmt.Sprintf("0x%x", cp))
		}
		r.cmp(strings.Join(cps, ","), normHex(want))
		return
	}
	w := string(unquoteLV(want))
	if got != w {
		r.fail("got %q, want %q", got, w)
		return
	}
	r.pass()
}

// chars follows vterm_screen_get_chars: rows joined by newlines, cells
// never written trimmed from the end of each row.
func (r *lvRunner) chars(r0, c0, r1, c1 int) string {
	t := r.term
	var b []byte
	for row := r0; row < r1 && row < t.rows; row++ {
		if row > r0 {
			b = append(b, '\n')
		}
		cells := t.cur.row(row)
		end := min(c1, t.cols)
		for end > c0 && cells[end-1].r() == 0 && cells[end-1].flags()&cellGrapheme == 0 {
			end--
		}
		for c := c0; c < end; c++ {
			if cells[c].flags()&cellSpacer == 0 {
				b = t.cellText(b, cells[c])
			}
		}
	}
	return string(b)
}

var lvPalette = [16][3]int{
	{0, 0, 0}, {224, 0, 0}, {0, 224, 0}, {224, 224, 0}, {0, 0, 224}, {224, 0, 224}, {0, 224, 224}, {224, 224, 224},
	{128, 128, 128}, {255, 64, 64}, {64, 255, 64}, {255, 255, 64}, {64, 64, 255}, {255, 64, 255}, {64, 255, 255}, {255, 255, 255},
}

func lvRGB(c Color, fg bool) string {
	if c == 0 {
		if fg {
			return "rgb(240,240,240)"
		}
		return "rgb(0,0,0)"
	}
	if i, ok := c.Indexed(); ok {
		switch {
		case i < 16:
			p := lvPalette[i]
			return fmt.Sprintf("rgb(%d,%d,%d)", p[0], p[1], p[2])
		case i < 232:
			i -= 16
			lv := []int{0x00, 0x5f, 0x87, 0xaf, 0xd7, 0xff}
			return fmt.Sprintf("rgb(%d,%d,%d)", lv[i/36], lv[i/6%6], lv[i%6])
		}
		v := 8 + int(i-232)*10
		return fmt.Sprintf("rgb(%d,%d,%d)", v, v, v)
	}
	rr, g, b, _ := c.RGB()
	return fmt.Sprintf("rgb(%d,%d,%d)", rr, g, b)
}

func (r *lvRunner) cellString(row, col int) string {
	t := r.term
	if row >= t.rows || col >= t.cols {
		return "out of range"
	}
	c := t.cur.row(row)[col]
	s := t.styles[c.style()]
	var cps []string
	if c.r() != 0 || c.flags()&cellGrapheme != 0 {
		for _, cp := range string(t.cellText(nil, c)) {
			cps = append(cps, fmt.Sprintf("0x%x", cp))
		}
	}
	w := 1
	if c.flags()&cellWide != 0 {
		w = 2
	}
	attrs := ""
	if s.attrs&Bold != 0 {
		attrs += "B"
	}
	if s.attrs&Underline != 0 {
		attrs += "U" + strconv.Itoa(int(max(s.ulStyle, 1)))
	}
	if s.attrs&Italic != 0 {
		attrs += "I"
	}
	if s.attrs&Blink != 0 {
		attrs += "K"
	}
	if s.attrs&Reverse != 0 {
		attrs += "R"
	}
	fg, bg := s.fg, s.bg
	return fmt.Sprintf("{%s} width=%d attrs={%s} fg=%s bg=%s", strings.Join(cps, ","), w, attrs, lvRGB(fg, true), lvRGB(bg, false))
}

func lvColor(c Color, fg bool) string {
	if c == 0 {
		if fg {
			return "rgb(240,240,240,is_default_fg)"
		}
		return "rgb(0,0,0,is_default_bg)"
	}
	if i, ok := c.Indexed(); ok {
		return fmt.Sprintf("idx(%d)", i)
	}
	rr, g, b, _ := c.RGB()
	return fmt.Sprintf("rgb(%d,%d,%d)", rr, g, b)
}

func (r *lvRunner) penAttr(name string) (string, bool) {
	p := r.term.pen
	onoff := func(a Attrs) string {
		if p.attrs&a != 0 {
			return "on"
		}
		return "off"
	}
	switch name {
	case "bold":
		return onoff(Bold), true
	case "italic":
		return onoff(Italic), true
	case "blink":
		return onoff(Blink), true
	case "reverse":
		return onoff(Reverse), true
	case "underline":
		if p.attrs&Underline == 0 {
			return "0", true
		}
		return strconv.Itoa(int(max(p.ulStyle, 1))), true
	case "foreground":
		return lvColor(p.fg, true), true
	case "background":
		return lvColor(p.bg, false), true
	}
	return "", false
}

// normHex rewrites a list of hex numbers as 0x%x joined by commas.
func normHex(s string) string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(f), "0x"), 16, 32)
		if err != nil {
			return s
		}
		out = append(out, fmt.Sprintf("0x%x", v))
	}
	return strings.Join(out, ",")
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// unquoteLV decodes a libvterm test string literal.
func unquoteLV(s string) []byte {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b = append(b, c)
			continue
		}
		i++
		switch s[i] {
		case 'e':
			b = append(b, 0x1b)
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'b':
			b = append(b, '\b')
		case 'a':
			b = append(b, 7)
		case '0':
			b = append(b, 0)
		case 'x':
			if i+2 < len(s)+0 && i+2 <= len(s)-1 || i+2 == len(s)-0 {
			}
			if i+2 < len(s)+1 {
				v, err := strconv.ParseUint(s[i+1:min(i+3, len(s))], 16, 8)
				if err == nil {
					b = append(b, byte(v))
					i += 2
					continue
				}
			}
			b = append(b, 'x')
		default:
			b = append(b, s[i])
		}
	}
	return b
}

var _ = sort.Strings
