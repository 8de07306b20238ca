package core

// Options configure a Terminal.
type Options struct {
	Cols, Rows int // screen size, default 80x24, clamped to 1..1000 and to MaxCells cells (rows give way)
	Scrollback int // lines kept: 0 means the default 10000, <0 none, at most 100,000 (and SBMaxBytes)
}

// Modes are the terminal modes a host needs to encode input for the peer.
type Modes struct {
	AppCursor, AppKeypad, BracketedPaste, Insert, Origin, AutoWrap, FocusEvents bool
	Mouse                                                                       int // 0, 9, 1000, 1002 or 1003
	MouseEncoding                                                               int // 0 (default), 1005, 1006 or 1015
}

const (
	defaultCols       = 80
	defaultRows       = 24
	maxDim            = 1000
	defaultScrollback = 10000
	// MaxCells bounds a screen's cols×rows. A terminal's memory is
	// bounded by its size (two screens of 8-byte cells, style and
	// grapheme tables of at most MaxCells+1024 entries, a scrollback of at
	// most SBMaxBytes), and terminals share an instance whose memory is
	// capped: see RATIONALE "One screen cannot exhaust the instance it
	// shares". 32768 cells is 256x128, 200x160 or 1000x32.
	MaxCells = 1 << 15
	// maxScrollbackLines bounds the scrollback option (its index costs 4
	// bytes a line).
	maxScrollbackLines = 100_000
)

// cursorState is what DECSC saves.
type cursorState struct {
	x, y     int
	wrapNext bool
	pen      style
	origin   bool
	charsets [4]byte
	gl       uint8
	valid    bool
}

// Terminal is a VT/xterm terminal emulator core: bytes in through Write,
// screen, scrollback and replies out. It does no I/O and is not safe for
// concurrent use.
type Terminal struct {
	p parser

	cols, rows int
	main, alt  *screen
	cur        *screen // main or alt
	sb         scrollback

	x, y     int
	wrapNext bool // pending wrap: the last column was written with autowrap on
	pen      style
	penIdx   uint16
	blank    cell // erase cell: blank with the pen's background (read it with eraseBlank)
	// blankStale says blank is still to be interned for the pen's
	// background (set by sgr; eraseBlank does it).
	blankStale bool

	top, bot int // scroll region, inclusive rows
	tabs     []bool

	charsets [4]byte // G0..G3 designations: 'B' ASCII, '0' DEC graphics, 'A' UK
	gl       uint8   // charset invoked into GL
	ss       uint8   // single shift pending: 0, 2 or 3

	saved    [2]cursorState // DECSC per screen: main, alt
	lastChar rune           // for REP

	// modes
	insert, lnm, origin, autowrap, cursorVisible bool
	appCursor, appKeypad, bracketed, focus       bool
	reverseVideo, cursorBlink, reverseWrap       bool
	syncOutput, altScroll                        bool
	mouse, mouseEnc                              int
	cursorStyle                                  int

	title, icon string

	styles     []style
	styleSlots []uint16 // the index of styles (styletab.go)
	graphemes  graphTable
	graphSlots []uint32 // the index of graphemes (graphtab.go)
	// compaction's working arrays, kept between compactions in the
	// TinyGo build only (keep in grow_tinygo.go); nil in the Go build.
	scratch compactScratch

	reply []byte

	// noCompact is set while cells outside the screens (a reflow in
	// progress) hold style and grapheme indices that compact cannot see.
	noCompact bool
	// reflowCells is the size of the screen a reflow is building.
	reflowCells int
	// eagerRows keeps every row's cells up to date (no lazy rows, see
	// line): the reference the tests compare lazy rows with.
	eagerRows bool
	// noMarkCache: combine never takes markCache's answer (the reference
	// TestMarkCache compares with).
	noMarkCache bool
	// newEntries counts the style and grapheme entries asked for since the
	// last compaction (see mayCompact).
	newEntries int

	// The tables below come last: the fields above, which every byte
	// reads, keep their offsets and their cache lines.
	// styleHint maps a hash of a style to the index intern last gave it:
	// a hint checked against styles before use, so it needs no
	// invalidation when the table is compacted or replaced, and spares
	// the map lookup (dear under WebAssembly) for the few styles a
	// program keeps switching between.
	styleHint [256]uint16
	// markCache and graphGen: see markEntry.
	markCache [64]markEntry
	graphGen  uint32
}

