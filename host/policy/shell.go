package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// A command line is checked as a shell sees it: parsed with a real shell
// parser (mvdan.cc/sh, bash syntax), every simple command found wherever
// the shell would run one (lists, pipelines, subshells, blocks, if, while,
// for, case, function bodies, command and process substitutions), its
// words unquoted and unescaped, its name reduced to a base name, and the
// wrappers that run another command (env, sudo, xargs…) looked through.
// Strings that a shell runs as code (sh -c, eval, trap, alias values, a
// here-string fed to a shell) are parsed again, a few levels deep.

// maxNest bounds how many strings inside strings are parsed (sh -c "sh -c
// '…'"); deeper is refused rather than left unchecked.
const maxNest = 4

// maxDepth bounds the nesting of a line the parser is given (nesting
// counts conservatively: brackets inside quotes count too).
const maxDepth = 200

// maxOps bounds the | and & of a line (pipelines and && lists nest).
const maxOps = 2000

// nesting is the deepest nesting of (, {, [ and of if/while/until/for/
// case/select … fi/done/esac in src, quotes ignored.
func nesting(src string) int {
	depth, deepest := 0, 0
	word := 0 // start of the current word
	for i := 0; i <= len(src); i++ {
		var c byte = ' '
		if i < len(src) {
			c = src[i]
		}
		switch c {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth = max(depth-1, 0)
		}
		if c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' {
			switch src[word:i] {
			case "if", "while", "until", "for", "case", "select":
				depth++
			case "fi", "done", "esac":
				depth = max(depth-1, 0)
			}
			word = i + 1
		}
		deepest = max(deepest, depth)
	}
	return deepest
}

// maxBraces bounds the words one brace expansion may produce here.
const maxBraces = 32

// field is a word as the shell would pass it, when that can be known.
type field struct {
	s      string // the word's value; a computed part is kept as written
	static bool   // no expansion ($x, $(…), arithmetic) in it
	glob   bool   // an unquoted *, ? or [ a shell may expand
	hist   bool   // a history expansion an interactive shell would make (!!, !:1, !$)
}

// scan is the simple commands of one line, and why the line cannot be
// checked, if it cannot.
type scan struct {
	budget   int // bytes of normalized commands still allowed (see simpleCommands)
	tooLong  bool
	cmds     []string
	refusal  string // the first reason the line cannot be checked
	parseErr error  // the first string that did not parse (its words were checked roughly)
}

func (sc *scan) refuse(format string, args ...any) {
	if sc.refusal == "" {
		sc.refusal = fmt.Sprintf(format, args...)
	}
}

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// simpleCommands parses line and lists its simple commands, normalized:
// the command's base name, then its words, separated by single spaces.
func simpleCommands(line string) *scan {
	// Wrappers and nested code make a command's text appear again (find
	// -exec chains, sudo env nice …); the patterns cost time per byte, so
	// the normalized text is bounded by a multiple of the line.
	sc := &scan{budget: 4*len(line) + 64<<10}
	defer func() {
		// The parser's tree walk panics on a node it does not know; a
		// line that trips it is refused, never a crash.
		if v := recover(); v != nil {
			sc.refuse("cannot check this line: the shell parser failed (%v)", v)
		}
	}()
	sc.source(line, 0)
	return sc
}

