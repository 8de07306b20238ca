package devsim

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ANSI colours, used sparingly.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[1;36m"
)

func (c *session) color(code, s string) string {
	if c.s.cfg.NoColor {
		return s
	}
	return code + s + ansiReset
}

// defaultBanner is the message of the day: a small box with the hostname.
func defaultBanner(host string, color bool) string {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	rows := []struct{ code, text string }{
		{ansiBold, host + " - termhost device simulator (loopback lab)"},
		{ansiYellow, "Authorized access only. All activity is logged."},
	}
	w := 0
	for _, r := range rows {
		w = max(w, len(r.text))
	}
	border := paint(ansiCyan, "+"+strings.Repeat("-", w+4)+"+")
	bar := paint(ansiCyan, "|")
	var b strings.Builder
	b.WriteString("\n" + border + "\n")
	for _, r := range rows {
		b.WriteString(bar + "  " + paint(r.code, r.text) + strings.Repeat(" ", w-len(r.text)) + "  " + bar + "\n")
	}
	b.WriteString(border + "\n")
	return b.String()
}

// iosPrompts and iosHelp are the IOS family's prompts and help titles.
var (
	iosPrompts = [4]string{"{host}>", "{host}#", "{host}(config)#", "{host}(config-if)#"}
	iosHelp    = [3]string{"Exec commands:", "Configure commands:", "Interface configuration commands:"}
)

func newTree() personality { return tree{} }

// newIOS builds the Cisco IOS-like profile, the default.
func newIOS() *profile {
	invalid := "% Invalid input detected at '^' marker."
	ifaceArg := "WORD  Interface name, e.g. GigabitEthernet0/0, gi0/1, lo0"
	exit := &command{name: "exit", help: "Exit from the EXEC", run: cmdExit}
	return iosFamily{
		ifaceArg:  ifaceArg,
		doHelp:    "To run exec commands in config mode",
		configure: "Enter configuration commands, one per line.  End with CNTL/Z.",
		show: []*command{
			{name: "clock", help: "Display the system clock", run: showClock},
			{name: "history", help: "Display the session command history", run: showHistory},
			{name: "interfaces", help: "Interface status and configuration", args: argOptional, argHelp: ifaceArg, run: showInterfaces},
			{name: "ip", help: "IP information", sub: []*command{
				{name: "interface", help: "IP interface status and configuration", sub: []*command{
					{name: "brief", help: "Brief summary of IP status and configuration", run: showIPIntBrief},
				}},
				{name: "route", help: "IP routing table", run: showIPRoute},
			}},
			{name: "logging", help: "Show the contents of logging buffers", run: showLogging},
			{name: "privilege", help: "Show current privilege level", run: showPrivilege},
			{name: "running-config", help: "Current operating configuration", priv: 15, run: showRunning},
			{name: "users", help: "Display information about terminal lines", run: showUsers},
			{name: "version", help: "System hardware and software status", run: showVersion},
		},
		exec: []*command{
			copyRunStart("Copy from one file to another", "Copy from current system configuration", "Copy to startup configuration", cmdCopyRunStart),
			{name: "help", help: "Description of the interactive help system", run: cmdHelp},
			{name: "logout", help: exit.help, run: cmdExit},
			{name: "ping", help: "Send echo messages", args: argRequired, argHelp: "WORD  Ping destination address or hostname", run: cmdPing},
			{name: "quit", help: exit.help, run: cmdExit},
			{name: "reload", help: "Halt and perform a cold restart", priv: 15, run: func(c *session, in *invocation) {
				if reloadConfirmed(c) {
					c.line(c.logLine(fmt.Sprintf("%%SYS-5-RELOAD: Reload requested by %s on vty%d. Reload Reason: Reload Command.", c.userName(), c.id-1)))
					c.line(c.expand(c.pf.goodbye))
					c.closing = true
				}
			}},
			writeMemory("Write to NV memory", cmdWriteMemory),
		},
	}.profile(&profile{
		banner:      "{box}",
		pager:       " --More-- ",
		loginHeader: "\nUser Access Verification\n\n",
		userPrompt:  "Username: ",
		loginFailed: []string{"% Login invalid", ""},
		loginClosed: []string{"% Login invalid", "", "% Too many authentication failures, closing connection."},
		goodbye:     "Goodbye from {host}.",
		consoleLog:  true,
		errs:        [4][]string{{"{^}", invalid, ""}, {"% Incomplete command.", ""}, {`% Ambiguous command:  "{upto}"`, ""}, {"{^}", invalid, ""}},
	})
}

