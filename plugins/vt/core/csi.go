package core

// escDispatch runs an escape sequence ESC [intermediates] final.
func (t *Terminal) escDispatch(final byte) {
	p := &t.p
	t.lastChar = 0
	if p.interOv {
		return
	}
	if p.ninter == 1 {
		switch p.inter[0] {
		case '(', ')', '*', '+':
			switch final {
			case '0', 'B', 'A':
				t.charsets[p.inter[0]-'('] = final
			default:
				t.charsets[p.inter[0]-'('] = 'B'
			}
		case '#':
			if final == '8' {
				t.decaln()
			}
		}
		return
	}
	if p.ninter > 1 {
		return
	}
	switch final {
	case '7':
		t.saveCursor()
	case '8':
		t.restoreCursor()
	case 'D':
		t.index()
	case 'E':
		t.index()
		t.x = 0
	case 'M':
		t.reverseIndex()
	case 'H':
		t.tabs[t.x] = true
	case 'c':
		t.fullReset()
	case '=':
		t.appKeypad = true
	case '>':
		t.appKeypad = false
	case 'N':
		t.ss = 2
	case 'O':
		t.ss = 3
	case 'n':
		t.gl = 2
	case 'o':
		t.gl = 3
	case 'Z':
		t.replyString("\x1b[?62;22c")
	}
}

func (t *Terminal) decaln() {
	e := mkCell('E', 0, 0)
	for y := 0; y < t.rows; y++ {
		l := t.cur.line(y)
		l.fast = false
		fill(l.cells, e)
		l.used = len(l.cells)
		l.wrapped = false
	}
	// As xterm: origin mode off, the rendition reset, margins reset, home.
	t.origin = false
	t.setPen(style{})
	t.top, t.bot = 0, t.rows-1
	t.moveTo(0, 0)
}

func (t *Terminal) saveCursor() {
	t.saved[t.screenIndex()] = cursorState{
		x: t.x, y: t.y, wrapNext: t.wrapNext, pen: t.pen, origin: t.origin,
		charsets: t.charsets, gl: t.gl, valid: true,
	}
}

func (t *Terminal) restoreCursor() {
	s := &t.saved[t.screenIndex()]
	if !s.valid {
		t.origin = false
		t.setPen(style{})
		t.charsets = [4]byte{'B', 'B', 'B', 'B'}
		t.gl = 0
		t.moveTo(0, 0)
		return
	}
	t.origin = s.origin
	t.setPen(s.pen)
	t.charsets, t.gl = s.charsets, s.gl
	t.x = clamp(s.x, 0, t.cols-1)
	t.y = clamp(s.y, 0, t.rows-1)
	// DECRC brings back a pending wrap (the VT420 and VT520 manuals list the
	// wrap flag among what DECSC saves; current xterm and alacritty restore
	// it), so output interrupted by a save/draw/restore goes on where it
	// would have. Not if a resize moved the position. The xterm that
	// recorded the xterm.js fixture t0060 did not.
	t.wrapNext = s.wrapNext && t.x == s.x
}

func (t *Terminal) screenIndex() int {
	if t.cur == t.alt {
		return 1
	}
	return 0
}

// fullReset is RIS: everything back to power-on except the size.
func (t *Terminal) fullReset() {
	t.cur = t.main
	t.resetTables()
	for _, s := range []*screen{t.main, t.alt} {
		for i := range s.lines {
			s.lines[i].clear(cell(0))
			s.lines[i].wrapped = false
		}
	}
	t.sb.clear()
	t.resetState()
	t.title, t.icon = "", ""
}

// softReset is DECSTR.
func (t *Terminal) softReset() {
	t.insert, t.origin, t.autowrap, t.cursorVisible = false, false, true, true
	t.appCursor, t.appKeypad = false, false
	t.top, t.bot = 0, t.rows-1
	t.charsets = [4]byte{'B', 'B', 'B', 'B'}
	t.gl, t.ss = 0, 0
	t.setPen(style{})
	t.saved[t.screenIndex()] = cursorState{}
	t.wrapNext = false
}

