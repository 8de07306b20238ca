package devsim

import "fmt"

// A personality is the per-session part of a vendor CLI. The value holds
// the state only that vendor has (Junos's edit path, RouterOS's menu,
// Linux's exit status); its words and command tables are its profile.
type personality interface {
	// prompt returns the whole prompt; it may span lines, and the caret
	// of an error lines up with its last line.
	prompt(c *session) string
	// run executes one command line (not blank, already in the history).
	run(c *session, line string)
	// end leaves configuration mode (^Z, "end").
	end(c *session)
}

// A profile is the data of a personality, shared read-only by every
// session of a Server.
type profile struct {
	newState func() personality // the value for a new session

	// Texts may hold {host} (the hostname), {user} (the login name), {if}
	// (the interface being configured) and {now} (the device clock); a
	// banner may be {box}, the default banner box (see expand).
	banner, motd string
	// prompts is what stdPrompt shows in user EXEC, privileged EXEC,
	// configuration and interface configuration.
	prompts [4]string

	loginHeader  string
	userPrompt   string   // "": the login asks for the password only (FRR vty)
	passPrompt   string   // also the prompt of enable
	loginFailed  []string // after a failed login, but the last
	loginClosed  []string // after the last failed login, before closing
	privileged   bool     // sessions start privileged (no enable)
	enableFailed string   // after three wrong enable passwords
	goodbye      string   // printed by exit and logout
	consoleLog   bool     // configuration changes print console log lines (IOS)

	// errs are the lines of an error, by errKind: {^} is the caret line
	// under the offending word, {line} the command line, {word} that word
	// and {upto} the line up to the word's end.
	errs       [4][]string
	helpTitles [3]string // the first line of "?" at the top, by cliMode

	pager      string // the pager prompt; {pct} is the part of the output shown so far
	pagerErase string // what erases the pager prompt; "": CR, blanks, CR
	pagerDump  byte   // a key that shows the rest without pausing (RouterOS D)
	noMorePipe bool   // "| no-more" at the end of a line disables paging for it
	noPager    bool   // output is never paged (Linux)
	// pagerRows: pages are counted in rows of the window's width, and a
	// page may end inside a long line (FRR's vty; see pageN).
	pagerRows bool

	exec, config, configIf []*command
}

type errKind uint8

const (
	errInvalid    errKind = iota // a word that is not a command or a bad argument
	errIncomplete                // the line ends inside the command tree
	errAmbiguous                 // an abbreviation of several commands
	errUnknown                   // errInvalid at the first word of the line
)

// Personalities lists the values Config.Personality accepts.
var Personalities = []string{"cisco_ios", "cisco_nxos", "juniper_junos", "arista_eos", "huawei", "mikrotik_routeros", "frr", "linux"}

// profiles maps Config.Personality to the profile constructor.
var profiles = map[string]func() *profile{
	"cisco_ios":         newIOS,
	"cisco_nxos":        newNXOS,
	"arista_eos":        newEOS,
	"frr":               newFRR,
	"juniper_junos":     newJunos,
	"huawei":            newHuawei,
	"mikrotik_routeros": newRouterOS,
	"linux":             newLinux,
}

// tree is the personality of the modal command-tree CLIs (the IOS family,
// Huawei): all their state is the engine's mode and interface.
type tree struct{}

func (tree) prompt(c *session) string { return c.stdPrompt() }

func (tree) run(c *session, line string) {
	c.dispatch(line, c.table(), lastLine(c.p.prompt(c)))
}

func (tree) end(c *session) {
	c.mode, c.curIf = modeExec, ""
	if c.pf.consoleLog {
		c.line(c.logLine(fmt.Sprintf("%%SYS-5-CONFIG_I: Configured from console by %s on vty%d (%s)",
			c.userName(), c.id-1, c.remoteIP())))
	}
}

// caretErrors is the usual errs of a profile: the caret line, then the
// message.
func caretErrors(invalid, incomplete, ambiguous string) [4][]string {
	return [4][]string{{"{^}", invalid, ""}, {"{^}", incomplete, ""}, {"{^}", ambiguous, ""}, {"{^}", invalid, ""}}
}
