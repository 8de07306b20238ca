package policy

import "unicode/utf8"

// maxLine bounds the line Typed keeps: a longer line is checked by its
// last maxLine bytes.
const maxLine = 16 << 10

// Typed follows the line being typed into an interactive shell, so the
// command is checked when Enter would send it (SPEC SSH-6 on SSH shells).
// It understands what a line editor does with plain typing: printable
// text appends; BS and DEL remove a character; C-u, C-c and C-g clear the
// line; CR or LF submits it. Escape sequences (arrows, history) are
// skipped, so what the line editor shows may differ from what Typed
// holds: one more reason rules are a guard rail and not a sandbox.
type Typed struct {
	line []byte
	esc  int // 0 none, 1 after ESC, 2 inside CSI/SS3
}

// Check runs input through the line editor model and checks every line
// it submits. On a blocked line it returns the error and leaves the state
// as it was before input: the caller sends nothing.
func (t *Typed) Check(r *Rules, input []byte) error {
	if r.Empty() {
		t.line = t.line[:0]
		return nil
	}
	line := append([]byte(nil), t.line...)
	esc := t.esc
	for _, c := range input {
		switch esc {
		case 1:
			if c == '[' || c == 'O' {
				esc = 2
			} else {
				esc = 0
			}
			continue
		case 2:
			if c >= 0x40 && c <= 0x7e {
				esc = 0
			}
			continue
		}
		switch {
		case c == 0x1b:
			esc = 1
		case c == '\r' || c == '\n':
			if len(line) > 0 {
				if err := r.Check(string(line)); err != nil {
					return err
				}
			}
			line = line[:0]
		case c == 0x7f || c == 0x08:
			if len(line) > 0 {
				_, n := utf8.DecodeLastRune(line)
				line = line[:len(line)-n]
			}
		case c == 0x15 || c == 0x03 || c == 0x07:
			line = line[:0]
		case c == '\t' || c >= 0x20:
			line = append(line, c)
			if len(line) > maxLine {
				line = append(line[:0], line[len(line)-maxLine:]...)
			}
		}
	}
	t.line, t.esc = line, esc
	return nil
}

// Pending is the line typed so far and not yet submitted.
func (t *Typed) Pending() string { return string(t.line) }
