package session

import (
	"encoding/json"
	"testing"
)

func screenOf(t *testing.T, js string) *screenState {
	t.Helper()
	var sc screenState
	if err := json.Unmarshal([]byte(js), &sc); err != nil {
		t.Fatal(err)
	}
	return &sc
}

// The logical line at the cursor joins soft-wrapped rows (a blank at the
// wrap is kept), and the prompt is what precedes the cursor.
func TestScreenLine(t *testing.T) {
	sc := screenOf(t, `{"cols":10,"cursor":{"row":2,"col":3},"lines":["old output","rl$ touch","x /tmp/f","","x"],"wrapped":[1]}`)
	line, top := sc.logicalLine()
	if line != "rl$ touch x /tmp/f" || top {
		t.Errorf("logical line %q top=%v", line, top)
	}
	if p := sc.beforeCursor(); p != "rl$ touch x /" {
		t.Errorf("before the cursor: %q", p)
	}
	// A line that begins on the top row may have begun above it.
	sc = screenOf(t, `{"cols":4,"cursor":{"row":1,"col":1},"lines":["abcd","e"],"wrapped":[0]}`)
	if _, top := sc.logicalLine(); !top {
		t.Error("a line from the top row is not flagged")
	}
	// Wide characters take two columns.
	sc = screenOf(t, `{"cols":20,"cursor":{"row":0,"col":6},"lines":["日本$ ls"],"wrapped":[]}`)
	if p := sc.beforeCursor(); p != "日本$" {
		t.Errorf("before the cursor with wide characters: %q", p)
	}
}

func TestAfterPromptMark(t *testing.T) {
	for in, want := range map[string]string{
		"user@h:~$ touch x": "touch x",
		"root# ls":          "ls",
		"no mark here":      "",
		"a> b $ c":          "b $ c",
	} {
		got, _ := afterPromptMark(in)
		if got != want {
			t.Errorf("afterPromptMark(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBeyondModel(t *testing.T) {
	for in, want := range map[string]bool{
		"touch x":           false,
		"ouch x\x01t":       false,
		"ab\x1b[D\x1b[3~c":  false,
		"x\x1bOH\x1b[1~":    false,
		"\x1b[A":            true, // Up: history
		"tou\t":             true, // completion
		"\x19":              true, // C-y: yank
		"\x12touch":         true, // C-r: history search
		"\x1bb":             true, // M-b
		"\x7f\x08\x17\x0b ": false,
	} {
		if got := beyondModel([]byte(in)); got != want {
			t.Errorf("beyondModel(%q) = %v, want %v", in, got, want)
		}
	}
}