func clampDim(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 1:
		return 1
	case v > maxDim:
		return maxDim
	}
	return v
}

// clampCells makes a size of at most MaxCells cells, the rows giving way.
func clampCells(cols, rows int) (int, int) {
	if cols*rows > MaxCells {
		rows = max(1, MaxCells/cols)
	}
	return cols, rows
}

// tableCap bounds the style and grapheme tables: the largest screenful of
// distinct entries and some room. Their memory is most of what a terminal
// holds beyond its cells (about 40 bytes an entry), so they are bounded by
// the largest screen, not by the 65536 a cell's index can name. The same
// bound for every size: a bound per size would spare nothing in the worst
// case (which is the largest size) and make a small screen that shows
// many colours compact four times as often (the worst output ran four
// times slower). During a reflow the new screen counts too.
func (t *Terminal) tableCap() int { return min(maxStyles, MaxCells+t.reflowCells+1024) }

// mayCompact says whether a full table may be compacted now. Both screens
// full of distinct styles can use more entries than tableCap: compacting
// then frees little, and compacting at every new style would cost a scan
// of both screens per cell written. So a compaction waits until half a
// screenful of new entries was asked for since the last one (those asked
// for meanwhile get the default style, or lose their marks): compaction
// costs O(1) a new entry, whatever the output.
func (t *Terminal) mayCompact() bool {
	return !t.noCompact && t.newEntries >= t.cols*t.rows/2
}

// New returns a terminal in its power-on state.
func New(o Options) *Terminal {
	t := &Terminal{}
	t.cols, t.rows = clampCells(clampDim(o.Cols, defaultCols), clampDim(o.Rows, defaultRows))
	sb := o.Scrollback
	switch {
	case sb == 0:
		sb = defaultScrollback
	case sb < 0:
		sb = 0
	case sb > maxScrollbackLines:
		sb = maxScrollbackLines
	}
	t.sb.max = sb
	t.p.str = make([]byte, 0, 256)
	t.resetTables()
	t.main = newScreen(t.cols, t.rows, cell(0))
	t.alt = newScreen(t.cols, t.rows, cell(0))
	t.cur = t.main
	t.resetState()
	return t
}

func (t *Terminal) resetTables() {
	t.styles = append(reserve(t.styles[:0], 1), style{})
	t.rebuildStyleSlots()
	t.graphemes.reset()
	t.graphGen++
	t.rebuildGraphSlots()
}

// resetState puts modes, pen, cursor, margins and tabs in their power-on
// state without touching screen contents.
func (t *Terminal) resetState() {
	t.x, t.y, t.wrapNext = 0, 0, false
	t.setPen(style{})
	t.top, t.bot = 0, t.rows-1
	t.resetTabs(0)
	t.charsets = [4]byte{'B', 'B', 'B', 'B'}
	t.gl, t.ss = 0, 0
	t.saved = [2]cursorState{}
	t.lastChar = 0
	t.insert, t.lnm, t.origin = false, false, false
	t.autowrap, t.cursorVisible = true, true
	t.appCursor, t.appKeypad, t.bracketed, t.focus = false, false, false, false
	t.reverseVideo, t.cursorBlink, t.reverseWrap = false, false, false
	t.syncOutput, t.altScroll = false, false
	t.mouse, t.mouseEnc, t.cursorStyle = 0, 0, 0
}

func (t *Terminal) resetTabs(from int) {
	if cap(t.tabs) >= t.cols {
		t.tabs = t.tabs[:t.cols]
	} else {
		n := make([]bool, t.cols)
		copy(n, t.tabs)
		t.tabs = n
	}
	for i := from; i < t.cols; i++ {
		t.tabs[i] = i%8 == 0 && i > 0
	}
}

// setPen makes s the current pen and interns it. The erase cell takes the
// pen's background: interned only when the background changes (or the
// default one, which is style 0).
func (t *Terminal) setPen(s style) {
	bgChanged := s.bg != t.pen.bg
	t.pen = s
	t.penIdx = t.intern(s)
	t.blankStale = false
	switch {
	case s.bg == 0:
		t.blank = 0
	case bgChanged || t.blank == 0 || int(t.blank.style()) >= len(t.styles) || !sameStyle(&t.styles[t.blank.style()], &style{bg: s.bg}):
		t.blank = mkCell(0, t.intern(style{bg: s.bg}), 0)
	}
}

