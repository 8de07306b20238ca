package core

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The pattern tables, one JSON file per dialect (see ../README.md for the
// format). common.json is merged into every dialect after its own entries.
//
//go:embed dialects/*.json
var tableFS embed.FS

// Spec is one dialect's pattern table as written in its JSON file.
type Spec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Priority orders auto-detection from a prompt's shape: lower first.
	Priority int `json:"priority"`
	// Aliases: other names Force and the dialect option accept for this
	// table ("cisco_xe" for cisco_ios); events and info use Name.
	Aliases []string `json:"aliases"`
	// KeepDetecting: this is a shell other CLIs are started from (vtysh
	// from a Linux prompt): detection goes on after a confident match, and
	// another dialect's confident banner overrules it.
	KeepDetecting bool `json:"keepDetecting"`
	// SubLine: a line above the prompt that names the sub-mode (Junos's
	// "[edit interfaces ge-0/0/0]"): the text between Open and the next
	// Close, trimmed. Prompts with SubFromEdit report it.
	SubLine *struct {
		Open  string `json:"open"`
		Close string `json:"close"`
	} `json:"subLine"`
	// PromptEnds: the characters a prompt, login field or question ends
	// with (before trailing blanks). A partial line that ends otherwise is
	// not matched against any pattern; common.json's and every dialect's
	// count.
	PromptEnds string `json:"promptEnds"`
	// Detect: banner or version text that names the dialect.
	Detect []struct {
		Contains  string `json:"contains"`
		Confident bool   `json:"confident"`
	} `json:"detect"`
	// Guess: prompt shapes that suggest this dialect when none is known.
	Guess   []string `json:"guess"`
	Prompts []struct {
		Re   string `json:"re"`
		Mode string `json:"mode"`
		// SplitSub: the host group holds "host<sep>sub-view" (Huawei).
		SplitSub string `json:"splitSub"`
		// SubFromEdit: the sub-mode is the dialect's SubLine above
		// (Junos's [edit ...]).
		SubFromEdit bool `json:"subFromEdit"`
	} `json:"prompts"`
	Pagers []struct {
		// Lead is the literal every match starts with (after leading
		// blanks and escape sequences): while a partial line could still
		// become one, it is held back so that it can be removed whole.
		Lead   string `json:"lead"`
		Re     string `json:"re"`
		Answer string `json:"answer"`
		// Wait: when the line is exactly Lead, it may still grow into a
		// longer match starting with Wait ("--More--" then "(45%)"): it
		// is answered only when the stream goes quiet.
		Wait string `json:"wait"`
		// Quit leaves the pager when the bound is reached ("q"), so the
		// device returns to its prompt; without it the pager is left
		// waiting for the agent.
		Quit string `json:"quit"`
		// MidLine: the pager as the device sends it when it follows
		// other text on its line, its own leading blanks included (FRR's
		// " --More--": its vty counts wrapped rows and cuts a long line
		// where a page ends). Found at the end of the stream only, after
		// non-blank text; what follows it must match Re like a pager at
		// the start of a line. Absent: only at the start of a line.
		MidLine string `json:"midLine"`
	} `json:"pagers"`
	Questions []string `json:"questions"`
	Login     []struct {
		Re    string `json:"re"`
		Field string `json:"field"`
		// Unless: a tail starting with this is not the field ("Last
		// login: ..." while it arrives).
		Unless string `json:"unless"`
	} `json:"login"`
	Errors []struct {
		Prefix   string `json:"prefix"`
		Contains string `json:"contains"`
	} `json:"errors"`
	// Enable: commands after which a password prompt asks for the enable
	// secret (abbreviations of at least two letters count).
	Enable []string `json:"enable"`
	// Modes: the command that moves the device from one mode to another,
	// by mode then target mode ({"user": {"privileged": "enable"}}); the
	// host's set_mode goes one step at a time. Absent: no mode commands.
	Modes map[string]map[string]string `json:"modes"`
}

// modeNames are the modes prompts report and mode commands connect.
var modeNames = []string{"user", "privileged", "config"}

type prompt struct {
	re          *regexp.Regexp
	mode        string
	splitSub    string
	subFromEdit bool
	host, sub   int // submatch indexes, -1 if absent
	user, cwd   int
}

type pager struct {
	lead   string
	wait   string
	re     *regexp.Regexp
	answer []byte
	quit   []byte
	mid    []byte // Spec's MidLine, nil if none
}

type login struct {
	re     *regexp.Regexp
	field  string
	unless string
}

type errPat struct {
	prefix, contains string
}

type detect struct {
	contains  []byte
	confident bool
}

// subLine is a compiled Spec.SubLine.
type subLine struct {
	open, close []byte
}

