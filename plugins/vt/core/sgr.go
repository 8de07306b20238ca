package core

import "strconv"

// sgr applies Select Graphic Rendition from the parameters.
func (t *Terminal) sgr() {
	p := &t.p
	s := t.pen
	n := int(p.np)
	if n == 0 {
		t.setPen(style{})
		return
	}
	for i := 0; i < n; {
		v := int(p.params[i])
		// j is the end of this parameter's subparameters. (No closure
		// here: TinyGo moves the variables a closure captures to the heap,
		// two allocations per SGR.)
		j := i + 1
		for j < n && p.sub&(1<<j) != 0 {
			j++
		}
		// Constant cases: the compiler searches them in a few comparisons
		// (ranges in a bare switch are tried one by one, some 28 of
		// them before 38).
		switch v {
		case 0:
			s = style{}
		case 1:
			s.attrs |= Bold
		case 2:
			s.attrs |= Dim
		case 3:
			s.attrs |= Italic
		case 4:
			u := 1
			if j > i+1 {
				u = int(p.params[i+1])
			}
			if u == 0 || u > 5 {
				if u == 0 {
					s.attrs &^= Underline
					s.ulStyle = 0
				}
			} else {
				s.attrs |= Underline
				s.ulStyle = uint8(u)
			}
		case 5, 6:
			s.attrs |= Blink
		case 7:
			s.attrs |= Reverse
		case 8:
			s.attrs |= Invisible
		case 9:
			s.attrs |= Strike
		case 21:
			s.attrs |= Underline
			s.ulStyle = 2
		case 22:
			s.attrs &^= Bold | Dim
		case 23:
			s.attrs &^= Italic
		case 24:
			s.attrs &^= Underline
			s.ulStyle = 0
		case 25:
			s.attrs &^= Blink
		case 27:
			s.attrs &^= Reverse
		case 28:
			s.attrs &^= Invisible
		case 29:
			s.attrs &^= Strike
		case 30, 31, 32, 33, 34, 35, 36, 37:
			s.fg = IndexedColor(uint8(v - 30))
		case 39:
			s.fg = 0
		case 40, 41, 42, 43, 44, 45, 46, 47:
			s.bg = IndexedColor(uint8(v - 40))
		case 49:
			s.bg = 0
		case 53:
			s.attrs |= Overline
		case 55:
			s.attrs &^= Overline
		case 59:
			s.ul = 0
		case 90, 91, 92, 93, 94, 95, 96, 97:
			s.fg = IndexedColor(uint8(v - 90 + 8))
		case 100, 101, 102, 103, 104, 105, 106, 107:
			s.bg = IndexedColor(uint8(v - 100 + 8))
		case 38, 48, 58:
			var c Color
			var ok bool
			if j > i+1 {
				c, ok = colonColor(p.params[i+1 : j])
			} else {
				c, ok, j = semiColor(p, i+1, n)
			}
			if ok {
				switch v {
				case 38:
					s.fg = c
				case 48:
					s.bg = c
				default:
					s.ul = c
				}
			}
		}
		i = j
	}
	if sameStyle(&s, &t.pen) && int(t.penIdx) < len(t.styles) && sameStyle(&t.styles[t.penIdx], &s) {
		return // no change (e.g. a reset of what was not set)
	}
	// setPen and intern's first step, inline (two calls fewer per SGR).
	bgChanged := s.bg != t.pen.bg
	t.pen = s
	k := s
	if k.attrs&Underline == 0 {
		k.ulStyle = 0
	}
	h32 := styleHash32(k)
	if i := t.styleHint[uint8(h32>>24)]; int(i) < len(t.styles) && sameStyle(&t.styles[i], &k) {
		t.penIdx = i
	} else {
		t.penIdx = t.internSlow(k, h32)
	}
	if s.bg == 0 {
		t.blank, t.blankStale = 0, false
	} else if bgChanged || t.blank == 0 || int(t.blank.style()) >= len(t.styles) || !sameStyle(&t.styles[t.blank.style()], &style{bg: s.bg}) {
		// The erase cell is interned when something erases (eraseBlank),
		// not at every SGR that changes the background: coloured text
		// changes it far more often than it erases.
		t.blankStale = true
	}
}

