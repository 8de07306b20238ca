package devsim

import (
	"fmt"
	"strings"
)

// cliMode is the CLI mode of a session.
type cliMode uint8

const (
	modeExec     cliMode = iota // user or privileged EXEC
	modeConfig                  // global configuration
	modeConfigIf                // interface configuration
)

// dialect is a vendor profile: prompt formats, fixed messages, the pager
// string and the command tables. New vendor dialects (Juniper-like,
// Huawei-like) are added by writing another constructor and registering it
// in dialects; the engine (login, line editing, paging, abbreviation
// matching, help) is shared.
type dialect struct {
	name string

	// Prompt formats; %s is the hostname (and, for configIfPrompt, the
	// interface sub-mode name).
	userPrompt, enablePrompt, configPrompt, configIfPrompt string

	pager string // pager prompt, erased again with CR + blanks + CR

	loginHeader    string // before the first Username prompt
	usernamePrompt string
	passwordPrompt string
	loginInvalid   string // after a failed login
	loginTooMany   string // before closing after the last failed login
	enableFailed   string // after too many wrong enable passwords

	invalidInput string // under the caret line
	incomplete   string
	ambiguous    string // fmt with the %q-quoted input
	goodbye      string // fmt with the hostname; printed on exit/logout

	execHelpTitle, configHelpTitle, configIfHelpTitle string

	exec, config, configIf []*command

	// Optional hooks of the other personalities; nil means the IOS
	// behaviour above.

	// banner returns the default banner (before login).
	banner func(host string, color bool) string
	// motd is printed right after a successful login.
	motd func(c *conn) string
	// prompt returns the whole prompt (it may span lines; the caret of an
	// error lines up with its last line).
	prompt func(c *conn) string
	// startPriv is the privilege level right after login (default 1).
	startPriv int
	// noUsername: the login asks for the password only (FRR vty).
	noUsername bool
	// loginFailed returns the lines printed after a failed login.
	loginFailed []string
	// errLine formats an error: kind is errInvalid, errIncomplete or
	// errAmbiguous; line is the command line as typed, pos the offset of
	// the offending word in it, caretBase the text before line on screen.
	errLines func(c *conn, kind errKind, caretBase, line string, pos int) []string
	// run replaces the command-tree dispatcher for one line (RouterOS,
	// Linux).
	run func(c *conn, line string)
	// endConfig leaves configuration mode (^Z, end).
	endConfig func(c *conn)
	// pagerFn returns the pager prompt with the percentage of the output
	// shown so far; pagerErase the bytes that erase a pager prompt.
	pagerFn    func(pct int) string
	pagerErase func(prompt string) string
	// pagerDump is a key that shows the rest without pausing (RouterOS D).
	pagerDump byte
	// noMorePipe: "| no-more" at the end of a line disables paging for it.
	noMorePipe bool
	// noPager: output is never paged (Linux).
	noPager bool
}

type errKind uint8

const (
	errInvalid errKind = iota
	errIncomplete
	errAmbiguous
)

// Personalities lists the values Config.Personality accepts.
var Personalities = []string{"cisco_ios", "cisco_nxos", "juniper_junos", "arista_eos", "huawei", "mikrotik_routeros", "frr", "linux"}

// dialects maps Config.Personality (or the older Config.Dialect) to a
// dialect constructor.
var dialects = map[string]func() *dialect{
	"":                  newIOS,
	"ios":               newIOS,
	"cisco_ios":         newIOS,
	"cisco_nxos":        newNXOS,
	"arista_eos":        newEOS,
	"frr":               newFRR,
	"juniper_junos":     newJunos,
	"huawei":            newHuawei,
	"mikrotik_routeros": newRouterOS,
	"linux":             newLinux,
}

type argKind uint8

const (
	argNone argKind = iota
	argOptional
	argRequired
)