// source adds the commands of shell source src, nested depth strings deep.
func (sc *scan) source(src string, depth int) {
	if depth > maxNest {
		sc.refuse("cannot check shell code nested more than %d strings deep", maxNest)
		return
	}
	// The parser and the tree walk recurse per level (and per operator of
	// a pipeline or && list): a line nested deep enough would overflow the
	// stack and kill the server, so it is not parsed.
	if d := nesting(src); d > maxDepth {
		sc.refuse("cannot check a line nested more than %d levels deep (brackets, braces, if, while, for, case)", maxDepth)
		return
	}
	if n := strings.Count(src, "|") + strings.Count(src, "&"); n > maxOps {
		sc.refuse("cannot check a line with more than %d | and & characters", maxOps)
		return
	}
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err != nil {
		if sc.parseErr == nil {
			sc.parseErr = err
		}
		sc.rough(src, depth)
		return
	}
	piped := map[*syntax.Stmt]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				piped[n.Y] = true
			}
		case *syntax.Stmt:
			call, ok := n.Cmd.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var fs []field
			for _, w := range call.Args {
				fs = append(fs, wordFields(src, w)...)
			}
			sc.call(fs, stdinOf(src, n), piped[n], redirText(src, n.Redirs), depth)
		case *syntax.Assign:
			if n.Name == nil {
				return true
			}
			if n.Value != nil {
				sc.assign(n.Name.Value, wordField(src, n.Value), depth)
			}
			if n.Array != nil {
				for _, e := range n.Array.Elems {
					if e.Value != nil {
						sc.assign(n.Name.Value, wordField(src, e.Value), depth)
					}
				}
			}
		case *syntax.DeclClause:
			fs := []field{{s: n.Variant.Value, static: true}}
			for _, a := range n.Args {
				fs = append(fs, field{s: strings.TrimSpace(src[a.Pos().Offset():a.End().Offset()])})
			}
			sc.emit(fs)
		}
		return true
	})
}

// stdin is what a statement's standard input is, when a shell reading it
// matters: a here-document or here-string's text.
type stdin struct {
	text     string
	static   bool
	has      bool // a here-document or here-string
	redirect bool // < FILE
}

func stdinOf(src string, st *syntax.Stmt) stdin {
	var in stdin
	for _, r := range st.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				in.text, in.static = wordText(src, r.Hdoc, true)
			} else {
				in.text, in.static = "", true
			}
			in.has = true
		case syntax.WordHdoc:
			in.text, in.static = wordText(src, r.Word, false)
			in.has = true
		case syntax.RdrIn:
			in.redirect = true
		}
	}
	return in
}

// redirText is the redirections as written, for the normalized command
// (a pattern may look for "> /etc/passwd").
func redirText(src string, rs []*syntax.Redirect) string {
	var b strings.Builder
	for _, r := range rs {
		if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(r.Op.String())
		if r.Word != nil {
			s, _ := wordText(src, r.Word, false)
			b.WriteString(s)
		}
	}
	return b.String()
}

// emit records one normalized simple command.
func (sc *scan) emit(fs []field) {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.s)
	}
	if sc.budget -= b.Len(); sc.budget < 0 {
		if !sc.tooLong {
			sc.tooLong = true
			sc.refusal = "cannot check this line: its commands, wrappers looked through, are too long (more than four times the line)"
		}
		return
	}
	sc.cmds = append(sc.cmds, b.String())
}