// Dialect is a compiled table.
type Dialect struct {
	Name          string
	Description   string
	priority      int
	aliases       []string
	keepDetecting bool
	// subLines: the lines above a prompt that name its sub-mode (one at
	// most per dialect; the union holds every dialect's).
	subLines  []subLine
	detect    []detect
	guess     []*regexp.Regexp
	prompts   []prompt
	pagers    []pager
	mids      bool // a pager has a midLine
	questions []*regexp.Regexp
	login     []login
	errors    []errPat
	enable    []string
	// Modes: from mode, to mode, the command (see Spec.Modes).
	Modes map[string]map[string]string
}

// tables is a set of compiled dialects: the built-in one, or a test's.
type tables struct {
	byName map[string]*Dialect // by name and by alias
	names  []string            // sorted, without aliases
	// byPriority: every dialect, in auto-detection order.
	byPriority []*Dialect
	// any is the union of every table, used while no dialect is known.
	any *Dialect
	// ends: the last characters a prompt, login field or question can
	// have (Spec.PromptEnds).
	ends [256]bool
	// det: every dialect's banner texts (Spec.Detect).
	det detector
}

// builtin: the tables embedded in the plugin.
var builtin *tables

func init() {
	common, all, err := loadTables()
	if err != nil {
		panic("dialect tables: " + err.Error())
	}
	if builtin, err = newTables(common, all); err != nil {
		panic(err.Error())
	}
}

// newTables compiles every table of all, merging common into each.
func newTables(common *Spec, all []*Spec) (*tables, error) {
	t := &tables{byName: map[string]*Dialect{}}
	for _, c := range []byte(common.PromptEnds) {
		t.ends[c] = true
	}
	for _, sp := range all {
		d, err := compile(sp, common)
		if err != nil {
			return nil, fmt.Errorf("dialect table %s: %v", sp.Name, err)
		}
		for _, n := range append([]string{d.Name}, d.aliases...) {
			if n == "" {
				return nil, fmt.Errorf("dialect table %s: a name or alias is empty", sp.Name)
			}
			if _, dup := t.byName[n]; dup {
				return nil, fmt.Errorf("dialect table %s: the name %q is taken", sp.Name, n)
			}
			t.byName[n] = d
		}
		t.names = append(t.names, d.Name)
		t.byPriority = append(t.byPriority, d)
		for _, c := range []byte(sp.PromptEnds) {
			t.ends[c] = true
		}
	}
	sort.Strings(t.names)
	sort.SliceStable(t.byPriority, func(i, j int) bool { return t.byPriority[i].priority < t.byPriority[j].priority })
	t.any = union(t.byPriority)
	t.det = newDetector(t.byPriority)
	return t, nil
}

func loadTables() (common *Spec, all []*Spec, err error) {
	ents, err := tableFS.ReadDir("dialects")
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		b, err := tableFS.ReadFile(path.Join("dialects", e.Name()))
		if err != nil {
			return nil, nil, err
		}
		var sp Spec
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sp); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", e.Name(), err)
		}
		if sp.Name+".json" != e.Name() {
			return nil, nil, fmt.Errorf("%s: name %q does not match the file name", e.Name(), sp.Name)
		}
		if sp.Name == "common" {
			common = &sp
			continue
		}
		all = append(all, &sp)
	}
	if common == nil {
		common = &Spec{}
	}
	return common, all, nil
}

// Specs returns the raw tables (for tests and documentation).
func Specs() ([]*Spec, error) {
	_, all, err := loadTables()
	return all, err
}