// command is one node of a command tree. A node has either sub-commands or
// arguments, never both. Each word can be abbreviated to any unambiguous
// prefix among the commands visible at that point.
type command struct {
	name    string
	help    string
	priv    int // minimum privilege level (1 or 15)
	args    argKind
	argHelp string // e.g. "WORD  Destination host name or IP address"
	raw     bool   // free text argument: "?" inside it is not help
	hidden  bool   // works but is not listed by "?"
	sub     []*command
	run     func(c *conn, in *invocation)
}

// invocation is a parsed command line.
type invocation struct {
	args      []string // argument words
	pos       []int    // their offsets in the line
	rest      string   // the raw text after the command words
	restPos   int      // offset of rest in the line
	caretBase string   // text before the line on screen (see dispatch)
}

// invalidArg reports the i-th argument as invalid input.
func (c *conn) invalidArg(in *invocation, i int) {
	c.invalidAt(in.caretBase, in.pos[i])
}

type token struct {
	text string
	pos  int
}

func tokenize(line string) []token {
	var toks []token
	i := 0
	for i < len(line) {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if i >= len(line) {
			break
		}
		j := i
		for j < len(line) && line[j] != ' ' {
			j++
		}
		toks = append(toks, token{line[i:j], i})
		i = j
	}
	return toks
}

// session runs login (if configured) and the command loop.
func (c *conn) session() {
	cfg := &c.s.cfg
	if !cfg.NoBanner {
		b := cfg.Banner
		if b == "" && c.d.banner != nil {
			b = c.d.banner(c.hostname(), !cfg.NoColor)
		} else if b == "" {
			b = defaultBanner(c.hostname(), !cfg.NoColor)
		}
		c.text(b)
	}
	if !cfg.NoLogin {
		if !c.login() {
			return
		}
	} else {
		c.mu.Lock()
		c.info.LoggedIn = true
		c.mu.Unlock()
	}
	if c.d.startPriv > 0 {
		c.setPriv(c.d.startPriv)
	}
	if c.d.motd != nil {
		c.text(c.d.motd(c))
	}
	show := true
	for {
		in, err := c.readLine(c.promptString(), true, show)
		show = true
		switch err {
		case nil:
		case errInterrupt:
			continue
		case errCtrlZ:
			c.leaveConfig()
			continue
		default:
			return
		}
		if c.execute(in) {
			c.flush()
			return
		}
		// Output aborted by an interrupt that is still queued: the
		// next readLine prints "^C" and then the prompt.
		show = !c.intrPending()
	}
}

func (c *conn) hostname() string {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.s.dev.hostname
}

func (c *conn) promptString() string {
	if c.d.prompt != nil {
		return c.d.prompt(c)
	}
	h := c.hostname()
	switch {
	case c.mode == modeConfig:
		return fmt.Sprintf(c.d.configPrompt, h)
	case c.mode == modeConfigIf:
		return fmt.Sprintf(c.d.configIfPrompt, h)
	case c.priv >= 15:
		return fmt.Sprintf(c.d.enablePrompt, h)
	}
	return fmt.Sprintf(c.d.userPrompt, h)
}

func (c *conn) setPriv(p int) {
	c.priv = p
	c.mu.Lock()
	c.info.Privileged = p >= 15
	c.mu.Unlock()
}

// login runs the username/password dialogue; false means close.
func (c *conn) login() bool {
	cfg := &c.s.cfg
	c.text(c.d.loginHeader)
	for failures := 0; failures < 3; {
		user := cfg.Username
		if !c.d.noUsername {
			var err error
			user, err = c.readLine(c.fmtHost(c.d.usernamePrompt), true, true)
			if err == errInterrupt || err == errCtrlZ {
				continue
			}
			if err != nil {
				return false
			}
			user = strings.TrimSpace(user)
			if user == "" {
				continue
			}
		}
		pass, err := c.readLine(c.d.passwordPrompt, false, true)
		if err == errInterrupt || err == errCtrlZ {
			continue
		}
		if err != nil {
			return false
		}
		if user == cfg.Username && pass == cfg.Password {
			c.user = user
			c.mu.Lock()
			c.info.User = user
			c.info.LoggedIn = true
			c.mu.Unlock()
			c.s.logf("devsim: conn %d logged in as %s", c.id, user)
			return true
		}
		failures++
		if c.d.loginFailed != nil {
			if failures < 3 || c.d.loginTooMany == "" {
				for _, l := range c.d.loginFailed {
					c.line(l)
				}
			}
			continue
		}
		c.line(c.d.loginInvalid)
		c.line("")
	}
	if c.d.loginTooMany != "" {
		c.line(c.d.loginTooMany)
	}
	return false
}