// call checks one simple command and the commands it runs in turn.
func (sc *scan) call(fs []field, in stdin, piped bool, redirs string, depth int) {
	if depth > maxNest {
		sc.refuse("cannot check commands nested more than %d deep", maxNest)
		return
	}
	for hop := 0; len(fs) > 0; hop++ {
		if hop > 16 {
			sc.refuse("cannot check a command wrapped in more than 16 others")
			return
		}
		name := fs[0]
		for _, f := range fs {
			if f.hist {
				sc.refuse("cannot check a line with a history expansion (%s): an interactive shell replaces it with words from earlier commands", f.s)
				return
			}
		}
		if strings.HasPrefix(name.s, "^") && hop == 0 {
			sc.refuse("cannot check a quick substitution (%s): an interactive shell runs the previous command changed", name.s)
			return
		}
		if !name.static || name.glob {
			sc.refuse("cannot check a command whose name is computed (%s): write the command's name literally", name.s)
			return
		}
		base := name.s
		if i := strings.LastIndexByte(base, '/'); i >= 0 && i < len(base)-1 {
			base = base[i+1:]
		}
		norm := append([]field{{s: base, static: true}}, fs[1:]...)
		if redirs != "" {
			norm = append(norm, field{s: redirs[1:]})
			redirs = ""
		}
		sc.emit(norm)
		args := fs[1:]
		if w, ok := wrappers[base]; ok {
			if w.assigns {
				for _, a := range args {
					if name, v, ok := strings.Cut(a.s, "="); ok && isAssign(a.s) {
						sc.assign(name, field{s: v, static: a.static}, depth)
					}
				}
			}
			if base == "env" {
				if s, ok := optionValue(args, "S", "--split-string"); ok {
					sc.code("env -S", s, depth) // a command line env splits itself
				}
			}
			fs = w.inner(args)
			continue
		}
		switch {
		case shells[base]:
			sc.shell(base, args, in, piped, depth)
		case base == "su" || base == "runuser":
			if s, ok := optionValue(args, "c", "--command"); ok {
				sc.code(base+" -c", s, depth)
			}
		case base == "eval":
			for _, a := range args {
				if !a.static {
					sc.refuse("cannot check eval of a computed string (%s)", a.s)
					return
				}
			}
			sc.code("eval", joinFields(args), depth)
		case base == "trap":
			if len(args) >= 2 && !strings.HasPrefix(args[0].s, "-") {
				sc.code("trap", args[0], depth)
			}
		case base == "alias":
			for _, a := range args {
				if _, v, ok := strings.Cut(a.s, "="); ok {
					sc.code("alias", field{s: v, static: a.static}, depth)
				}
			}
		case base == "find":
			sc.find(args, depth)
		case base == "complete" || base == "compgen":
			// -C runs a command to complete a word: at a key (Tab), not at
			// Enter.
			if c, ok := optionValue(args, "C", "-C"); ok {
				sc.code(base+" -C", c, depth)
			}
		case base == "bind" || base == "bindkey":
			if len(args) > 0 && !allPrefixed(args, "-l", "-p", "-P", "-v", "-V", "-s", "-S", "-X", "-L") {
				sc.refuse("cannot check %s: it changes which keys run a line", base)
			}
		case base == "stty":
			for _, a := range args {
				switch a.s {
				case "eol", "eol2", "-icanon", "raw":
					sc.refuse("cannot check stty %s: it changes which keys end a line", a.s)
				case "erase", "kill", "werase", "lnext", "rprnt", "eof":
					// The typed-line model edits with the usual keys; with
					// echo off the screen shows nothing to check instead.
					sc.refuse("cannot check stty %s: it changes which keys edit a line", a.s)
				}
			}
		case base == "set":
			// vi mode's v edits the line in an editor and runs it, no Enter
			// typed at the prompt (emacs mode's C-x C-e is refused as keys).
			for i, a := range args {
				if (a.s == "-o" && i+1 < len(args) && args[i+1].s == "vi") || a.s == "-ovi" {
					sc.refuse("cannot check set -o vi: vi mode's keys edit and run a line the rules cannot see")
				}
			}
		case base == "fc" || base == "r":
			list := false
			for _, a := range args {
				list = list || strings.HasPrefix(a.s, "-") && strings.Contains(a.s, "l")
			}
			if !list || base == "r" {
				sc.refuse("cannot check %s: it runs commands from the history", base)
			}
		}
		return
	}
}

