package core

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// oscDispatch handles an operating system command.
func (t *Terminal) oscDispatch(b []byte) {
	num, rest := 0, b
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i < 6 {
		num = num*10 + int(b[i]-'0')
		i++
	}
	if i == 0 {
		return
	}
	if i < len(b) {
		if b[i] != ';' {
			return
		}
		rest = b[i+1:]
	} else {
		rest = nil
	}
	switch num {
	case 0, 1, 2:
		s := string(rest)
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		if num != 1 {
			t.title = s
		}
		if num != 2 {
			t.icon = s
		}
	case 4:
		// OSC 4 ; index ; ? queries palette entries.
		for len(rest) > 0 {
			var idx, spec []byte
			idx, rest = cut(rest)
			spec, rest = cut(rest)
			if string(spec) != "?" {
				continue
			}
			n, err := strconv.Atoi(string(idx))
			if err != nil || n < 0 || n > 255 {
				continue
			}
			r, g, bl := paletteRGB(uint8(n))
			t.colorReply("4;"+string(idx), r, g, bl)
		}
	case 10, 11, 12:
		// Each ? answers the next colour in sequence (xterm).
		for n := num; len(rest) > 0 && n <= 12; n++ {
			var spec []byte
			spec, rest = cut(rest)
			if string(spec) != "?" {
				continue
			}
			v := uint8(0xff)
			if n == 11 {
				v = 0
			}
			t.colorReply(strconv.Itoa(n), v, v, v)
		}
	}
	// OSC 8 (hyperlinks), 52 (clipboard) and the rest are ignored.
}

func cut(b []byte) (before, after []byte) {
	for i, c := range b {
		if c == ';' {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

func (t *Terminal) colorReply(prefix string, r, g, b uint8) {
	const hex = "0123456789abcdef"
	var buf [64]byte
	s := append(buf[:0], "\x1b]"...)
	s = append(s, prefix...)
	s = append(s, ";rgb:"...)
	for i, v := range [3]uint8{r, g, b} {
		if i > 0 {
			s = append(s, '/')
		}
		s = append(s, hex[v>>4], hex[v&15], hex[v>>4], hex[v&15])
	}
	if t.p.strBEL {
		s = append(s, 0x07)
	} else {
		s = append(s, "\x1b\\"...)
	}
	t.replyString(string(s))
}

// paletteRGB returns the xterm default colour of a palette index.
func paletteRGB(i uint8) (r, g, b uint8) {
	base := [16][3]uint8{
		{0, 0, 0}, {205, 0, 0}, {0, 205, 0}, {205, 205, 0}, {0, 0, 238}, {205, 0, 205}, {0, 205, 205}, {229, 229, 229},
		{127, 127, 127}, {255, 0, 0}, {0, 255, 0}, {255, 255, 0}, {92, 92, 255}, {255, 0, 255}, {0, 255, 255}, {255, 255, 255},
	}
	switch {
	case i < 16:
		c := base[i]
		return c[0], c[1], c[2]
	case i < 232:
		i -= 16
		lv := func(v uint8) uint8 {
			if v == 0 {
				return 0
			}
			return 55 + v*40
		}
		return lv(i / 36), lv(i / 6 % 6), lv(i % 6)
	}
	v := 8 + (i-232)*10
	return v, v, v
}

// dcsDispatch handles a device control string; cmd is private marker, two
// intermediates and final.
func (t *Terminal) dcsDispatch(cmd [4]byte, data []byte) {
	switch {
	case cmd == [4]byte{0, '$', 0, 'q'}: // DECRQSS
		t.decrqss(data)
	case cmd == [4]byte{0, '+', 0, 'q'}: // XTGETTCAP: nothing known
		t.replyString("\x1bP0+r\x1b\\")
	}
}

func (t *Terminal) decrqss(q []byte) {
	var buf [128]byte
	s := append(buf[:0], "\x1bP1$r"...)
	switch string(q) {
	case "m":
		s = appendSGR(s, t.pen)
		s = append(s, 'm')
	case "r":
		s = strconv.AppendInt(s, int64(t.top+1), 10)
		s = append(s, ';')
		s = strconv.AppendInt(s, int64(t.bot+1), 10)
		s = append(s, 'r')
	case " q":
		s = strconv.AppendInt(s, int64(t.cursorStyle), 10)
		s = append(s, " q"...)
	case "\"q":
		if t.pen.attrs&Protected != 0 {
			s = append(s, "1\"q"...)
		} else {
			s = append(s, "0\"q"...)
		}
	case "\"p":
		s = append(s, "62;1\"p"...)
	default:
		t.replyString("\x1bP0$r\x1b\\")
		return
	}
	s = append(s, "\x1b\\"...)
	t.replyString(string(s))
}