// execute runs one command line typed in the current mode. It returns
// true when the session must end.
func (c *conn) execute(line string) (quit bool) {
	table := c.d.exec
	switch c.mode {
	case modeConfig:
		table = c.d.config
	case modeConfigIf:
		table = c.d.configIf
	}
	line = strings.TrimRight(line, " ")
	if strings.TrimSpace(line) == "" {
		return false
	}
	c.addHistory(line)
	c.s.logf("devsim: conn %d: %s", c.id, line)
	c.closing = false
	c.noMore = false
	if c.d.noMorePipe {
		if i := strings.LastIndexByte(line, '|'); i >= 0 && strings.HasPrefix("no-more", strings.TrimSpace(line[i+1:])) && len(strings.TrimSpace(line[i+1:])) >= 4 {
			line = strings.TrimRight(line[:i], " ")
			c.noMore = true
		}
	}
	if c.d.run != nil {
		c.curLine = line
		c.d.run(c, line)
		return c.closing
	}
	c.dispatch(line, table, lastLine(c.promptString()))
	return c.closing
}

// dispatch resolves line against table and runs the command. caretBase is
// the text shown before line on the terminal (the prompt, or the prompt
// plus "do "), used to place the "^" under an invalid word.
func (c *conn) dispatch(line string, table []*command, caretBase string) {
	c.curLine = line
	toks := tokenize(line)
	if len(toks) == 0 {
		return
	}
	var node *command
	i := 0
	for ; i < len(toks); i++ {
		t := toks[i]
		if strings.HasSuffix(t.text, "?") {
			c.emit(c.helpList(table, strings.TrimSuffix(t.text, "?"), node == nil))
			return
		}
		m, ambiguous := c.match(table, t.text)
		if ambiguous {
			c.fail(errAmbiguous, caretBase, line, t.pos)
			return
		}
		if m == nil {
			c.invalidAt(caretBase, t.pos)
			return
		}
		node = m
		if len(m.sub) == 0 {
			i++
			break
		}
		table = m.sub
	}

	args := toks[i:]
	in := &invocation{caretBase: caretBase}
	if len(args) > 0 {
		in.rest = line[args[0].pos:]
		in.restPos = args[0].pos
	}
	for _, a := range args {
		in.args = append(in.args, a.text)
		in.pos = append(in.pos, a.pos)
	}
	switch {
	case len(node.sub) > 0 && node.run == nil:
		// Ran out of words inside the tree, e.g. "show".
		c.fail(errIncomplete, caretBase, line, len(line))
		return
	case len(args) > 0 && node.args == argNone:
		c.invalidAt(caretBase, args[0].pos)
		return
	case len(args) > 0 && !node.raw && args[len(args)-1].text == "?":
		var l []string
		if node.argHelp != "" {
			l = append(l, "  "+node.argHelp)
		}
		if node.args != argRequired || len(args) > 1 {
			l = append(l, "  <cr>")
		}
		c.emit(append(l, ""))
		return
	case len(args) == 0 && node.args == argRequired:
		c.fail(errIncomplete, caretBase, line, len(line))
		return
	}
	node.run(c, in)
}