func compile(sp, common *Spec) (*Dialect, error) {
	d := &Dialect{Name: sp.Name, Description: sp.Description, priority: sp.Priority, enable: sp.Enable,
		aliases: sp.Aliases, keepDetecting: sp.KeepDetecting}
	if l := sp.SubLine; l != nil {
		if l.Open == "" || l.Close == "" {
			return nil, fmt.Errorf("subLine: open and close must not be empty")
		}
		d.subLines = []subLine{{[]byte(l.Open), []byte(l.Close)}}
	}
	for _, x := range sp.Detect {
		if x.Contains == "" {
			return nil, fmt.Errorf("empty detect string")
		}
		d.detect = append(d.detect, detect{[]byte(x.Contains), x.Confident})
	}
	for _, g := range sp.Guess {
		re, err := regexp.Compile(g)
		if err != nil {
			return nil, err
		}
		d.guess = append(d.guess, re)
	}
	for _, p := range sp.Prompts {
		re, err := regexp.Compile(p.Re)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(modeNames, p.Mode) {
			return nil, fmt.Errorf("prompt %q: mode %q is not user, privileged or config", p.Re, p.Mode)
		}
		if p.SubFromEdit && sp.SubLine == nil {
			return nil, fmt.Errorf("prompt %q: subFromEdit needs the dialect's subLine", p.Re)
		}
		d.prompts = append(d.prompts, prompt{re: re, mode: p.Mode, splitSub: p.SplitSub, subFromEdit: p.SubFromEdit,
			host: re.SubexpIndex("host"), sub: re.SubexpIndex("sub"), user: re.SubexpIndex("user"), cwd: re.SubexpIndex("cwd")})
	}
	for _, p := range sp.Pagers {
		re, err := regexp.Compile(p.Re)
		if err != nil {
			return nil, err
		}
		if p.Lead == "" || p.Lead[0] == ' ' {
			return nil, fmt.Errorf("pager %q: lead must be a non-empty literal starting with a non-blank", p.Re)
		}
		pg := pager{lead: p.Lead, wait: p.Wait, re: re, answer: []byte(p.Answer), quit: []byte(p.Quit)}
		if p.MidLine != "" {
			if !strings.HasPrefix(strings.TrimLeft(p.MidLine, " "), p.Lead) || len(p.MidLine) > maxMid {
				return nil, fmt.Errorf("pager %q: midLine must be the lead after blanks, at most %d bytes", p.Re, maxMid)
			}
			pg.mid = []byte(p.MidLine)
			d.mids = true
		}
		d.pagers = append(d.pagers, pg)
	}
	qs := append(append([]string(nil), sp.Questions...), common.Questions...)
	for _, q := range qs {
		re, err := regexp.Compile(q)
		if err != nil {
			return nil, err
		}
		d.questions = append(d.questions, re)
	}
	ls := append(sp.Login[:len(sp.Login):len(sp.Login)], common.Login...)
	for _, l := range ls {
		re, err := regexp.Compile(l.Re)
		if err != nil {
			return nil, err
		}
		switch l.Field {
		case "username", "password":
		default:
			return nil, fmt.Errorf("login %q: field %q is not username or password", l.Re, l.Field)
		}
		d.login = append(d.login, login{re, l.Field, l.Unless})
	}
	for _, e := range sp.Errors {
		if (e.Prefix == "") == (e.Contains == "") {
			return nil, fmt.Errorf("error pattern needs exactly one of prefix and contains")
		}
		d.errors = append(d.errors, errPat{e.Prefix, e.Contains})
	}
	if err := checkModes(sp.Modes); err != nil {
		return nil, err
	}
	d.Modes = sp.Modes
	return d, nil
}

// checkModes: every mode a known one, no step to the same mode, every
// command one non-blank line.
func checkModes(m map[string]map[string]string) error {
	for from, tos := range m {
		if !slices.Contains(modeNames, from) {
			return fmt.Errorf("modes: %q is not user, privileged or config", from)
		}
		for to, cmd := range tos {
			switch {
			case !slices.Contains(modeNames, to):
				return fmt.Errorf("modes.%s: %q is not user, privileged or config", from, to)
			case to == from:
				return fmt.Errorf("modes.%s.%s: a step must change the mode", from, to)
			case strings.TrimSpace(cmd) == "" || strings.ContainsAny(cmd, "\r\n"):
				return fmt.Errorf("modes.%s.%s: the command must be one non-blank line", from, to)
			}
		}
	}
	return nil
}

// union merges every dialect's pagers, questions, login fields, errors,
// enable commands and sub-mode lines: what applies before a dialect is
// known.
func union(byPriority []*Dialect) *Dialect {
	u := &Dialect{Name: ""}
	seen := map[string]bool{}
	for _, d := range byPriority {
		for _, l := range d.subLines {
			if k := "s" + string(l.open) + "\x00" + string(l.close); !seen[k] {
				seen[k] = true
				u.subLines = append(u.subLines, l)
			}
		}
		for _, p := range d.pagers {
			if k := "p" + p.re.String() + "\x00" + string(p.mid); !seen[k] {
				seen[k] = true
				u.pagers = append(u.pagers, p)
				u.mids = u.mids || p.mid != nil
			}
		}
		for _, q := range d.questions {
			if !seen["q"+q.String()] {
				seen["q"+q.String()] = true
				u.questions = append(u.questions, q)
			}
		}
		for _, l := range d.login {
			if !seen["l"+l.re.String()] {
				seen["l"+l.re.String()] = true
				u.login = append(u.login, l)
			}
		}
		for _, e := range d.errors {
			if k := "e" + e.prefix + "\x00" + e.contains; !seen[k] {
				seen[k] = true
				u.errors = append(u.errors, e)
			}
		}
		for _, e := range d.enable {
			if !seen["n"+e] {
				seen["n"+e] = true
				u.enable = append(u.enable, e)
			}
		}
	}
	return u
}

// Names lists the known dialects, sorted (aliases not included).
func Names() []string { return slices.Clone(builtin.names) }

// Lookup returns the dialect called name (Netmiko's device_type names) or
// having it as an alias (Spec.Aliases).
func Lookup(name string) (*Dialect, bool) { return builtin.lookup(name) }

func (t *tables) lookup(name string) (*Dialect, bool) {
	d, ok := t.byName[name]
	return d, ok
}
