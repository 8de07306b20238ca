package policy

import (
	"bytes"
	"unicode/utf8"
)

// maxLine bounds the line Typed keeps: a longer line is refused when it
// is submitted, never checked by a part of it.
const maxLine = 16 << 10

// submitKeys are the only keys key can refuse at: CR, LF, C-o, and C-e
// (after C-x).
const submitKeys = "\r\n\x0f\x05"

// Typed follows the line being typed into an interactive shell, so the
// command is checked when Enter would send it (SPEC TRUST-6: SSH shells,
// Telnet sessions, local programs).
// It models an emacs-style line editor: printable text is inserted at the
// cursor; Home/End, the arrows, C-a, C-e, C-b and C-f move it; BS and DEL
// delete before it, Delete and C-d at it; C-k kills to the end, C-w the
// word before, C-u everything before; C-c and C-g clear the line; CR or LF
// (or C-o) submits it; C-x C-e (run the line after editing it in an
// editor) is refused. History, completion and other escape sequences are beyond
// it: the session also checks the line as the screen shows it
// (session.LineCheck), and a line is refused if either check refuses it.
type Typed struct {
	line []byte
	cur  int  // the cursor, a byte offset on a rune boundary
	long bool // more than maxLine was typed on this line
	esc  int  // 0 none, 1 after ESC, 2 inside CSI, 3 after SS3
	arg  []byte
	ctlx bool // after C-x
}

// Check runs input through the line editor model and checks every line
// it submits. On a blocked line it returns the error and leaves the state
// as it was before input: the caller sends nothing.
func (t *Typed) Check(r *Rules, input []byte) error {
	if r.Empty() {
		*t = Typed{line: t.line[:0]}
		return nil
	}
	if !bytes.ContainsAny(input, submitKeys) {
		// No key that can refuse (Enter, C-o, the C-e of C-x C-e): edit in
		// place rather than copy the line on every keystroke.
		for _, c := range input {
			_ = t.key(r, c)
		}
		return nil
	}
	n := Typed{line: append([]byte(nil), t.line...), cur: t.cur, long: t.long, esc: t.esc, arg: append([]byte(nil), t.arg...), ctlx: t.ctlx}
	for _, c := range input {
		if err := n.key(r, c); err != nil {
			return err
		}
	}
	*t = n
	return nil
}

func (t *Typed) key(r *Rules, c byte) error {
	switch t.esc {
	case 1:
		switch c {
		case '[':
			t.esc, t.arg = 2, t.arg[:0]
		case 'O':
			t.esc = 3
		default:
			t.esc = 0 // a meta key: not modelled
		}
		return nil
	case 2:
		if c >= 0x40 && c <= 0x7e {
			t.esc = 0
			t.csi(c)
		} else if len(t.arg) < 16 {
			t.arg = append(t.arg, c)
		}
		return nil
	case 3:
		t.esc = 0
		t.arg = t.arg[:0]
		t.csi(c)
		return nil
	}
	if t.ctlx {
		t.ctlx = false
		if c == 0x05 {
			return &BlockedError{Command: string(t.line), Reason: "the keys C-x C-e (edit the line in an editor, then run it) cannot be checked"}
		}
	}
	switch {
	case c == 0x1b:
		t.esc = 1
	case c == 0x18:
		t.ctlx = true
	case c == '\r' || c == '\n' || c == 0x0f: // C-o: bash's operate-and-get-next runs the line too
		if t.long {
			return &BlockedError{Command: string(t.line[:80]) + "…", Reason: "the line is longer than 16 KiB and cannot be checked whole; clear it with the key C-u"}
		}
		if len(t.line) > 0 {
			if err := r.Check(string(t.line)); err != nil {
				return err
			}
		}
		t.clear()
	case c == 0x7f || c == 0x08:
		if t.cur > 0 {
			_, n := utf8.DecodeLastRune(t.line[:t.cur])
			t.cut(t.cur-n, t.cur)
		}
	case c == 0x01:
		t.cur = 0
	case c == 0x05:
		t.cur = len(t.line)
	case c == 0x02:
		t.left()
	case c == 0x06:
		t.right()
	case c == 0x04:
		t.del()
	case c == 0x0b:
		t.cut(t.cur, len(t.line))
	case c == 0x17:
		i := t.cur
		for i > 0 && t.line[i-1] == ' ' {
			i--
		}
		for i > 0 && t.line[i-1] != ' ' {
			i--
		}
		t.cut(i, t.cur)
	case c == 0x15:
		t.cut(0, t.cur)
	case c == 0x03 || c == 0x07:
		t.clear()
	case c == '\t' || c >= 0x20:
		if len(t.line) >= maxLine {
			t.long = true
			return nil
		}
		t.line = append(t.line, 0)
		copy(t.line[t.cur+1:], t.line[t.cur:])
		t.line[t.cur] = c
		t.cur++
	}
	return nil
}

// csi applies the final byte of a CSI or SS3 sequence (the cursor keys).
func (t *Typed) csi(final byte) {
	switch final {
	case 'D':
		t.left()
	case 'C':
		t.right()
	case 'H':
		t.cur = 0
	case 'F':
		t.cur = len(t.line)
	case '~':
		switch string(t.arg) {
		case "1", "7":
			t.cur = 0
		case "4", "8":
			t.cur = len(t.line)
		case "3":
			t.del()
		}
	}
}

func (t *Typed) left() {
	if t.cur > 0 {
		_, n := utf8.DecodeLastRune(t.line[:t.cur])
		t.cur -= n
	}
}

func (t *Typed) right() {
	if t.cur < len(t.line) {
		_, n := utf8.DecodeRune(t.line[t.cur:])
		t.cur += n
	}
}

func (t *Typed) del() {
	if t.cur < len(t.line) {
		_, n := utf8.DecodeRune(t.line[t.cur:])
		t.cut(t.cur, t.cur+n)
	}
}

// cut removes line[i:j] and puts the cursor at i.
func (t *Typed) cut(i, j int) {
	t.line = append(t.line[:i], t.line[j:]...)
	t.cur = i
	if len(t.line) == 0 {
		t.long = false
	}
}

func (t *Typed) clear() {
	t.line, t.cur, t.long = t.line[:0], 0, false
}

// Pending is the line typed so far and not yet submitted.
func (t *Typed) Pending() string { return string(t.line) }