// csiDispatch runs a control sequence CSI [private] params [intermediates] final.
func (t *Terminal) csiDispatch(final byte) {
	p := &t.p
	if p.interOv {
		return
	}
	var inter byte
	if p.ninter == 1 {
		inter = p.inter[0]
	} else if p.ninter > 1 {
		return
	}
	switch p.priv {
	case 0:
	case '?':
		t.csiPrivate(final, inter)
		return
	case '>':
		t.csiGT(final, inter)
		return
	case '=':
		if final == 'c' && inter == 0 {
			t.replyString("\x1bP!|00000000\x1b\\")
		}
		return
	default:
		return
	}
	if inter != 0 {
		t.csiInter(final, inter)
		return
	}
	n1 := p.arg(0, 1)
	lastChar := t.lastChar
	t.lastChar = 0
	switch final {
	case '@':
		t.insertBlanks(n1)
	case 'A':
		t.cursorUp(n1)
	case 'B':
		t.cursorDown(n1)
	case 'e': // VPR ignores the margins
		t.y = clamp(t.y+n1, 0, t.rows-1)
		t.wrapNext = false
	case 'C', 'a':
		t.x = clamp(t.x+n1, 0, t.cols-1)
		t.wrapNext = false
	case 'D':
		t.cursorBack(n1)
	case 'E':
		t.cursorDown(n1)
		t.x = 0
	case 'F':
		t.cursorUp(n1)
		t.x = 0
	case 'G', '`':
		t.x = clamp(n1-1, 0, t.cols-1)
		t.wrapNext = false
	case 'H', 'f':
		t.cup(p.arg(1, 1)-1, n1-1)
	case 'I':
		t.tabForward(n1)
	case 'J':
		t.eraseDisplay(p.raw(0), false)
	case 'K':
		t.eraseLine(p.raw(0), false)
	case 'L':
		t.insertLines(n1)
	case 'M':
		t.deleteLines(n1)
	case 'P':
		t.deleteChars(n1)
	case 'S':
		t.scrollUp(n1)
	case 'T':
		if p.ntop <= 1 {
			t.scrollDown(n1)
		}
	case 'X':
		t.eraseCells(t.y, t.x, t.x+n1, false)
		t.wrapNext = false
	case 'Z':
		t.tabBackward(n1)
	case 'b':
		if lastChar != 0 {
			r := lastChar
			if n1 > t.cols*t.rows {
				n1 = t.cols * t.rows
			}
			for i := 0; i < n1; i++ {
				t.print(r)
			}
		}
	case 'c':
		if p.raw(0) == 0 {
			t.replyString("\x1b[?62;22c")
		}
	case 'd':
		t.cupAbsRow(n1 - 1)
	case 'g':
		switch p.raw(0) {
		case 0:
			t.tabs[t.x] = false
		case 3:
			for i := range t.tabs {
				t.tabs[i] = false
			}
		}
	case 'h', 'l':
		for i := 0; i < int(p.ntop); i++ {
			t.setANSIMode(p.raw(i), final == 'h')
		}
	case 'm':
		t.sgr()
	case 'n':
		switch p.raw(0) {
		case 5:
			t.replyString("\x1b[0n")
		case 6:
			t.reply = t.cpr(t.reply, "\x1b[", "R")
		}
	case 'r':
		top := p.arg(0, 1) - 1
		bot := p.arg(1, t.rows) - 1
		if bot >= t.rows {
			bot = t.rows - 1
		}
		if top < bot {
			t.top, t.bot = top, bot
			t.moveTo(0, t.homeRow())
		}
	case 's':
		t.saveCursor()
	case 'u':
		// SCORC shares DECSC's slot, as in xterm, but is a cursor
		// positioning (VT510: "moves the cursor to the position saved"),
		// so a pending wrap is not brought back (xterm.js fixture t0061).
		t.restoreCursor()
		t.wrapNext = false
	case 't':
		t.windowOp()
	case 'j': // HPB
		t.x = clamp(t.x-n1, 0, t.cols-1)
		t.wrapNext = false
	}
}

func (t *Terminal) homeRow() int {
	if t.origin {
		return t.top
	}
	return 0
}

// cup moves to a 0-based position relative to the origin.
func (t *Terminal) cup(x, y int) {
	t.moveTo(x, y+t.homeRow())
}

func (t *Terminal) cupAbsRow(y int) {
	x := t.x
	t.moveTo(x, y+t.homeRow())
}

func (t *Terminal) csiInter(final, inter byte) {
	p := &t.p
	switch {
	case inter == '!' && final == 'p':
		t.softReset()
	case inter == '$' && final == 'p':
		m := p.raw(0)
		v := 0
		switch m {
		case 4:
			v = boolMode(t.insert)
		case 20:
			v = boolMode(t.lnm)
		case 2, 12:
			v = 4 // permanently reset
		}
		t.modeReport("\x1b[", m, v)
	case inter == ' ' && final == 'q':
		t.cursorStyle = clamp(p.raw(0), 0, 6)
	case inter == '"' && final == 'q':
		a := t.pen
		switch p.raw(0) {
		case 0, 2:
			a.attrs &^= Protected
		case 1:
			a.attrs |= Protected
		}
		t.setPen(a)
	case inter == ' ' && (final == '@' || final == 'A'): // SL, SR
		if t.y >= t.top && t.y <= t.bot {
			for y := t.top; y <= t.bot; y++ {
				t.shiftRow(y, 0, p.arg(0, 1), final == 'A')
			}
		}
	case inter == '\'' && (final == '}' || final == '~'): // DECIC, DECDC
		if t.y >= t.top && t.y <= t.bot {
			for y := t.top; y <= t.bot; y++ {
				t.shiftRow(y, t.x, p.arg(0, 1), final == '}')
			}
		}
	}
}

func (t *Terminal) csiPrivate(final, inter byte) {
	p := &t.p
	if inter == '$' && final == 'p' {
		m := p.raw(0)
		v, ok := t.decMode(m)
		r := 0
		if ok {
			r = boolMode(v)
		}
		t.modeReport("\x1b[?", m, r)
		return
	}
	if inter != 0 {
		return
	}
	switch final {
	case 'h', 'l':
		for i := 0; i < int(p.ntop); i++ {
			t.setDECMode(p.raw(i), final == 'h')
		}
	case 'J':
		t.eraseDisplay(p.raw(0), true)
	case 'K':
		t.eraseLine(p.raw(0), true)
	case 'n':
		if p.raw(0) == 6 {
			t.reply = t.cpr(t.reply, "\x1b[?", ";1R")
		}
	case 'u':
		t.replyString("\x1b[?0u")
	}
}
