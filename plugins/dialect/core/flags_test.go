package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termhost/termhost/plugins/dialect/core/coretest"
)

// renamed returns the built-in tables with linux, juniper_junos and
// cisco_ios renamed (acme_shell, acme_junos, acme_ios; acme_ios's alias
// acme_xe instead of cisco_xe), edited by edit if not nil: dialects the
// scanner has never heard of, defined by their tables alone.
func renamed(t *testing.T, edit func(sp *Spec)) *tables {
	t.Helper()
	common, all, err := loadTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range all {
		switch sp.Name {
		case "linux":
			sp.Name = "acme_shell"
		case "juniper_junos":
			sp.Name = "acme_junos"
		case "cisco_ios":
			sp.Name, sp.Aliases = "acme_ios", []string{"acme_xe"}
		}
		if edit != nil {
			edit(sp)
		}
	}
	tab, err := newTables(common, all)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

var acme = strings.NewReplacer("=linux", "=acme_shell", "=juniper_junos", "=acme_junos", "=cisco_ios", "=acme_ios")

// vtysh: a Linux shell's banner and prompt, then FRR's vtysh started from
// it, which says who it is.
var vtysh = []step{
	in("BusyBox v1.36.1 built-in shell\r\n/ # "), out("vtysh\r"),
	in("vtysh\r\n\r\nHello, this is FRRouting (version 9.1).\r\n\r\nfrr# "),
	out("show version\r"), in("show version\r\nFRRouting 9.1\r\nfrr# "),
}

// junosEdit: Junos configuration prompts under [edit ...] lines, seen
// before any dialect is known.
var junosEdit = []step{
	in("\r\n[edit protocols bgp]\r\nlab@vmx1# "), out("up\r"),
	in("up\r\n\r\n[edit protocols]\r\nlab@vmx1# "),
}

// TestTableOnlyDialects: what the scanner once did for linux,
// juniper_junos and cisco_xe by name, a table's flags do for any dialect:
// renamed, the three behave exactly as the named ones did (the
// transcripts, a device CLI started from a shell, Junos's [edit] line
// before detection, the alias).
func TestTableOnlyDialects(t *testing.T) {
	tab := renamed(t, nil)
	for _, name := range []string{"linux", "juniper_junos", "cisco_ios"} {
		want := run(New(), coretest.Transcripts[name], nil)
		got := run(newScanner(tab), coretest.Transcripts[name], nil)
		if g, w := strings.Join(got.events, "\n"), acme.Replace(strings.Join(want.events, "\n")); g != w || got.user != want.user || got.peer != want.peer {
			t.Errorf("%s renamed: events\n%s\nwant\n%s", name, g, w)
		}
	}
	for name, steps := range map[string][]step{"vtysh": vtysh, "junos edit": junosEdit} {
		want := run(New(), steps, nil)
		got := run(newScanner(tab), steps, nil)
		if g, w := strings.Join(got.events, "\n"), acme.Replace(strings.Join(want.events, "\n")); g != w {
			t.Errorf("%s: events\n%s\nwant\n%s", name, g, w)
		}
	}
	if r := run(newScanner(tab), vtysh, nil); !hasEvent(r, "dialect name=frr confident=true") {
		t.Errorf("vtysh: frr's banner did not overrule the shell:\n%s", strings.Join(r.events, "\n"))
	}
	if r := run(newScanner(tab), junosEdit, nil); !hasEvent(r, "prompt dialect=acme_junos hostname=vmx1 mode=config submode=protocols bgp") {
		t.Errorf("junos edit: the [edit] line is not the sub-mode:\n%s", strings.Join(r.events, "\n"))
	}
	sc := newScanner(tab)
	if err := sc.Force("acme_xe"); err != nil || sc.Info().Dialect != "acme_ios" {
		t.Fatalf("alias: %v, dialect %q", err, sc.Info().Dialect)
	}
	if err := sc.Force("cisco_xe"); err == nil {
		t.Fatal("cisco_xe is an alias of a table that no longer has it")
	}
}

// TestTableFlagsMatter: without the flags the renamed tables behave
// otherwise (the test above would fail if the scanner still keyed on
// names).
func TestTableFlagsMatter(t *testing.T) {
	tab := renamed(t, func(sp *Spec) {
		sp.KeepDetecting = false
		if sp.SubLine != nil {
			sp.SubLine.Open = "[nope"
		}
	})
	if r := run(newScanner(tab), vtysh, nil); hasEvent(r, "dialect name=frr") {
		t.Errorf("vtysh: the shell was overruled without keepDetecting:\n%s", strings.Join(r.events, "\n"))
	}
	if r := run(newScanner(tab), junosEdit, nil); hasEvent(r, "prompt dialect=acme_junos hostname=vmx1 mode=config submode=protocols bgp") {
		t.Errorf("junos edit: a sub-mode without the subLine:\n%s", strings.Join(r.events, "\n"))
	}
}

// TestPromptEnds: a prompt ending in a character no table names is not
// looked at; a table that names it in promptEnds gets its prompts.
func TestPromptEnds(t *testing.T) {
	tilde := func(ends string) *tables {
		return renamed(t, func(sp *Spec) {
			if sp.Name == "acme_ios" {
				sp.Prompts[1].Re = `^(?P<host>[A-Za-z][\w.:/-]{1,62})~\s?$`
				sp.PromptEnds = ends
			}
		})
	}
	steps := []step{in("\r\nR1~")}
	sc := newScanner(tilde(""))
	sc.Force("acme_ios")
	if r := run(sc, steps, nil); len(r.events) != 0 {
		t.Errorf("no promptEnds: %v", r.events)
	}
	sc = newScanner(tilde("~"))
	sc.Force("acme_ios")
	if r := run(sc, steps, nil); !hasEvent(r, "prompt dialect=acme_ios hostname=R1 mode=privileged") {
		t.Errorf(`promptEnds "~": %v`, r.events)
	}
}

// TestTableErrors: the new fields are checked when the tables load.
func TestTableErrors(t *testing.T) {
	common, all, err := loadTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(sp *Spec)
		want string
	}{
		{func(sp *Spec) { sp.Aliases = []string{"linux"} }, `the name "linux" is taken`},
		{func(sp *Spec) { sp.Aliases = []string{""} }, "a name or alias is empty"},
		{func(sp *Spec) { sp.SubLine = nil }, "subFromEdit needs the dialect's subLine"},
		{func(sp *Spec) { sp.SubLine.Close = "" }, "open and close must not be empty"},
	} {
		var junos *Spec
		specs := make([]*Spec, len(all))
		for i, sp := range all {
			cp := *sp
			if cp.SubLine != nil {
				l := *cp.SubLine
				cp.SubLine = &l
			}
			specs[i] = &cp
			if sp.Name == "juniper_junos" {
				junos = &cp
			}
		}
		c.edit(junos)
		if _, err := newTables(common, specs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// TestDetectorFindsWhatContainsFinds: the one-pass search for banner
// texts marks exactly the texts bytes.Contains finds, on the corpus, the
// transcripts and lines made of the texts themselves (at the start, the
// end, overlapping, cut short).
func TestDetectorFindsWhatContainsFinds(t *testing.T) {
	det := &builtin.det
	var lines []string
	files, _ := filepath.Glob("testdata/corpus/*/*.txt")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	for _, steps := range coretest.Transcripts {
		for _, st := range steps {
			lines = append(lines, strings.Split(st.In, "\n")...)
		}
	}
	for i, x := range det.texts {
		c := string(x.contains)
		next := string(det.texts[(i+1)%len(det.texts)].contains)
		lines = append(lines, c, "x"+c, c+"x", c+next, c[:len(c)-1], c[:len(c)-1]+next, c[1:], c+c)
	}
	check(t, det, lines)
	// One-byte texts (none in the built-in tables) are searched apart.
	small := newDetector([]*Dialect{{Name: "x", detect: []detect{{[]byte("#"), false}, {[]byte("ab"), true}}}})
	check(t, &small, []string{"", "#", "a", "ab", "x#ab", "a#b", "ba#"})
}

func check(t *testing.T, det *detector, lines []string) {
	t.Helper()
	found := make([]bool, len(det.texts))
	for _, l := range lines {
		clear(found)
		hit := det.find([]byte(l), found)
		any := false
		for j, x := range det.texts {
			want := bytes.Contains([]byte(l), x.contains)
			any = any || want
			if found[j] != want {
				t.Errorf("%q: text %q found %v, want %v", l, x.contains, found[j], want)
			}
		}
		if hit != any {
			t.Errorf("%q: hit %v, want %v", l, hit, any)
		}
	}
}