// promptVars are the shell variables whose value the shell runs as code
// at each prompt (PROMPT_COMMAND) or expands, command substitutions
// included, whenever it shows them (PS0, PS1, PS2, PS4; PS3 too, to be
// safe).
var promptVars = map[string]bool{"PROMPT_COMMAND": true, "PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true}

// assign checks a variable set to value (NAME=VALUE, export, declare,
// env NAME=VALUE): the code a prompt variable will run is checked now, as
// if it were typed. A computed value cannot be known, and the shell
// expands it again at each prompt: refused.
func (sc *scan) assign(name string, value field, depth int) {
	if !promptVars[name] {
		return
	}
	if !value.static {
		sc.refuse("cannot check %s set to a computed value (%s): the shell runs or expands it again at each prompt", name, value.s)
		return
	}
	if name == "PROMPT_COMMAND" {
		sc.code(name, value, depth)
		return
	}
	// A prompt string is expanded as a double-quoted word is.
	sc.code(name, field{s: `: "` + strings.ReplaceAll(value.s, `"`, `\"`) + `"`, static: true}, depth)
}

// allPrefixed says whether every word is one of the listing options.
func allPrefixed(args []field, opts ...string) bool {
	for _, a := range args {
		ok := false
		for _, o := range opts {
			ok = ok || a.s == o
		}
		if !ok {
			return false
		}
	}
	return true
}

// code parses a string a shell runs as code.
func (sc *scan) code(what string, s field, depth int) {
	if !s.static {
		sc.refuse("cannot check the code given to %s: it is computed (%s)", what, s.s)
		return
	}
	sc.source(s.s, depth+1)
}

func joinFields(fs []field) field {
	f := field{static: true}
	parts := make([]string, len(fs))
	for i, x := range fs {
		parts[i] = x.s
		f.static = f.static && x.static
	}
	f.s = strings.Join(parts, " ")
	return f
}

// shells run a string given with -c, or what they read.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "rbash": true}

// shell handles sh, bash…: with -c the string is code; without a script
// operand the shell reads its standard input, which is checked when it is
// a here-document or here-string and refused when it is a pipe.
func (sc *scan) shell(name string, args []field, in stdin, piped bool, depth int) {
	c := false
	i := 0
	for ; i < len(args); i++ {
		a := args[i].s
		if a == "--" || a == "-" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			break
		}
		if strings.HasPrefix(a, "--") {
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
			continue
		}
		opts := a[1:]
		if strings.ContainsRune(opts, 'c') {
			c = true
		}
		if strings.ContainsAny(opts, "oO") {
			i++ // -o option-name
		}
	}
	if c {
		if i < len(args) {
			sc.code(name+" -c", args[i], depth)
		}
		return
	}
	if i < len(args) {
		return // a script file: out of sight (see the README)
	}
	switch {
	case in.has:
		sc.code(name+" reading a here-document", field{s: in.text, static: in.static}, depth)
	case piped && !in.redirect:
		sc.refuse("cannot check what %s runs: it reads its commands from a pipe", name)
	}
}

// find's -exec, -execdir, -ok and -okdir run the words up to ";" or "+".
func (sc *scan) find(args []field, depth int) {
	for i := 0; i < len(args); i++ {
		switch args[i].s {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].s != ";" && args[j].s != "+" {
				j++
			}
			sc.call(args[i+1:j], stdin{}, false, "", depth+1)
			i = j
		}
	}
}

// optionValue finds -X VALUE, -XVALUE, --long=VALUE or --long VALUE.
func optionValue(args []field, short, long string) (field, bool) {
	for i, a := range args {
		switch {
		case a.s == "--":
			return field{}, false
		case a.s == long || a.s == "-"+short:
			if i+1 < len(args) {
				return args[i+1], true
			}
		case strings.HasPrefix(a.s, long+"="):
			return field{s: a.s[len(long)+1:], static: a.static}, true
		case strings.HasPrefix(a.s, "-"+short):
			return field{s: a.s[2:], static: a.static}, true
		}
	}
	return field{}, false
}

// wrapper is a program that runs the command in its arguments, after its
// own options.
type wrapper struct {
	argOpts  string   // short options that take a value
	longArgs []string // long options that take a value when not written --x=v
	assigns  bool     // NAME=VALUE words may precede the command
	operands int      // words between the options and the command (timeout's duration)
	implicit string   // the command run when none is named (xargs runs echo)
	noRunOpt string   // short options with which no command runs (command -v)
}