// eraseBlank returns the erase cell, interning it first if an SGR left it
// stale.
func (t *Terminal) eraseBlank() cell {
	if t.blankStale {
		t.fixBlank()
	}
	return t.blank
}

func (t *Terminal) fixBlank() {
	t.blankStale = false
	t.blank = mkCell(0, t.intern(style{bg: t.pen.bg}), 0)
}

// intern returns the index of s in the style table, adding it if needed.
func (t *Terminal) intern(s style) uint16 {
	if s.attrs&Underline == 0 {
		s.ulStyle = 0
	}
	h32 := styleHash32(s)
	h := uint8(h32 >> 24)
	if i := t.styleHint[h]; int(i) < len(t.styles) && sameStyle(&t.styles[i], &s) {
		return i
	}
	return t.internSlow(s, h32)
}

// internSlow is intern past the hint: styleLookup, inline, whose probe
// ends at the empty slot a new style then takes.
func (t *Terminal) internSlow(s style, h32 uint32) uint16 {
	h := uint8(h32 >> 24)
	slots := t.styleSlots
	mask := uint32(len(slots) - 1)
	j := h32 & mask
	for ; slots[j] != 0; j = (j + 1) & mask {
		if v := slots[j]; sameStyle(&t.styles[v-1], &s) {
			t.styleHint[h] = v - 1
			return v - 1
		}
	}
	t.newEntries++
	if len(t.styles) >= t.tableCap() {
		if !t.mayCompact() {
			return 0
		}
		t.compact()
		if len(t.styles) >= t.tableCap() {
			return 0 // every style is in use on screen; fall back to the default
		}
		i := uint16(len(t.styles))
		t.styles = append(reserve(t.styles, 1), s)
		t.styleInsert(i, h32)
		t.styleHint[h] = i
		return i
	}
	i := uint16(len(t.styles))
	t.styles = append(reserve(t.styles, 1), s)
	if 2*(len(t.styles)+1) > len(slots) {
		t.rebuildStyleSlots() // indexes i too
	} else {
		slots[j] = i + 1
	}
	t.styleHint[h] = i
	return i
}

// Size returns the screen size.
func (t *Terminal) Size() (cols, rows int) { return t.cols, t.rows }

// Cursor returns the 0-based cursor position, always inside the screen, and
// whether the cursor is shown (DECTCEM).
func (t *Terminal) Cursor() (row, col int, visible bool) {
	return t.y, t.x, t.cursorVisible
}

// Title returns the window title set by OSC 0 or 2.
func (t *Terminal) Title() string { return t.title }

// AltScreen reports whether the alternate screen is shown.
func (t *Terminal) AltScreen() bool { return t.cur == t.alt }

// Modes returns the input-related modes.
func (t *Terminal) Modes() Modes {
	return Modes{
		AppCursor: t.appCursor, AppKeypad: t.appKeypad, BracketedPaste: t.bracketed,
		Insert: t.insert, Origin: t.origin, AutoWrap: t.autowrap, FocusEvents: t.focus,
		Mouse: t.mouse, MouseEncoding: t.mouseEnc,
	}
}

// Replies returns the answers to terminal queries accumulated since the last
// call. The slice aliases an internal buffer: use it before the next Write.
func (t *Terminal) Replies() []byte {
	r := t.reply
	t.reply = t.reply[:0]
	return r
}

func (t *Terminal) replyString(s string) {
	if len(t.reply)+len(s) <= maxReplies {
		t.reply = append(t.reply, s...)
	}
}

// ScrollbackLen returns the number of lines in the scrollback.
func (t *Terminal) ScrollbackLen() int { return t.sb.n }

// RowWrapped reports whether visible row continues on the next row.
func (t *Terminal) RowWrapped(row int) bool {
	if row < 0 || row >= t.rows {
		return false
	}
	return t.cur.line(row).wrapped
}

// compactScratch holds compact's working arrays between compactions in
// the TinyGo build (keep in grow_tinygo.go; the Go build
// leaves it empty and allocates them afresh), so
// that a full table's compactions allocate nothing: the collector's false
// roots (constant tables scanned as words) pin, for good, whatever object
// lies at the addresses they hold, and a large array freed and reallocated
// at every compaction is in the end such an object.
type compactScratch struct {
	smap, gmap []int32
	styles     []style
	graphBuf   []byte
	graphEnd   []uint32
}
