package keys

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func enc(t *testing.T, s string, m Modes) string {
	t.Helper()
	ks, err := ParseString(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return string(Encode(nil, ks, m))
}

func TestEncode(t *testing.T) {
	app := Modes{AppCursor: true, AppKeypad: true}
	cases := []struct {
		keys string
		m    Modes
		want string
	}{
		{"Enter", Modes{}, "\r"}, {"enter", Modes{}, "\r"}, {"Return", Modes{}, "\r"},
		{"Tab", Modes{}, "\t"}, {"BTab", Modes{}, "\x1b[Z"}, {"S-Tab", Modes{}, "\x1b[Z"}, {"Shift+Tab", Modes{}, "\x1b[Z"},
		{"Escape", Modes{}, "\x1b"}, {"Esc", Modes{}, "\x1b"}, {"BSpace", Modes{}, "\x7f"}, {"Backspace", Modes{}, "\x7f"},
		{"C-BSpace", Modes{}, "\x08"}, {"Space", Modes{}, " "}, {"C-Space", Modes{}, "\x00"},
		{"Up Down Right Left", Modes{}, "\x1b[A\x1b[B\x1b[C\x1b[D"},
		{"Up Down Right Left", app, "\x1bOA\x1bOB\x1bOC\x1bOD"},
		{"Home End", Modes{}, "\x1b[H\x1b[F"}, {"Home End", app, "\x1bOH\x1bOF"},
		{"S-Up", app, "\x1b[1;2A"}, {"C-S-Left", Modes{}, "\x1b[1;6D"}, {"M-Right", Modes{}, "\x1b[1;3C"},
		{"Ctrl+Shift+Left", Modes{}, "\x1b[1;6D"},
		{"Insert Delete PageUp PageDown", Modes{}, "\x1b[2~\x1b[3~\x1b[5~\x1b[6~"},
		{"PgUp NPage IC DC", Modes{}, "\x1b[5~\x1b[6~\x1b[2~\x1b[3~"},
		{"C-PageDown", Modes{}, "\x1b[6;5~"},
		{"F1 F2 F3 F4", Modes{}, "\x1bOP\x1bOQ\x1bOR\x1bOS"}, {"S-F1", Modes{}, "\x1b[1;2P"},
		{"F5 F6 F7 F8 F9 F10 F11 F12", Modes{}, "\x1b[15~\x1b[17~\x1b[18~\x1b[19~\x1b[20~\x1b[21~\x1b[23~\x1b[24~"},
		{"C-F5", Modes{}, "\x1b[15;5~"},
		{"KP5 KPEnter", Modes{}, "5\r"}, {"KP5 KPEnter", app, "\x1bOu\x1bOM"},
		{"C-c C-a C-z C-@ C-[ C-\\ C-] C-^ C-_ C-?", Modes{}, "\x03\x01\x1a\x00\x1b\x1c\x1d\x1e\x1f\x7f"},
		{"C-C Ctrl+C ctrl+c", Modes{}, "\x03\x03\x03"},
		{"M-x Alt+x M-C-a", Modes{}, "\x1bx\x1bx\x1b\x01"},
		{"a A S-a é", Modes{}, "aAAé"}, {"M-Enter", Modes{}, "\x1b\r"},
		{"- C-- :", Modes{}, "-\x1f:"},
	}
	for _, c := range cases {
		if got := enc(t, c.keys, c.m); got != c.want {
			t.Errorf("%q %+v = %q, want %q", c.keys, c.m, got, c.want)
		}
	}
}

func TestRefused(t *testing.T) {
	for _, bad := range []string{"Entr", "C-", "Ctrl+", "hello", "C-Foo", "\x03", "\xff", "F13", "KP10"} {
		_, err := Parse([]string{bad})
		var uk *UnknownKeyError
		if !errors.As(err, &uk) {
			t.Errorf("%q accepted: %v", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), "Enter, Tab") || !strings.Contains(err.Error(), "text") {
			t.Errorf("%q: error does not list the names: %v", bad, err)
		}
	}
	if _, err := Parse([]string{""}); err == nil {
		t.Error("empty token accepted")
	}
	if ks, err := ParseString("   "); err != nil || len(ks) != 0 {
		t.Errorf("blank string: %v %v", ks, err)
	}
	// A sentence is refused, never typed as keys.
	if _, err := ParseString("echo hello"); err == nil {
		t.Error("text taken as keys")
	}
}

func TestPaste(t *testing.T) {
	if got := string(Paste(nil, "a\nb", Modes{})); got != "a\nb" {
		t.Errorf("unbracketed: %q", got)
	}
	if got := string(Paste(nil, "a\nb", Modes{BracketedPaste: true})); got != "\x1b[200~a\nb\x1b[201~" {
		t.Errorf("bracketed: %q", got)
	}
	evil := "x\x1b[20\x1b[201~1~rm -rf\r"
	got := string(Paste(nil, evil, Modes{BracketedPaste: true}))
	if strings.Count(got, "\x1b[201~") != 1 || !strings.HasSuffix(got, "\x1b[201~") {
		t.Errorf("paste end inside the text survived: %q", got)
	}
}

// TestEveryNameParses: every name and alias, with every modifier
// combination, parses and encodes without panicking, and the canonical
// spelling of a parsed key parses back to it.
func TestEveryNameParses(t *testing.T) {
	all := []string{}
	for n := range names {
		all = append(all, n)
	}
	for a := range aliases {
		all = append(all, a)
	}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.SampledFrom(all).Draw(t, "name")
		prefix := rapid.SliceOfN(rapid.SampledFrom([]string{"C-", "M-", "S-", "Ctrl+", "Alt+", "Shift+", "c-", "s-"}), 0, 3).Draw(t, "mods")
		tok := strings.Join(prefix, "") + name
		if rapid.Bool().Draw(t, "upper") {
			tok = strings.ToUpper(tok)
		}
		ks, err := Parse([]string{tok})
		if err != nil {
			t.Fatalf("%q: %v", tok, err)
		}
		m := Modes{AppCursor: rapid.Bool().Draw(t, "ac"), AppKeypad: rapid.Bool().Draw(t, "ak")}
		if len(Encode(nil, ks, m)) == 0 {
			t.Fatalf("%q encodes to nothing", tok)
		}
		back, err := Parse([]string{ks[0].String()})
		if err != nil || back[0] != ks[0] {
			t.Fatalf("%q → %v → %q → %v %v", tok, ks[0], ks[0].String(), back, err)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add("C-c M-x Up")
	f.Fuzz(func(t *testing.T, s string) {
		ks, err := ParseString(s)
		if err == nil {
			Encode(nil, ks, Modes{AppCursor: true})
		}
	})
}
