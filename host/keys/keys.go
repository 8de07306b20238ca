// Package keys is the key grammar of send_keys (SPEC TUI-4): tmux-style key
// names (Enter, Tab, BTab, Escape, BSpace, Up…, F1–F12, C-c, M-x, S-Up,
// C-S-Left…), the terminal-tester seed's spellings as aliases (Ctrl+C,
// Alt+X, Shift+Tab, Backspace, Esc, Return), single characters as keys,
// and their encoding as xterm sends them under the application's current
// modes (application cursor keys → SS3, application keypad, bracketed
// paste). A key name is never guessed from text: Parse refuses anything
// that is not a name, listing the names it accepts.
package keys

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Modes are the terminal modes that change what a key sends, as the
// screen reports them.
type Modes struct {
	AppCursor      bool // DECCKM: arrows and Home/End send SS3
	AppKeypad      bool // DECKPAM: keypad keys send SS3
	BracketedPaste bool // mode 2004: a paste is bracketed
}

// Mod is a set of modifiers.
type Mod uint8

const (
	Shift Mod = 1 << iota
	Alt
	Ctrl
)

// Key is one parsed key: a named key or a character, with modifiers.
type Key struct {
	Name string // canonical name ("Up", "F5", "Enter"…); "" for a character
	Rune rune   // the character when Name is ""
	Mod  Mod
}

func (k Key) String() string {
	var b strings.Builder
	if k.Mod&Ctrl != 0 {
		b.WriteString("C-")
	}
	if k.Mod&Alt != 0 {
		b.WriteString("M-")
	}
	if k.Mod&Shift != 0 {
		b.WriteString("S-")
	}
	if k.Name != "" {
		b.WriteString(k.Name)
	} else {
		b.WriteRune(k.Rune)
	}
	return b.String()
}

// kind of a named key, for encoding.
type kind uint8

const (
	kByte   kind = iota // one fixed byte sequence (Enter, Tab…)
	kCursor             // CSI/SS3 <final>: arrows, Home, End
	kTilde              // CSI <n> ~: Insert, Delete, PageUp, PageDown, F5–F12
	kSS3F               // SS3 <final>: F1–F4
	kKeypad             // keypad: a character, or SS3 <final> in keypad mode
)

type named struct {
	kind  kind
	seq   string // kByte: the bytes; kKeypad: the character
	final byte   // kCursor, kSS3F, kKeypad
	num   int    // kTilde
}

var names = map[string]named{
	"Enter": {kind: kByte, seq: "\r"}, "Tab": {kind: kByte, seq: "\t"}, "BTab": {kind: kByte, seq: "\x1b[Z"},
	"Escape": {kind: kByte, seq: "\x1b"}, "BSpace": {kind: kByte, seq: "\x7f"}, "Space": {kind: kByte, seq: " "},
	"Up": {kind: kCursor, final: 'A'}, "Down": {kind: kCursor, final: 'B'}, "Right": {kind: kCursor, final: 'C'},
	"Left": {kind: kCursor, final: 'D'}, "Home": {kind: kCursor, final: 'H'}, "End": {kind: kCursor, final: 'F'},
	"Insert": {kind: kTilde, num: 2}, "Delete": {kind: kTilde, num: 3},
	"PageUp": {kind: kTilde, num: 5}, "PageDown": {kind: kTilde, num: 6},
	"F1": {kind: kSS3F, final: 'P'}, "F2": {kind: kSS3F, final: 'Q'}, "F3": {kind: kSS3F, final: 'R'}, "F4": {kind: kSS3F, final: 'S'},
	"F5": {kind: kTilde, num: 15}, "F6": {kind: kTilde, num: 17}, "F7": {kind: kTilde, num: 18}, "F8": {kind: kTilde, num: 19},
	"F9": {kind: kTilde, num: 20}, "F10": {kind: kTilde, num: 21}, "F11": {kind: kTilde, num: 23}, "F12": {kind: kTilde, num: 24},
	"KP0": {kind: kKeypad, seq: "0", final: 'p'}, "KP1": {kind: kKeypad, seq: "1", final: 'q'}, "KP2": {kind: kKeypad, seq: "2", final: 'r'},
	"KP3": {kind: kKeypad, seq: "3", final: 's'}, "KP4": {kind: kKeypad, seq: "4", final: 't'}, "KP5": {kind: kKeypad, seq: "5", final: 'u'},
	"KP6": {kind: kKeypad, seq: "6", final: 'v'}, "KP7": {kind: kKeypad, seq: "7", final: 'w'}, "KP8": {kind: kKeypad, seq: "8", final: 'x'},
	"KP9": {kind: kKeypad, seq: "9", final: 'y'}, "KP/": {kind: kKeypad, seq: "/", final: 'o'}, "KP*": {kind: kKeypad, seq: "*", final: 'j'},
	"KP-": {kind: kKeypad, seq: "-", final: 'm'}, "KP+": {kind: kKeypad, seq: "+", final: 'k'}, "KP.": {kind: kKeypad, seq: ".", final: 'n'},
	"KPEnter": {kind: kKeypad, seq: "\r", final: 'M'},
}

