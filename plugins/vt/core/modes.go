package core

func (t *Terminal) setANSIMode(m int, on bool) {
	switch m {
	case 4:
		t.insert = on
	case 20:
		t.lnm = on
	}
}

// decMode returns a DEC private mode's state, ok false if unrecognised.
func (t *Terminal) decMode(m int) (v, ok bool) {
	switch m {
	case 1:
		return t.appCursor, true
	case 3:
		return t.cols == 132, true
	case 5:
		return t.reverseVideo, true
	case 6:
		return t.origin, true
	case 7:
		return t.autowrap, true
	case 12:
		return t.cursorBlink, true
	case 25:
		return t.cursorVisible, true
	case 45:
		return t.reverseWrap, true
	case 47, 1047, 1049:
		return t.cur == t.alt, true
	case 66:
		return t.appKeypad, true
	case 9, 1000, 1002, 1003:
		return t.mouse == m, true
	case 1005, 1006, 1015:
		return t.mouseEnc == m, true
	case 1004:
		return t.focus, true
	case 1007:
		return t.altScroll, true
	case 2004:
		return t.bracketed, true
	case 2026:
		return t.syncOutput, true
	}
	return false, false
}

func (t *Terminal) setDECMode(m int, on bool) {
	switch m {
	case 1:
		t.appCursor = on
	case 3:
		// DECCOLM: the size belongs to the host's pty, so only the side
		// effects apply: clear, reset margins, home.
		t.eraseDisplay(2, false)
		t.top, t.bot = 0, t.rows-1
		t.moveTo(0, 0)
	case 5:
		t.reverseVideo = on
	case 6:
		t.origin = on
		t.moveTo(0, t.homeRow())
	case 7:
		t.autowrap = on
		if !on {
			t.wrapNext = false
		}
	case 12:
		t.cursorBlink = on
	case 25:
		t.cursorVisible = on
	case 45:
		t.reverseWrap = on
	case 47:
		t.switchScreen(on, false)
	case 1047:
		if !on && t.cur == t.alt {
			t.eraseDisplay(2, false)
		}
		t.switchScreen(on, false)
	case 1048:
		if on {
			t.saveCursor()
		} else {
			t.restoreCursor()
		}
	case 1049:
		if on {
			if t.cur == t.alt {
				return
			}
			t.saveCursor()
			t.switchScreen(true, true)
		} else if t.cur == t.alt {
			t.switchScreen(false, false)
			t.restoreCursor()
		}
	case 66:
		t.appKeypad = on
	case 9, 1000, 1002, 1003:
		if on {
			t.mouse = m
		} else {
			t.mouse = 0
		}
	case 1005, 1006, 1015:
		if on {
			t.mouseEnc = m
		} else if t.mouseEnc == m {
			t.mouseEnc = 0
		}
	case 1004:
		t.focus = on
	case 1007:
		t.altScroll = on
	case 2004:
		t.bracketed = on
	case 2026:
		t.syncOutput = on
	}
}

func (t *Terminal) switchScreen(alt, clear bool) {
	want := t.main
	if alt {
		want = t.alt
	}
	if t.cur == want {
		return
	}
	t.cur = want
	if clear {
		for y := 0; y < t.rows; y++ {
			l := t.cur.line(y)
			l.clear(t.eraseBlank())
			l.wrapped = false
		}
	}
}
