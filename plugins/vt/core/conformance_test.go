package core

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/termhost/termhost/internal/testutil"
)

// vtTestdata is the shared conformance data, outside the repository. It is
// reached by a relative path so the tests run in any checkout next to it.
const vtTestdata = "../../../../shared/testdata/vt"

func testdataDir(t *testing.T, sub string) string {
	t.Helper()
	dir := filepath.Join(vtTestdata, sub)
	if _, err := os.Stat(dir); err != nil {
		testutil.SkipUnlessCI(t, "conformance data %s not present (%v); it lives outside the repo in shared/testdata/vt", dir, err)
	}
	return dir
}

// checkKnown fails for every failing case not listed in known, and for
// every listed case that now passes, so the list stays true: a fix removes
// its entry.
func checkKnown(t *testing.T, suite string, failed map[string]string, known map[string]string, total int) {
	t.Helper()
	var names []string
	for n := range failed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := known[n]; !ok {
			t.Errorf("%s: %s fails and is not a known failure:\n%s", suite, n, failed[n])
		}
	}
	for n, why := range known {
		if _, ok := failed[n]; !ok {
			t.Errorf("%s: known failure %s (%s) now passes: remove it from the list", suite, n, why)
		}
	}
	t.Logf("%s: %d of %d pass", suite, total-len(failed), total)
}

// xtermjsKnown lists the xterm.js fixtures we fail, with the reason.
var xtermjsKnown = map[string]string{
	"t0055-EL":    "EL with a wrap pending keeps it pending and EL 0 erases nothing, as tmux, VTE and alacritty do (alacritty ref test erase_in_line: the same bytes, the opposite result); xterm erases the last column and cancels the wrap",
	"t0060-DECSC": "DECRC restores a pending wrap, as the VT420/VT520 manuals, current xterm (cursor.c: do_wrap = wrap_flag) and alacritty (ref test saved_cursor_alt) do; the xterm that recorded this fixture did not",
}

// TestXtermjsFixtures feeds each .in file, through a pty's output
// processing (LF becomes CR LF, as in xterm.js's harness), to an 80x25
// terminal and compares the screen with the .text file (xterm's output).
func TestXtermjsFixtures(t *testing.T) {
	dir := testdataDir(t, "xtermjs-fixtures")
	ins, _ := filepath.Glob(filepath.Join(dir, "*.in"))
	if len(ins) == 0 {
		testutil.SkipUnlessCI(t, "no xterm.js fixtures in %s", dir)
	}
	failed := map[string]string{}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(in, ".in") + ".text")
		if err != nil {
			t.Fatal(err)
		}
		term := New(Options{Cols: 80, Rows: 25})
		term.Write(onlcr(data))
		wantLines := strings.Split(string(want), "\n")
		var diff []string
		for r := 0; r < 25; r++ {
			got := strings.TrimRightFunc(string(term.AppendRowText(nil, r)), unicode.IsSpace)
			w := ""
			if r < len(wantLines) {
				w = strings.TrimRightFunc(wantLines[r], unicode.IsSpace)
			}
			if got != w {
				diff = append(diff, "row "+itoa(r)+"\n  got  "+quote(got)+"\n  want "+quote(w))
			}
		}
		if len(diff) > 0 {
			failed[name] = strings.Join(diff, "\n")
		}
	}
	checkKnown(t, "xterm.js fixtures", failed, xtermjsKnown, len(ins))
}

func onlcr(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/16)
	for _, c := range b {
		if c == '\n' {
			out = append(out, '\r')
		}
		out = append(out, c)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func quote(s string) string { return "\"" + s + "\"" }