// aliases map other spellings (tmux's and the tester seed's) to canonical
// names. Lookups are case-insensitive.
var aliases = map[string]string{
	"return": "Enter", "ret": "Enter", "esc": "Escape", "backspace": "BSpace", "bs": "BSpace",
	"pgup": "PageUp", "ppage": "PageUp", "pgdn": "PageDown", "npage": "PageDown", "pagedown": "PageDown", "pageup": "PageUp",
	"ic": "Insert", "ins": "Insert", "dc": "Delete", "del": "Delete", "backtab": "BTab",
	"kpenter": "KPEnter",
}

var lower = func() map[string]string {
	m := make(map[string]string, len(names)+len(aliases))
	for n := range names {
		m[strings.ToLower(n)] = n
	}
	for a, n := range aliases {
		m[a] = n
	}
	return m
}()

// Names lists the accepted names compactly (for error messages and tool
// descriptions).
func Names() string {
	return "Enter, Tab, BTab, Escape, BSpace, Space, Up, Down, Left, Right, Home, End, PageUp, PageDown, " +
		"Insert, Delete, F1–F12, KP0–KP9, KP/ KP* KP- KP+ KP. KPEnter; modifiers C-, M-, S- " +
		"(also Ctrl+, Alt+, Shift+), e.g. C-c, M-x, S-Up, C-S-Left, Ctrl+C; or a single character"
}

// UnknownKeyError is a token that is not a key name.
type UnknownKeyError struct {
	Token  string
	Reason string
}

func (e *UnknownKeyError) Error() string {
	t := e.Token
	if utf8.RuneCountInString(t) > 40 {
		t = string([]rune(t)[:40]) + "…"
	}
	return fmt.Sprintf("%s is not a key name (%s); accepted: %s. Literal text goes in text, not keys",
		strconv.Quote(t), e.Reason, Names())
}

// ParseString parses one string of key names separated by spaces.
func ParseString(s string) ([]Key, error) {
	return Parse(strings.Fields(s))
}