// wrappers are the programs looked through; each runs the command that
// follows its options. Others that run commands (watch, flock, ssh,
// parallel, script -c) are not: see the README.
var wrappers = map[string]wrapper{
	"env":     {argOpts: "uCS", longArgs: []string{"--unset", "--chdir", "--split-string"}, assigns: true},
	"command": {noRunOpt: "vV"},
	"exec":    {argOpts: "a"},
	"builtin": {},
	"nice":    {argOpts: "n", longArgs: []string{"--adjustment"}},
	"nohup":   {},
	"time":    {argOpts: "fo", longArgs: []string{"--format", "--output"}},
	"sudo": {argOpts: "ugpChDrtTUR", assigns: true, noRunOpt: "lvVkKe",
		longArgs: []string{"--user", "--group", "--prompt", "--close-from", "--host", "--chdir", "--role", "--type", "--other-user", "--command-timeout", "--chroot"}},
	"doas": {argOpts: "uC"},
	"xargs": {argOpts: "adEILnPs", implicit: "echo",
		longArgs: []string{"--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var", "--eof", "--replace"}},
	"timeout": {argOpts: "ks", longArgs: []string{"--kill-after", "--signal"}, operands: 1},
	"stdbuf":  {argOpts: "ioe", longArgs: []string{"--input", "--output", "--error"}},
	"setsid":  {},
	"ionice":  {argOpts: "cnp", longArgs: []string{"--class", "--classdata", "--pid"}},
	"busybox": {},
}

// inner is the command the wrapper runs, or nil.
func (w wrapper) inner(args []field) []field {
	i := 0
	for ; i < len(args); i++ {
		a := args[i].s
		if a == "--" {
			i++
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			if a == "-" {
				continue // env -: an empty environment
			}
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, eq := strings.Cut(a, "=")
			if !eq {
				for _, l := range w.longArgs {
					if l == name {
						i++
						break
					}
				}
			}
			continue
		}
		opts := a[1:]
		for j := 0; j < len(opts); j++ {
			if strings.IndexByte(w.noRunOpt, opts[j]) >= 0 {
				return nil
			}
			if strings.IndexByte(w.argOpts, opts[j]) >= 0 {
				if j == len(opts)-1 {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	if w.assigns {
		for i < len(args) && isAssign(args[i].s) {
			i++
		}
	}
	i += w.operands
	if i >= len(args) {
		if w.implicit != "" {
			return []field{{s: w.implicit, static: true}}
		}
		return nil
	}
	return args[i:]
}

func isAssign(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// wordFields is a word as the shell passes it: brace expansion may make
// several.
func wordFields(src string, w *syntax.Word) []field {
	if hasBrace(w) {
		w = &syntax.Word{Parts: slices.Clone(w.Parts)} // the tree is still being walked
	}
	if syntax.SplitBraces(w) {
		if braces(w.Parts) > maxBraceExps {
			// Expanding costs the product of the lists: keep it as written.
			return []field{{s: strings.TrimSpace(src[w.Pos().Offset():w.End().Offset()])}}
		}
		var out []field
		for x, err := range expand.BracesSeq(nil, w) {
			if err != nil || len(out) == maxBraces {
				s := strings.TrimSpace(src[w.Pos().Offset():w.End().Offset()])
				return []field{{s: s, static: false}}
			}
			out = append(out, wordField(src, x))
		}
		return out
	}
	return []field{wordField(src, w)}
}

// maxBraceExps bounds the brace expansions of one word that are expanded.
const maxBraceExps = 4

// braces counts the brace expansions among parts, nested ones included.
func braces(parts []syntax.WordPart) int {
	n := 0
	for _, p := range parts {
		if b, ok := p.(*syntax.BraceExp); ok {
			n++
			for _, e := range b.Elems {
				n += braces(e.Parts)
			}
		}
	}
	return n
}

func hasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			return true
		}
	}
	return false
}

func wordField(src string, w *syntax.Word) field {
	f := field{static: true}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			glob := unescape(&b, p.Value, false)
			f.glob = f.glob || glob
			f.hist = f.hist || histExpansion(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				ok := ansiC(&b, p.Value)
				f.static = f.static && ok
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					unescape(&b, l.Value, true)
					f.hist = f.hist || histExpansion(l.Value)
				} else {
					f.static = false
					b.WriteString(src[q.Pos().Offset():q.End().Offset()])
				}
			}
		default:
			f.static = false
			b.WriteString(src[p.Pos().Offset():p.End().Offset()])
		}
	}
	f.s = b.String()
	return f
}