// iosFamily is what the IOS family (IOS, NX-OS, EOS, FRR) varies in its
// shared command tables: the words, the show tree and its other EXEC
// commands.
type iosFamily struct {
	ifaceArg  string // argument help of an interface name
	doHelp    string
	prefixLen bool   // "ip address" takes A.B.C.D/LEN besides an address and a mask
	configure string // printed by "configure terminal"
	show      []*command
	exec      []*command // added to the shared EXEC commands
}

// profile completes p (the vendor's own words) with the family's tables
// and defaults.
func (f iosFamily) profile(p *profile) *profile {
	p.newState = newTree
	p.prompts, p.helpTitles = iosPrompts, iosHelp
	p.passPrompt = "Password: "
	if p.enableFailed == "" {
		p.enableFailed = "% Bad secrets"
	}
	configure := func(c *session, in *invocation) {
		if f.configure != "" {
			c.line(f.configure)
		}
		c.mode = modeConfig
	}
	p.exec = append([]*command{
		{name: "configure", help: "Enter configuration mode", priv: 15, run: configure, sub: []*command{
			{name: "terminal", help: "Configure from the terminal", run: configure},
		}},
		{name: "disable", help: "Turn off privileged commands", run: func(c *session, in *invocation) { c.setPriv(1) }},
		{name: "echo", help: "Print a line of text", args: argOptional, raw: true, argHelp: "LINE  Text to print", run: cmdEcho},
		{name: "enable", help: "Turn on privileged commands", run: cmdEnable},
		{name: "exit", help: "Exit from the EXEC", run: cmdExit},
		{name: "show", help: "Show running system information", sub: f.show},
		{name: "terminal", help: "Set terminal line parameters", sub: []*command{
			{name: "length", help: "Set number of lines on a screen", args: argRequired,
				argHelp: "<0-512>  Number of lines on screen (0 for no pausing)", run: cmdTermLength},
		}},
	}, f.exec...)
	slices.SortStableFunc(p.exec, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	addrHelp := "A.B.C.D  IP address"
	if f.prefixLen {
		addrHelp = "A.B.C.D/LEN  IP address and prefix length"
	}
	do := &command{name: "do", help: f.doHelp, args: argRequired, raw: true, argHelp: "LINE  Exec Command", run: cmdDo}
	end := &command{name: "end", help: "Exit from configure mode", run: cmdEnd}
	iface := &command{name: "interface", help: "Select an interface to configure", args: argRequired, argHelp: f.ifaceArg, run: cmdInterface}
	p.config = []*command{do, end,
		{name: "exit", help: "Exit from configure mode", run: cmdEnd},
		{name: "hostname", help: "Set system's network name", args: argRequired, argHelp: "WORD  This system's network name", run: cmdHostname},
		iface,
	}
	p.configIf = []*command{
		{name: "description", help: "Interface specific description", args: argRequired, raw: true,
			argHelp: "LINE  Up to 240 characters describing this interface", run: cmdDescription},
		do, end,
		{name: "exit", help: "Exit from interface configuration mode", run: cmdIfExit},
		iface,
		{name: "ip", help: "Interface Internet Protocol config commands", sub: []*command{
			{name: "address", help: "Set the IP address of an interface", args: argRequired,
				argHelp: addrHelp, run: setAddress(f.prefixLen, false)},
		}},
		{name: "no", help: "Negate a command or set its defaults", sub: []*command{
			{name: "description", help: "Interface specific description", run: cmdNoDescription},
			{name: "shutdown", help: "Shutdown the selected interface", run: cmdNoShutdown},
		}},
		{name: "shutdown", help: "Shutdown the selected interface", run: cmdShutdown},
	}
	return p
}

// copyRunStart is "copy running-config startup-config".
func copyRunStart(help, runHelp, startHelp string, run func(c *session, in *invocation)) *command {
	return &command{name: "copy", help: help, priv: 15, sub: []*command{
		{name: "running-config", help: runHelp, sub: []*command{
			{name: "startup-config", help: startHelp, run: run},
		}},
	}}
}

// writeMemory is "write memory".
func writeMemory(help string, run func(c *session, in *invocation)) *command {
	return &command{name: "write", help: "Write running configuration to memory, network, or terminal", priv: 15, sub: []*command{
		{name: "memory", help: help, run: run},
	}}
}

// --- EXEC commands ---

func cmdEcho(c *session, in *invocation) { c.emit([]string{in.rest}) }

func cmdHelp(c *session, in *invocation) { c.emit(c.helpList(c.table(), "", true)) }

func cmdExit(c *session, in *invocation) {
	if c.pf.goodbye != "" {
		c.line("")
		c.line(c.expand(c.pf.goodbye))
	}
	c.closing = true
}

func cmdEnable(c *session, in *invocation) {
	if c.priv >= 15 {
		return
	}
	pw := c.s.cfg.EnableSecret
	for try := 0; try < 3; try++ {
		got, err := c.readLine(c.pf.passPrompt, false, true)
		if err != nil {
			return
		}
		if got == pw {
			c.setPriv(15)
			return
		}
	}
	c.line(c.pf.enableFailed)
	c.line("")
}

func cmdTermLength(c *session, in *invocation) {
	if len(in.args) > 1 {
		c.invalidArg(in, 1)
		return
	}
	n, err := strconv.Atoi(in.args[0])
	if err != nil || n < 0 || n > 512 {
		c.invalidArg(in, 0)
		return
	}
	c.pageLen = n
}

// reloadConfirmed asks IOS's reload question; a "y..." answer is yes.
func reloadConfirmed(c *session) bool {
	a, err := c.ask("Proceed with reload? [confirm]")
	if err == nil && a != "" && a[0] == 'y' {
		c.line("")
		return true
	}
	if err == nil || err == errInterrupt {
		c.line("Reload cancelled")
	}
	return false
}

// cmdCopyRunStart is IOS "copy running-config startup-config" (and
// "write memory", which asks nothing).
func cmdCopyRunStart(c *session, in *invocation) {
	ans, err := c.readLine("Destination filename [startup-config]? ", true, true)
	if err != nil {
		return
	}
	if a := strings.TrimSpace(ans); a != "" && a != "startup-config" {
		c.line(fmt.Sprintf("%%Error opening nvram:/%s (Permission denied)", a))
		return
	}
	cmdWriteMemory(c, in)
}

func cmdWriteMemory(c *session, in *invocation) {
	c.emit([]string{"Building configuration...", "[OK]"})
}

var pingHosts = map[string]string{
	"core-sw1":   "10.0.0.2",
	"gateway":    "10.0.0.2",
	"ns1":        "10.0.0.53",
	"ntp1":       "10.0.0.123",
	"printer":    "192.168.10.20",
	"fileserver": "192.168.10.10",
	"localhost":  "127.0.0.1",
}

func cmdPing(c *session, in *invocation) {
	if len(in.args) > 1 {
		c.invalidArg(in, 1)
		return
	}
	target := in.args[0]
	addr, err := netip.ParseAddr(target)
	if err != nil || !addr.Is4() {
		name := strings.ToLower(target)
		s, ok := pingHosts[name]
		if !ok && name == strings.ToLower(c.s.Hostname()) {
			s, ok = "10.255.255.1", true
		}
		if !ok {
			c.emit([]string{
				fmt.Sprintf("Translating %q...domain server (10.0.0.53)", target),
				"% Unrecognized host or address, or protocol not running.",
				"",
			})
			return
		}
		addr = netip.MustParseAddr(s)
	}
	ok := c.reachable(addr)
	h := fnv.New32a()
	h.Write([]byte(addr.String()))
	lo := int(h.Sum32()%3) + 1
	lines := []string{
		"Type escape sequence to abort.",
		fmt.Sprintf("Sending 5, 100-byte ICMP Echos to %s, timeout is 2 seconds:", addr),
	}
	if ok {
		lines = append(lines, "!!!!!",
			fmt.Sprintf("Success rate is 100 percent (5/5), round-trip min/avg/max = %d/%d/%d ms", lo, lo+1, lo+3))
	} else {
		lines = append(lines, ".....", "Success rate is 0 percent (0/5)")
	}
	c.emit(lines)
}

// reachable decides deterministically whether a ping to a answers:
// documentation prefixes never answer; addresses on connected subnets
// answer when their interface is up; everything else is reachable through
// the default route on GigabitEthernet0/0 when that interface is up.
func (c *session) reachable(a netip.Addr) bool {
	for _, p := range []string{"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"} {
		if netip.MustParsePrefix(p).Contains(a) {
			return false
		}
	}
	if a.IsLoopback() {
		return true
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for _, f := range c.s.dev.ifaces {
		if f.addr.IsValid() && f.addr.Masked().Contains(a) {
			return f.up()
		}
	}
	return c.s.dev.ifaces[0].up()
}

// --- configuration mode ---

func cmdDo(c *session, in *invocation) {
	c.dispatch(in.rest, c.pf.exec, in.caretBase+strings.Repeat(" ", in.restPos))
}

func cmdEnd(c *session, in *invocation) { c.p.end(c) }

func cmdIfExit(c *session, in *invocation) {
	c.mode = modeConfig
	c.curIf = ""
}

func cmdHostname(c *session, in *invocation) {
	if len(in.args) > 1 {
		c.invalidArg(in, 1)
		return
	}
	name := in.args[0]
	for i := 0; i < len(name); i++ {
		b := name[i]
		if !(b == '-' || b == '_' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z') || len(name) > 63 {
			c.invalidAt(in.caretBase, in.pos[0]+i)
			return
		}
	}
	c.s.mu.Lock()
	c.s.dev.hostname = name
	c.s.mu.Unlock()
}

func cmdInterface(c *session, in *invocation) {
	c.s.mu.Lock()
	f := c.s.dev.findIface(in.rest)
	c.s.mu.Unlock()
	if f == nil {
		c.invalidArg(in, 0)
		return
	}
	c.mode = modeConfigIf
	c.curIf = f.name()
}

// withIface runs fn on the interface being configured, under the device lock.
func (c *session) withIface(fn func(f *iface)) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if f := c.s.dev.findIface(c.curIf); f != nil {
		fn(f)
	}
}

func cmdDescription(c *session, in *invocation) {
	d := in.rest
	if len(d) > 240 {
		d = d[:240]
	}
	c.withIface(func(f *iface) { f.desc = d })
}

func cmdNoDescription(c *session, in *invocation) {
	c.withIface(func(f *iface) { f.desc = "" })
}

// setAddress is "ip address A.B.C.D MASK"; with prefixLen A.B.C.D/LEN
// works too, and with bitsMask (Huawei) MASK may be a prefix length.
func setAddress(prefixLen, bitsMask bool) func(c *session, in *invocation) {
	return func(c *session, in *invocation) {
		if len(in.args) == 1 && prefixLen && strings.Contains(in.args[0], "/") {
			p, err := netip.ParsePrefix(in.args[0])
			if err != nil || !p.Addr().Is4() {
				c.invalidArg(in, 0)
				return
			}
			c.withIface(func(f *iface) { f.addr = p })
			return
		}
		if len(in.args) < 2 || bitsMask && len(in.args) > 2 {
			c.incomplete(in)
			return
		}
		if len(in.args) > 2 {
			c.invalidArg(in, 2)
			return
		}
		a, err := netip.ParseAddr(in.args[0])
		if err != nil || !a.Is4() {
			c.invalidArg(in, 0)
			return
		}
		bits, ok := maskBits(in.args[1])
		if !ok && bitsMask {
			_, err := fmt.Sscanf(in.args[1], "%d", &bits)
			ok = err == nil && bits >= 0 && bits <= 32
		}
		if !ok {
			c.invalidArg(in, 1)
			return
		}
		c.withIface(func(f *iface) { f.addr = netip.PrefixFrom(a, bits) })
	}
}

func cmdShutdown(c *session, in *invocation) {
	var msgs []string
	c.withIface(func(f *iface) {
		if f.shutdown {
			return
		}
		wasUp := f.up()
		f.shutdown = true
		msgs = append(msgs, fmt.Sprintf("%%LINK-5-CHANGED: Interface %s, changed state to administratively down", f.name()))
		if wasUp {
			msgs = append(msgs, fmt.Sprintf("%%LINEPROTO-5-UPDOWN: Line protocol on Interface %s, changed state to down", f.name()))
		}
	})
	c.logMsgs(msgs)
}

func cmdNoShutdown(c *session, in *invocation) {
	var msgs []string
	c.withIface(func(f *iface) {
		if !f.shutdown {
			return
		}
		f.shutdown = false
		if f.carrier {
			msgs = append(msgs,
				fmt.Sprintf("%%LINK-3-UPDOWN: Interface %s, changed state to up", f.name()),
				fmt.Sprintf("%%LINEPROTO-5-UPDOWN: Line protocol on Interface %s, changed state to up", f.name()))
		} else {
			msgs = append(msgs, fmt.Sprintf("%%LINK-3-UPDOWN: Interface %s, changed state to down", f.name()))
		}
	})
	c.logMsgs(msgs)
}

func (c *session) logMsgs(msgs []string) {
	if !c.pf.consoleLog {
		return
	}
	for _, m := range msgs {
		c.line(c.logLine(m))
	}
}