// Parse parses key names, one per token.
func Parse(tokens []string) ([]Key, error) {
	out := make([]Key, 0, len(tokens))
	for _, t := range tokens {
		k, err := parseOne(t)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func parseOne(tok string) (Key, error) {
	if tok == "" {
		return Key{}, &UnknownKeyError{Token: tok, Reason: "empty"}
	}
	var mod Mod
	rest := tok
	for {
		m, after, ok := modPrefix(rest)
		if !ok {
			break
		}
		mod |= m
		rest = after
	}
	if rest == "" {
		return Key{}, &UnknownKeyError{Token: tok, Reason: "a modifier needs a key after it"}
	}
	if utf8.RuneCountInString(rest) == 1 {
		r, _ := utf8.DecodeRuneInString(rest)
		if r == utf8.RuneError {
			return Key{}, &UnknownKeyError{Token: tok, Reason: "not valid UTF-8"}
		}
		if unicode.IsControl(r) {
			return Key{}, &UnknownKeyError{Token: tok, Reason: "a control character; use its name, e.g. C-a or Enter"}
		}
		return Key{Rune: r, Mod: mod}, nil
	}
	name, ok := lower[strings.ToLower(rest)]
	if !ok {
		return Key{}, &UnknownKeyError{Token: tok, Reason: "unknown name " + strconv.Quote(rest)}
	}
	return Key{Name: name, Mod: mod}, nil
}

// modPrefix strips one modifier prefix: C- M- S- (tmux; case-insensitive)
// or Ctrl+ Alt+ Meta+ Shift+ (the seed), when something follows it.
func modPrefix(s string) (Mod, string, bool) {
	if len(s) > 2 && s[1] == '-' {
		switch s[0] {
		case 'C', 'c':
			return Ctrl, s[2:], true
		case 'M', 'm':
			return Alt, s[2:], true
		case 'S', 's':
			return Shift, s[2:], true
		}
	}
	for _, p := range []struct {
		s string
		m Mod
	}{{"ctrl+", Ctrl}, {"control+", Ctrl}, {"alt+", Alt}, {"meta+", Alt}, {"shift+", Shift}} {
		if len(s) > len(p.s) && strings.EqualFold(s[:len(p.s)], p.s) {
			return p.m, s[len(p.s):], true
		}
	}
	return 0, s, false
}

// Encode appends the bytes the keys send under modes m.
func Encode(dst []byte, ks []Key, m Modes) []byte {
	for _, k := range ks {
		dst = encodeOne(dst, k, m)
	}
	return dst
}

// modParam is xterm's modifier parameter: 1 + shift + 2·alt + 4·ctrl.
func modParam(m Mod) int {
	p := 1
	if m&Shift != 0 {
		p++
	}
	if m&Alt != 0 {
		p += 2
	}
	if m&Ctrl != 0 {
		p += 4
	}
	return p
}

func encodeOne(dst []byte, k Key, m Modes) []byte {
	if k.Name == "" {
		return encodeRune(dst, k.Rune, k.Mod)
	}
	n := names[k.Name]
	switch n.kind {
	case kByte:
		switch {
		case k.Name == "Tab" && k.Mod&Shift != 0:
			return append(dst, "\x1b[Z"...)
		case k.Name == "BSpace" && k.Mod&Ctrl != 0:
			return alt(dst, k.Mod, "\x08")
		case k.Name == "Space" && k.Mod&Ctrl != 0:
			return alt(dst, k.Mod, "\x00")
		}
		return alt(dst, k.Mod, n.seq)
	case kCursor:
		if k.Mod != 0 {
			return fmt.Appendf(dst, "\x1b[1;%d%c", modParam(k.Mod), n.final)
		}
		if m.AppCursor {
			return append(dst, 0x1b, 'O', n.final)
		}
		return append(dst, 0x1b, '[', n.final)
	case kTilde:
		if k.Mod != 0 {
			return fmt.Appendf(dst, "\x1b[%d;%d~", n.num, modParam(k.Mod))
		}
		return fmt.Appendf(dst, "\x1b[%d~", n.num)
	case kSS3F:
		if k.Mod != 0 {
			return fmt.Appendf(dst, "\x1b[1;%d%c", modParam(k.Mod), n.final)
		}
		return append(dst, 0x1b, 'O', n.final)
	case kKeypad:
		if m.AppKeypad {
			return append(dst, 0x1b, 'O', n.final)
		}
		return alt(dst, k.Mod, n.seq)
	}
	return dst
}

// alt prefixes ESC for Meta (meta sends escape).
func alt(dst []byte, mod Mod, seq string) []byte {
	if mod&Alt != 0 {
		dst = append(dst, 0x1b)
	}
	return append(dst, seq...)
}

// encodeRune encodes a character key: C- makes a control byte, S- an
// upper-case letter, M- an ESC prefix.
func encodeRune(dst []byte, r rune, mod Mod) []byte {
	if mod&Shift != 0 {
		r = unicode.ToUpper(r)
	}
	if mod&Ctrl != 0 {
		if c, ok := ctrl(r); ok {
			if mod&Alt != 0 {
				dst = append(dst, 0x1b)
			}
			return append(dst, c)
		}
	}
	if mod&Alt != 0 {
		dst = append(dst, 0x1b)
	}
	return utf8.AppendRune(dst, r)
}

// ctrl is the control byte C-r sends.
func ctrl(r rune) (byte, bool) {
	switch {
	case r >= 'a' && r <= 'z':
		return byte(r - 'a' + 1), true
	case r >= 'A' && r <= 'Z':
		return byte(r - 'A' + 1), true
	case r == '@' || r == ' ' || r == '2':
		return 0, true
	case r == '[' || r == '3':
		return 0x1b, true
	case r == '\\' || r == '4':
		return 0x1c, true
	case r == ']' || r == '5':
		return 0x1d, true
	case r == '^' || r == '6':
		return 0x1e, true
	case r == '_' || r == '7' || r == '/' || r == '-':
		return 0x1f, true
	case r == '?' || r == '8':
		return 0x7f, true
	}
	return 0, false
}

// Text appends literal text, typed as is (a newline is sent as the byte
// it is; an application in a terminal usually wants Enter, "\r").
func Text(dst []byte, s string) []byte { return append(dst, s...) }

var pasteEnd = "\x1b[201~"

// Paste appends s as a paste: between ESC[200~ and ESC[201~ when the
// application enabled bracketed paste, else as typed text. An ESC[201~
// inside s is removed, so pasted text cannot end the paste early and have
// the rest taken as keystrokes.
func Paste(dst []byte, s string, m Modes) []byte {
	if s == "" {
		return dst
	}
	if !m.BracketedPaste {
		return append(dst, s...)
	}
	for strings.Contains(s, pasteEnd) { // removing one may join another
		s = strings.ReplaceAll(s, pasteEnd, "")
	}
	dst = append(dst, "\x1b[200~"...)
	dst = append(dst, s...)
	return append(dst, pasteEnd...)
}