// colonColor decodes the subparameters of 38:5:i or 38:2:[cs:]r:g:b.
func colonColor(sub []uint16) (Color, bool) {
	switch sub[0] {
	case 5:
		if len(sub) >= 2 && sub[1] <= 255 {
			return IndexedColor(uint8(sub[1])), true
		}
	case 2:
		rgb := sub[1:]
		if len(rgb) >= 4 {
			rgb = rgb[1:] // colour space id
		}
		if len(rgb) >= 3 {
			return RGBColor(uint8(min(rgb[0], 255)), uint8(min(rgb[1], 255)), uint8(min(rgb[2], 255))), true
		}
	}
	return 0, false
}

// semiColor decodes 38;5;i or 38;2;r;g;b starting at params[i], returning
// the index after what it consumed.
func semiColor(p *parser, i, n int) (Color, bool, int) {
	if i >= n {
		return 0, false, i
	}
	switch p.params[i] {
	case 5:
		if i+1 < n {
			v := p.params[i+1]
			return IndexedColor(uint8(min(v, 255))), v <= 255, i + 2
		}
		return 0, false, n
	case 2:
		if i+3 < n {
			return RGBColor(uint8(min(p.params[i+1], 255)), uint8(min(p.params[i+2], 255)), uint8(min(p.params[i+3], 255))), true, i + 4
		}
		return 0, false, n
	}
	return 0, false, i + 1
}

// appendSGR appends the parameters (without CSI and m) that set s from the
// default pen, starting with "0".
func appendSGR(dst []byte, s style) []byte {
	dst = append(dst, '0')
	a := s.attrs
	if a&Bold != 0 {
		dst = append(dst, ";1"...)
	}
	if a&Dim != 0 {
		dst = append(dst, ";2"...)
	}
	if a&Italic != 0 {
		dst = append(dst, ";3"...)
	}
	if a&Underline != 0 {
		if s.ulStyle > 1 {
			dst = append(dst, ";4:"...)
			dst = append(dst, '0'+s.ulStyle)
		} else {
			dst = append(dst, ";4"...)
		}
	}
	if a&Blink != 0 {
		dst = append(dst, ";5"...)
	}
	if a&Reverse != 0 {
		dst = append(dst, ";7"...)
	}
	if a&Invisible != 0 {
		dst = append(dst, ";8"...)
	}
	if a&Strike != 0 {
		dst = append(dst, ";9"...)
	}
	if a&Overline != 0 {
		dst = append(dst, ";53"...)
	}
	dst = appendColor(dst, s.fg, 30, 90, 38)
	dst = appendColor(dst, s.bg, 40, 100, 48)
	if s.ul != 0 {
		dst = appendColor(dst, s.ul, -1, -1, 58)
	}
	return dst
}

func appendColor(dst []byte, c Color, base, bright, ext int) []byte {
	if c == 0 {
		return dst
	}
	dst = append(dst, ';')
	if i, ok := c.Indexed(); ok {
		switch {
		case i < 8 && base >= 0:
			return strconv.AppendInt(dst, int64(base+int(i)), 10)
		case i < 16 && bright >= 0:
			return strconv.AppendInt(dst, int64(bright+int(i)-8), 10)
		}
		dst = strconv.AppendInt(dst, int64(ext), 10)
		dst = append(dst, ";5;"...)
		return strconv.AppendInt(dst, int64(i), 10)
	}
	r, g, b, _ := c.RGB()
	dst = strconv.AppendInt(dst, int64(ext), 10)
	dst = append(dst, ";2;"...)
	dst = strconv.AppendInt(dst, int64(r), 10)
	dst = append(dst, ';')
	dst = strconv.AppendInt(dst, int64(g), 10)
	dst = append(dst, ';')
	return strconv.AppendInt(dst, int64(b), 10)
}