// match finds the command in table named or abbreviated by word.
func (c *conn) match(table []*command, word string) (m *command, ambiguous bool) {
	w := strings.ToLower(word)
	var cands []*command
	for _, cmd := range table {
		if cmd.priv > c.priv {
			continue
		}
		if cmd.name == w {
			return cmd, false
		}
		if strings.HasPrefix(cmd.name, w) {
			cands = append(cands, cmd)
		}
	}
	switch len(cands) {
	case 0:
		return nil, false
	case 1:
		return cands[0], false
	}
	return nil, true
}

func (c *conn) invalidAt(caretBase string, pos int) {
	c.fail(errInvalid, caretBase, c.curLine, pos)
}

// fail prints an error in the dialect's words.
func (c *conn) fail(kind errKind, caretBase, line string, pos int) {
	if c.d.errLines != nil {
		c.emit(c.d.errLines(c, kind, caretBase, line, pos))
		return
	}
	switch kind {
	case errAmbiguous:
		end := pos
		for end < len(line) && line[end] != ' ' {
			end++
		}
		c.line(fmt.Sprintf(c.d.ambiguous, line[:end]))
	case errIncomplete:
		c.line(c.d.incomplete)
	default:
		c.line(strings.Repeat(" ", len(caretBase)+pos) + "^")
		c.line(c.d.invalidInput)
	}
	c.line("")
}

// caret returns the line with a "^" under column pos of line typed after
// caretBase.
func caret(caretBase string, pos int) string {
	return strings.Repeat(" ", len(caretBase)+pos) + "^"
}

// lastLine returns the text after the last newline of a prompt.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// fmtHost substitutes the hostname for a %s in s, if any.
func (c *conn) fmtHost(s string) string {
	if strings.Contains(s, "%s") {
		return fmt.Sprintf(s, c.hostname())
	}
	return s
}

// leaveConfig leaves configuration mode (^Z, end) the dialect's way.
func (c *conn) leaveConfig() {
	if c.d.endConfig != nil {
		c.d.endConfig(c)
		return
	}
	c.endConfig()
}

func (c *conn) helpList(table []*command, prefix string, top bool) []string {
	var out []string
	if top && prefix == "" {
		switch c.mode {
		case modeConfig:
			out = append(out, c.d.configHelpTitle)
		case modeConfigIf:
			out = append(out, c.d.configIfHelpTitle)
		default:
			out = append(out, c.d.execHelpTitle)
		}
	}
	p := strings.ToLower(prefix)
	for _, cmd := range table {
		if cmd.priv > c.priv || cmd.hidden || !strings.HasPrefix(cmd.name, p) {
			continue
		}
		out = append(out, fmt.Sprintf("  %-16s %s", cmd.name, cmd.help))
	}
	if len(out) == 0 {
		out = append(out, "% Unrecognized command")
	}
	out = append(out, "")
	return out
}

// emit writes command output through the pager.
func (c *conn) emit(lines []string) {
	c.page(lines)
}

func (c *conn) addHistory(line string) {
	c.history = append(c.history, line)
	if len(c.history) > 20 {
		c.history = c.history[1:]
	}
}

// endConfig leaves configuration mode (end, exit at top level, ^Z).
func (c *conn) endConfig() {
	c.mode = modeExec
	c.curIf = ""
	c.line(c.logLine(fmt.Sprintf("%%SYS-5-CONFIG_I: Configured from console by %s on vty%d (%s)",
		c.userName(), c.id-1, c.remoteIP())))
}

func (c *conn) userName() string {
	if c.user == "" {
		return "console"
	}
	return c.user
}

func (c *conn) remoteIP() string {
	a := c.addr
	if i := strings.LastIndexByte(a, ':'); i >= 0 {
		a = a[:i]
	}
	return strings.Trim(a, "[]")
}

// logLine formats a syslog-style console message with the device clock.
func (c *conn) logLine(msg string) string {
	t := c.s.now()
	return fmt.Sprintf("*%s: %s", t.Format("Jan _2 15:04:05.000"), msg)
}