// wordText is a word's value and whether it is static (here-documents
// keep backslashes except before $, ` and \ and newline).
func wordText(src string, w *syntax.Word, hdoc bool) (string, bool) {
	if hdoc {
		static := true
		var b strings.Builder
		for _, p := range w.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			} else {
				static = false
				b.WriteString(src[p.Pos().Offset():p.End().Offset()])
			}
		}
		return b.String(), static
	}
	f := wordField(src, w)
	return f.s, f.static
}

// histExpansion says whether a literal (as written) holds a "!" that
// bash's interactive history expansion would replace: one not escaped
// and followed by something other than a blank, "=", "(" or the end.
func histExpansion(s string) bool {
	for i := 0; i < len(s)-1; i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '!' && !strings.ContainsRune(" \t\n=(\"", rune(s[i+1])):
			return true
		}
	}
	return false
}

// unescape writes a literal's value as the shell sees it and reports
// whether an unquoted glob character is in it.
func unescape(b *strings.Builder, s string, dq bool) (glob bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			n := s[i+1]
			switch {
			case n == '\n':
				i++
				continue
			case !dq || n == '$' || n == '`' || n == '"' || n == '\\':
				b.WriteByte(n)
				i++
				continue
			}
		}
		if !dq && (c == '*' || c == '?' || c == '[' && strings.IndexByte(s[i+1:], ']') >= 0) {
			glob = true
		}
		b.WriteByte(c)
	}
	return glob
}

// ansiSimple are the one-letter escapes of $'…'.
var ansiSimple = map[byte]byte{'a': 7, 'b': 8, 'e': 27, 'E': 27, 'f': 12, 'n': 10, 'r': 13, 't': 9, 'v': 11, '\\': '\\', '\'': '\'', '"': '"', '?': '?'}

// ansiC decodes the inside of $'…'; false for an escape it does not know.
func ansiC(b *strings.Builder, s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		c := s[i]
		if r, ok := ansiSimple[c]; ok {
			b.WriteByte(r)
			continue
		}
		base, max := 16, 0
		switch c {
		case 'x':
			base, max = 16, 2
		case 'u':
			base, max = 16, 4
		case 'U':
			base, max = 16, 8
		case '0', '1', '2', '3', '4', '5', '6', '7':
			base, max = 8, 3
			i-- // the digit is part of the number
		default:
			return false
		}
		j := i + 1
		for j < len(s) && j-(i+1) < max && isDigit(s[j], base) {
			j++
		}
		digits := s[i+1 : j]
		if digits == "" {
			return false
		}
		i += len(digits)
		v, _ := strconv.ParseUint(digits, base, 32)
		if c == 'x' || base == 8 {
			b.WriteByte(byte(v))
		} else {
			b.WriteRune(rune(v))
		}
	}
	return true
}

// isDigit says whether c is a digit in base 8 or 16.
func isDigit(c byte, base int) bool {
	switch {
	case c >= '0' && c <= '7':
		return true
	case base == 8:
		return false
	}
	return c == '8' || c == '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// unquote drops the quotes and backslashes of text that does not parse.
var unquote = strings.NewReplacer(`\`, "", `'`, "", `"`, "")

// rough lists the commands of text that does not parse, as well as words
// allow: it is cut at every operator a shell separates commands with,
// quotes and backslashes are dropped, and each piece is read as a command.
// It is only used with deny lists (an allow list refuses such a line).
func (sc *scan) rough(src string, depth int) {
	cut := func(r rune) bool { return strings.ContainsRune(";&|(){}`<>\n", r) }
	for _, piece := range strings.FieldsFunc(src, cut) {
		piece = unquote.Replace(piece)
		var fs []field
		for _, w := range strings.Fields(piece) {
			fs = append(fs, field{s: w, static: !strings.Contains(w, "$") && utf8.ValidString(w)})
		}
		for len(fs) > 0 && isAssign(fs[0].s) {
			fs = fs[1:]
		}
		if len(fs) > 0 {
			sc.call(fs, stdin{}, false, "", depth)
		}
	}
}
