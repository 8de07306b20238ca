package core

import (
	"bytes"
	"strings"
)

// text bounds an event's text and makes it valid UTF-8 for JSON.
func text(v []byte) string {
	if len(v) > maxText {
		v = v[:maxText]
	}
	return strings.ToValidUTF8(string(v), "?")
}

// escCut reports whether p ends inside an escape sequence.
func escCut(p []byte) bool {
	i := bytes.LastIndexByte(p, 0x1b)
	if i < 0 {
		return false
	}
	if i+1 >= len(p) {
		return true
	}
	switch p[i+1] {
	case '[':
		for _, c := range p[i+2:] {
			if c >= 0x40 && c <= 0x7e {
				return false
			}
		}
		return true
	case ']':
		return bytes.IndexByte(p[i+2:], 0x07) < 0
	}
	return false
}

// visible appends p as a terminal shows it on one line: escape sequences
// (CSI, OSC, two-byte) and control characters dropped, backspace applied;
// CR is kept when keepCR (callers look after the last one), tab kept. An
// escape sequence cut off at the end is dropped.
func visible(dst, p []byte, keepCR bool) []byte {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == 0x1b:
			if i+1 >= len(p) {
				return dst
			}
			switch p[i+1] {
			case '[':
				j := i + 2
				for j < len(p) && (p[j] < 0x40 || p[j] > 0x7e) {
					j++
				}
				if j >= len(p) {
					return dst
				}
				i = j
			case ']':
				j := i + 2
				for j < len(p) && p[j] != 0x07 && !(p[j] == 0x1b && j+1 < len(p) && p[j+1] == '\\') {
					j++
				}
				if j >= len(p) {
					return dst
				}
				if p[j] == 0x1b {
					j++
				}
				i = j
			default:
				i++
			}
		case c == '\b':
			if n := len(dst); n > 0 && dst[n-1] != '\r' {
				dst = dst[:n-1]
			}
		case c == '\r':
			if keepCR {
				dst = append(dst, c)
			}
		case c == '\t':
			dst = append(dst, c)
		case c < 0x20 || c == 0x7f:
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
