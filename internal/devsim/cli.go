package devsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The CLI engine: login, the command loop, abbreviations, help, errors and
// the pager, shared by every personality. It runs over a conn (the Telnet
// side) and asks the session's personality for the prompt and for what a
// command line does; everything else a vendor changes is data in its
// profile.

// cliMode is the CLI mode of a session.
type cliMode uint8

const (
	modeExec     cliMode = iota // user or privileged EXEC
	modeConfig                  // global configuration
	modeConfigIf                // interface configuration
)

// session is the CLI of one connection.
type session struct {
	*conn
	pf *profile
	p  personality

	priv    int // 1 user EXEC, 15 privileged EXEC
	mode    cliMode
	curIf   string // interface being configured in modeConfigIf
	pageLen int
	history []string
	user    string
	closing bool   // set by a command that ends the session
	noMore  bool   // no paging for the current line
	curLine string // the command line being dispatched
}

func newSession(tc *conn) *session {
	pf := tc.s.pf
	c := &session{conn: tc, pf: pf, p: pf.newState(), priv: 1, pageLen: tc.s.cfg.PageLines}
	if pf.noPager {
		c.pageLen = 0
	}
	return c
}

// run shows the banner, runs the login (if configured) and the command
// loop.
func (c *session) run() {
	cfg := &c.s.cfg
	if !cfg.NoBanner && cfg.Banner != "" {
		c.text(cfg.Banner)
	} else if !cfg.NoBanner {
		c.text(c.expand(c.pf.banner))
	}
	if !cfg.NoLogin {
		if !c.login() {
			return
		}
	} else {
		c.update(func(si *SessionInfo) { si.LoggedIn = true })
	}
	if c.pf.privileged {
		c.setPriv(15)
	}
	c.text(c.expand(c.pf.motd))
	show := true
	for {
		in, err := c.readLine(c.p.prompt(c), true, show)
		show = true
		switch err {
		case nil:
		case errInterrupt:
			continue
		case errCtrlZ:
			c.p.end(c)
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

// readLine reads a line from the terminal; ^Z ends it in configuration
// mode.
func (c *session) readLine(prompt string, echo, show bool) (string, error) {
	return c.conn.readLine(prompt, echo, show, c.mode != modeExec)
}

// ask shows a question and returns the answer trimmed and in lower case.
func (c *session) ask(question string) (string, error) {
	ans, err := c.readLine(question, true, true)
	return strings.ToLower(strings.TrimSpace(ans)), err
}

// expand fills in the placeholders of a profile text (see profile).
func (c *session) expand(t string) string {
	if !strings.Contains(t, "{") {
		return t
	}
	host, box := c.s.Hostname(), ""
	if strings.Contains(t, "{box}") {
		box = defaultBanner(host, !c.s.cfg.NoColor)
	}
	return strings.NewReplacer("{host}", host, "{user}", c.loginName(), "{if}", c.curIf,
		"{now}", c.s.now().Format("2006-01-02 15:04:05"), "{box}", box).Replace(t)
}

// stdPrompt is the profile's prompt for the mode and privilege.
func (c *session) stdPrompt() string {
	i := 0
	switch {
	case c.mode == modeConfig:
		i = 2
	case c.mode == modeConfigIf:
		i = 3
	case c.priv >= 15:
		i = 1
	}
	return c.expand(c.pf.prompts[i])
}

func (c *session) setPriv(p int) {
	c.priv = p
	c.update(func(si *SessionInfo) { si.Privileged = p >= 15 })
}

// login runs the username/password dialogue; false means close.
func (c *session) login() bool {
	cfg := &c.s.cfg
	c.text(c.pf.loginHeader)
	for failures := 0; failures < 3; {
		user := cfg.Username
		if c.pf.userPrompt != "" {
			var err error
			user, err = c.readLine(c.expand(c.pf.userPrompt), true, true)
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
		pass, err := c.readLine(c.pf.passPrompt, false, true)
		if err == errInterrupt || err == errCtrlZ {
			continue
		}
		if err != nil {
			return false
		}
		if user == cfg.Username && pass == cfg.Password {
			c.user = user
			c.update(func(si *SessionInfo) { si.User, si.LoggedIn = user, true })
			c.s.logf("devsim: conn %d logged in as %s", c.id, user)
			return true
		}
		if failures++; failures < 3 {
			c.lines(c.pf.loginFailed)
		}
	}
	c.lines(c.pf.loginClosed)
	return false
}

// execute runs one command line typed in the current mode. It returns
// true when the session must end.
func (c *session) execute(line string) (quit bool) {
	line = strings.TrimRight(line, " ")
	if strings.TrimSpace(line) == "" {
		return false
	}
	c.addHistory(line)
	c.s.logf("devsim: conn %d: %s", c.id, line)
	c.closing = false
	c.noMore = false
	if c.pf.noMorePipe {
		if i := strings.LastIndexByte(line, '|'); i >= 0 && strings.HasPrefix("no-more", strings.TrimSpace(line[i+1:])) && len(strings.TrimSpace(line[i+1:])) >= 4 {
			line = strings.TrimRight(line[:i], " ")
			c.noMore = true
		}
	}
	c.curLine = line
	if e := c.s.cfg.EndlessCommand; e != "" && line == e && !c.pf.noPager {
		c.pageN(math.MaxInt, endlessLine)
		return c.closing
	}
	c.p.run(c, line)
	return c.closing
}

// endlessLine is line i of Config.EndlessCommand's output: numbered, of
// lengths from 18 to 150 characters, so that pages counted in rows
// (pagerRows) end inside lines as well as between them.
func endlessLine(i int) string {
	const words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud exercitation ullamco"
	l := fmt.Sprintf("endless %09d ", i)
	return l + words[:(i*37)%133]
}

// table is the command table of the current mode.
func (c *session) table() []*command {
	switch c.mode {
	case modeConfig:
		return c.pf.config
	case modeConfigIf:
		return c.pf.configIf
	}
	return c.pf.exec
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
	run     func(c *session, in *invocation)
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
func (c *session) invalidArg(in *invocation, i int) {
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

// dispatch resolves line against table and runs the command. caretBase is
// the text shown before line on the terminal (the prompt, or the prompt
// plus "do "), used to place the "^" under an invalid word.
func (c *session) dispatch(line string, table []*command, caretBase string) {
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
func (c *session) match(table []*command, word string) (m *command, ambiguous bool) {
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

func (c *session) invalidAt(caretBase string, pos int) {
	c.fail(errInvalid, caretBase, c.curLine, pos)
}

// incomplete reports the current line as incomplete.
func (c *session) incomplete(in *invocation) {
	c.fail(errIncomplete, in.caretBase, c.curLine, len(c.curLine))
}

// fail prints an error in the profile's words.
func (c *session) fail(kind errKind, caretBase, line string, pos int) {
	p := min(pos, len(line))
	if kind == errInvalid && strings.TrimSpace(line[:p]) == "" {
		kind = errUnknown
	}
	end := p
	for end < len(line) && line[end] != ' ' {
		end++
	}
	r := strings.NewReplacer("{^}", caret(caretBase, pos), "{line}", line, "{word}", line[p:end], "{upto}", line[:end])
	for _, l := range c.pf.errs[kind] {
		c.line(r.Replace(l))
	}
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

func (c *session) helpList(table []*command, prefix string, top bool) []string {
	var out []string
	if top && prefix == "" {
		out = append(out, c.pf.helpTitles[c.mode])
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

func (c *session) addHistory(line string) {
	c.history = append(c.history, line)
	if len(c.history) > 20 {
		c.history = c.history[1:]
	}
}

// lines queues lines of text, unpaged.
func (c *session) lines(l []string) {
	for _, s := range l {
		c.line(s)
	}
}

func (c *session) userName() string {
	if c.user == "" {
		return "console"
	}
	return c.user
}

// loginName is the logged-in user, or the configured one without login.
func (c *session) loginName() string {
	if c.user != "" {
		return c.user
	}
	return c.s.cfg.Username
}

// logLine formats a syslog-style console message with the device clock.
func (c *session) logLine(msg string) string {
	t := c.s.now()
	return fmt.Sprintf("*%s: %s", t.Format("Jan _2 15:04:05.000"), msg)
}

// emit writes command output through the pager.
func (c *session) emit(lines []string) {
	c.pageN(len(lines), func(i int) string { return lines[i] })
}

// pageN writes n lines made one at a time by line(i), so that a huge
// output (Config.LogBuffer) is never held whole, pausing with the pager
// prompt every c.pageLen lines: space shows the next page, Enter one more
// line, anything else (q) stops. An interrupt stops the output; if the
// pager consumed it, "^C" has been printed, otherwise the interrupt is
// still queued.
//
// With the profile's pagerRows the page is counted in rows of the
// window's width (NAWS) as FRR's vty counts them: a row ends at the
// line's end or with the character in the last column, so a long line
// takes several, and a page may end inside one: the pager prompt then
// comes right after the cut, and the rest of the line after its erase.
func (c *session) pageN(n int, line func(i int) string) {
	width := 0
	if c.pf.pagerRows {
		width = c.width()
	}
	shown := 0
	for i := 0; i < n; i++ {
		if c.intrPending() {
			return
		}
		l := line(i)
		for width > 0 && len(l) >= width && c.pageLen > 0 && !c.noMore {
			c.text(l[:width])
			l = l[width:]
			if shown++; shown < c.pageLen {
				continue
			}
			if !c.more(&shown, i, n) {
				return
			}
		}
		c.line(l)
		if err := c.flush(); err != nil {
			return
		}
		shown++
		if c.pageLen <= 0 || c.noMore || shown < c.pageLen || i == n-1 {
			continue
		}
		if !c.more(&shown, i, n) {
			return
		}
	}
}

// more shows the pager prompt after line i of n and reads the key:
// false when the output stops there. shown is the rows shown on the page
// so far; the next page starts.
func (c *session) more(shown *int, i, n int) bool {
	pager := strings.ReplaceAll(c.pf.pager, "{pct}", strconv.Itoa(int(int64(i+1)*100/int64(n))))
	c.prompt(pager)
	erase := c.pf.pagerErase
	if erase == "" {
		erase = "\r" + strings.Repeat(" ", len(pager)) + "\r"
	}
	ev, err := c.next()
	if err != nil {
		return false
	}
	c.text(erase)
	switch {
	case ev.kind == evIntr:
		c.text("^C\r\n")
		return false
	case ev.b == ' ':
		*shown = 0
	case ev.b == '\r' || ev.b == '\n':
		*shown = c.pageLen - 1
	case c.pf.pagerDump != 0 && (ev.b|0x20) == c.pf.pagerDump:
		*shown, c.noMore = 0, true
	default:
		return false
	}
	return true
}

// width is the client's window width (NAWS), 0 if it sent none.
func (c *session) width() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info.Width
}
