package devsim

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
	"time"
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

func (c *conn) color(code, s string) string {
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

// newIOS builds the Cisco IOS-like dialect.
func newIOS() *dialect {
	d := &dialect{
		name:              "ios",
		userPrompt:        "%s>",
		enablePrompt:      "%s#",
		configPrompt:      "%s(config)#",
		configIfPrompt:    "%s(config-if)#",
		pager:             " --More-- ",
		loginHeader:       "\nUser Access Verification\n\n",
		usernamePrompt:    "Username: ",
		passwordPrompt:    "Password: ",
		loginInvalid:      "% Login invalid",
		loginTooMany:      "% Too many authentication failures, closing connection.",
		enableFailed:      "% Bad secrets",
		invalidInput:      "% Invalid input detected at '^' marker.",
		incomplete:        "% Incomplete command.",
		ambiguous:         "%% Ambiguous command:  %q",
		goodbye:           "Goodbye from %s.",
		execHelpTitle:     "Exec commands:",
		configHelpTitle:   "Configure commands:",
		configIfHelpTitle: "Interface configuration commands:",
	}

	ifaceArg := "WORD  Interface name, e.g. GigabitEthernet0/0, gi0/1, lo0"
	show := []*command{
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
	}
	doCmd := &command{name: "do", help: "To run exec commands in config mode", args: argRequired, raw: true,
		argHelp: "LINE  Exec Command", run: cmdDo}

	d.exec = []*command{
		{name: "configure", help: "Enter configuration mode", priv: 15, run: cmdConfigure, sub: []*command{
			{name: "terminal", help: "Configure from the terminal", run: cmdConfigure},
		}},
		{name: "copy", help: "Copy from one file to another", priv: 15, sub: []*command{
			{name: "running-config", help: "Copy from current system configuration", sub: []*command{
				{name: "startup-config", help: "Copy to startup configuration", run: cmdCopyRunStart},
			}},
		}},
		{name: "disable", help: "Turn off privileged commands", run: cmdDisable},
		{name: "echo", help: "Print a line of text", args: argOptional, raw: true, argHelp: "LINE  Text to print", run: cmdEcho},
		{name: "enable", help: "Turn on privileged commands", run: cmdEnable},
		{name: "exit", help: "Exit from the EXEC", run: cmdExit},
		{name: "help", help: "Description of the interactive help system", run: cmdHelp},
		{name: "logout", help: "Exit from the EXEC", run: cmdExit},
		{name: "ping", help: "Send echo messages", args: argRequired, argHelp: "WORD  Ping destination address or hostname", run: cmdPing},
		{name: "quit", help: "Exit from the EXEC", run: cmdExit},
		{name: "reload", help: "Halt and perform a cold restart", priv: 15, run: cmdReload},
		{name: "show", help: "Show running system information", sub: show},
		{name: "terminal", help: "Set terminal line parameters", sub: []*command{
			{name: "length", help: "Set number of lines on a screen", args: argRequired,
				argHelp: "<0-512>  Number of lines on screen (0 for no pausing)", run: cmdTermLength},
		}},
		{name: "write", help: "Write running configuration to memory, network, or terminal", priv: 15, sub: []*command{
			{name: "memory", help: "Write to NV memory", run: cmdWriteMemory},
		}},
	}
	d.config = []*command{
		doCmd,
		{name: "end", help: "Exit from configure mode", run: cmdEnd},
		{name: "exit", help: "Exit from configure mode", run: cmdEnd},
		{name: "hostname", help: "Set system's network name", args: argRequired, argHelp: "WORD  This system's network name", run: cmdHostname},
		{name: "interface", help: "Select an interface to configure", args: argRequired, argHelp: ifaceArg, run: cmdInterface},
	}
	d.configIf = []*command{
		{name: "description", help: "Interface specific description", args: argRequired, raw: true,
			argHelp: "LINE  Up to 240 characters describing this interface", run: cmdDescription},
		doCmd,
		{name: "end", help: "Exit from configure mode", run: cmdEnd},
		{name: "exit", help: "Exit from interface configuration mode", run: cmdIfExit},
		{name: "interface", help: "Select an interface to configure", args: argRequired, argHelp: ifaceArg, run: cmdInterface},
		{name: "ip", help: "Interface Internet Protocol config commands", sub: []*command{
			{name: "address", help: "Set the IP address of an interface", args: argRequired,
				argHelp: "A.B.C.D  IP address", run: cmdIPAddress},
		}},
		{name: "no", help: "Negate a command or set its defaults", sub: []*command{
			{name: "description", help: "Interface specific description", run: cmdNoDescription},
			{name: "shutdown", help: "Shutdown the selected interface", run: cmdNoShutdown},
		}},
		{name: "shutdown", help: "Shutdown the selected interface", run: cmdShutdown},
	}
	return d
}

// --- EXEC commands ---

func cmdEcho(c *conn, in *invocation) { c.emit([]string{in.rest}) }

func cmdHelp(c *conn, in *invocation) {
	table := c.d.exec
	switch c.mode {
	case modeConfig:
		table = c.d.config
	case modeConfigIf:
		table = c.d.configIf
	}
	c.emit(c.helpList(table, "", true))
}

func cmdExit(c *conn, in *invocation) {
	if c.d.goodbye != "" {
		c.line("")
		c.line(fmt.Sprintf(c.d.goodbye, c.hostname()))
	}
	c.closing = true
}

func cmdDisable(c *conn, in *invocation) { c.setPriv(1) }

func cmdEnable(c *conn, in *invocation) {
	if c.priv >= 15 {
		return
	}
	pw := c.s.cfg.EnableSecret
	for try := 0; try < 3; try++ {
		got, err := c.readLine(c.d.passwordPrompt, false, true)
		if err != nil {
			return
		}
		if got == pw {
			c.setPriv(15)
			return
		}
	}
	c.line(c.d.enableFailed)
	c.line("")
}

func cmdTermLength(c *conn, in *invocation) {
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

func cmdConfigure(c *conn, in *invocation) {
	switch c.d.name {
	case "ios":
		c.line("Enter configuration commands, one per line.  End with CNTL/Z.")
	case "nxos":
		c.line("Enter configuration commands, one per line. End with CNTL/Z.")
	}
	c.mode = modeConfig
}

func cmdReload(c *conn, in *invocation) {
	ans, err := c.readLine("Proceed with reload? [confirm]", true, true)
	if err != nil {
		if err == errInterrupt {
			c.line("Reload cancelled")
		}
		return
	}
	if a := strings.ToLower(strings.TrimSpace(ans)); a == "" || a[0] != 'y' {
		c.line("Reload cancelled")
		return
	}
	c.line("")
	if c.d.name == "ios" {
		c.line(c.logLine(fmt.Sprintf("%%SYS-5-RELOAD: Reload requested by %s on vty%d. Reload Reason: Reload Command.", c.userName(), c.id-1)))
		c.line(fmt.Sprintf(c.d.goodbye, c.hostname()))
	} else {
		c.line("Broadcast message from root@" + c.hostname())
		c.line("        (unknown) at 9:30 ...")
		c.line("")
		c.line("The system is going down for reboot NOW!")
	}
	c.closing = true
}

// cmdCopyRunStart is IOS "copy running-config startup-config" (and
// "write memory", which asks nothing).
func cmdCopyRunStart(c *conn, in *invocation) {
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

func cmdWriteMemory(c *conn, in *invocation) {
	c.emit([]string{"Building configuration...", "[OK]"})
}

// pingHosts is the simulator's name table for ping.
var pingHosts = map[string]string{
	"core-sw1":   "10.0.0.2",
	"gateway":    "10.0.0.2",
	"ns1":        "10.0.0.53",
	"ntp1":       "10.0.0.123",
	"printer":    "192.168.10.20",
	"fileserver": "192.168.10.10",
	"localhost":  "127.0.0.1",
}

func cmdPing(c *conn, in *invocation) {
	if len(in.args) > 1 {
		c.invalidArg(in, 1)
		return
	}
	target := in.args[0]
	addr, err := netip.ParseAddr(target)
	if err != nil || !addr.Is4() {
		name := strings.ToLower(target)
		s, ok := pingHosts[name]
		if !ok && name == strings.ToLower(c.hostname()) {
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
func (c *conn) reachable(a netip.Addr) bool {
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

// --- show commands ---

func showClock(c *conn, in *invocation) {
	c.emit([]string{c.s.now().Format("15:04:05.000 MST Mon Jan 2 2006")})
}

func showHistory(c *conn, in *invocation) {
	var l []string
	for _, h := range c.history {
		l = append(l, "  "+h)
	}
	c.emit(l)
}

func showPrivilege(c *conn, in *invocation) {
	c.emit([]string{fmt.Sprintf("Current privilege level is %d", c.priv)})
}

func formatUptime(d time.Duration) string {
	m := int64(d / time.Minute)
	parts := []struct {
		n    int64
		unit string
	}{
		{m / (7 * 24 * 60), "week"},
		{m / (24 * 60) % 7, "day"},
		{m / 60 % 24, "hour"},
		{m % 60, "minute"},
	}
	var out []string
	for _, p := range parts {
		if p.n == 0 && (len(out) == 0 && p.unit != "minute") {
			continue
		}
		s := fmt.Sprintf("%d %s", p.n, p.unit)
		if p.n != 1 {
			s += "s"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func showVersion(c *conn, in *invocation) {
	c.s.mu.Lock()
	host := c.s.dev.hostname
	n := 0
	for _, f := range c.s.dev.ifaces {
		if !f.loopback {
			n++
		}
	}
	c.s.mu.Unlock()
	c.emit([]string{
		"DevSim IOS-like Software (DSR2900-UNIVERSALK9-M), Version 15.9(3)M4-sim, RELEASE SOFTWARE (fc1)",
		"Technical Support: https://github.com/termhost/termhost",
		"Copyright (c) 2024-2025 by the termhost authors",
		"Compiled Mon 12-Feb-24 09:00 by devsim",
		"",
		"ROM: System Bootstrap, Version 15.0(1r)M16, RELEASE SOFTWARE (fc1)",
		"",
		host + " uptime is " + formatUptime(c.s.uptime()),
		"System returned to ROM by power-on",
		`System image file is "flash0:dsr2900-universalk9-mz.SPA.159-3.M4.bin"`,
		"Last reload reason: power-on",
		"",
		"devsim DSR2911/K9 (revision 1.0) with 491520K/32768K bytes of memory.",
		"Processor board ID FTX1840ALBS",
		fmt.Sprintf("%d Gigabit Ethernet interfaces", n),
		"255K bytes of non-volatile configuration memory.",
		"",
		"Configuration register is 0x2102",
	})
}

func showInterfaces(c *conn, in *invocation) {
	c.s.mu.Lock()
	var sel []iface
	if len(in.args) > 0 {
		f := c.s.dev.findIface(in.rest)
		if f == nil {
			c.s.mu.Unlock()
			c.invalidArg(in, 0)
			return
		}
		sel = append(sel, *f)
	} else {
		for _, f := range c.s.dev.ifaces {
			sel = append(sel, *f)
		}
	}
	c.s.mu.Unlock()
	var l []string
	for i := range sel {
		l = append(l, c.interfaceLines(&sel[i])...)
	}
	c.emit(l)
}

func (c *conn) interfaceLines(f *iface) []string {
	st, proto := f.status()
	k := f.seed
	up := f.up()
	var l []string
	add := func(format string, a ...any) { l = append(l, fmt.Sprintf(format, a...)) }
	add("%s is %s, line protocol is %s", f.name(), c.statusWord(st), c.statusWord(proto))
	if f.loopback {
		add("  Hardware is Loopback")
	} else {
		add("  Hardware is iGbE, address is %s (bia %s)", f.mac(), f.mac())
	}
	if f.desc != "" {
		add("  Description: %s", f.desc)
	}
	if f.addr.IsValid() {
		add("  Internet address is %s", f.addr)
	}
	if f.loopback {
		add("  MTU 1514 bytes, BW 8000000 Kbit/sec, DLY 5000 usec,")
		add("     reliability 255/255, txload 1/255, rxload 1/255")
		add("  Encapsulation LOOPBACK, loopback not set")
		add("  Keepalive set (10 sec)")
		add("  Last input never, output never, output hang never")
		add("  Last clearing of \"show interface\" counters never")
		add("  Input queue: 0/75/0/0 (size/max/drops/flushes); Total output drops: 0")
		add("  Queueing strategy: fifo")
		add("  Output queue: 0/0 (size/max)")
		add("  5 minute input rate 0 bits/sec, 0 packets/sec")
		add("  5 minute output rate 0 bits/sec, 0 packets/sec")
		add("     0 packets input, 0 bytes, 0 no buffer")
		add("     0 packets output, 0 bytes, 0 underruns")
		add("     0 output errors, 0 collisions, 0 interface resets")
		return l
	}
	add("  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,")
	add("     reliability 255/255, txload 1/255, rxload 1/255")
	add("  Encapsulation ARPA, loopback not set")
	add("  Keepalive set (10 sec)")
	if up {
		add("  Full Duplex, 1Gbps, media type is RJ45")
	} else {
		add("  Auto Duplex, Auto Speed, media type is RJ45")
	}
	add("  output flow-control is unsupported, input flow-control is unsupported")
	add("  ARP type: ARPA, ARP Timeout 04:00:00")
	var inPk, inBy, outPk, outBy, bcast, rate uint64
	if f.carrier {
		inPk, outPk = 128345*k+17, 98123*k+5
		inBy, outBy = inPk*97+k*13, outPk*103+k*7
		bcast = 1023 * k
	}
	if up {
		rate = 1000 * k
		add("  Last input 00:00:0%d, output 00:00:00, output hang never", k%10)
	} else {
		add("  Last input never, output never, output hang never")
	}
	add("  Last clearing of \"show interface\" counters never")
	add("  Input queue: 0/75/0/0 (size/max/drops/flushes); Total output drops: 0")
	add("  Queueing strategy: fifo")
	add("  Output queue: 0/40 (size/max)")
	add("  5 minute input rate %d bits/sec, %d packets/sec", 2*rate, 3*rate/1000)
	add("  5 minute output rate %d bits/sec, %d packets/sec", rate, 2*rate/1000)
	add("     %d packets input, %d bytes, 0 no buffer", inPk, inBy)
	add("     Received %d broadcasts (0 IP multicasts)", bcast)
	add("     0 runts, 0 giants, 0 throttles")
	add("     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored")
	add("     0 watchdog, %d multicast, 0 pause input", bcast/2)
	add("     %d packets output, %d bytes, 0 underruns", outPk, outBy)
	add("     0 output errors, 0 collisions, %d interface resets", k%3)
	add("     0 unknown protocol drops")
	add("     0 babbles, 0 late collision, 0 deferred")
	add("     0 lost carrier, 0 no carrier, 0 pause output")
	add("     0 output buffer failures, 0 output buffers swapped out")
	return l
}

// statusWord colours "up" green and anything down red.
func (c *conn) statusWord(s string) string {
	if s == "up" {
		return c.color(ansiGreen, s)
	}
	return c.color(ansiRed, s)
}

func showIPIntBrief(c *conn, in *invocation) {
	c.s.mu.Lock()
	type row struct{ name, ip, st, proto string }
	var rows []row
	for _, f := range c.s.dev.ifaces {
		ip := "unassigned"
		if f.addr.IsValid() {
			ip = f.addr.Addr().String()
		}
		st, proto := f.status()
		rows = append(rows, row{f.name(), ip, st, proto})
	}
	c.s.mu.Unlock()
	l := []string{fmt.Sprintf("%-22s %-15s %-3s %-6s %-21s %s", "Interface", "IP-Address", "OK?", "Method", "Status", "Protocol")}
	for _, r := range rows {
		pad := strings.Repeat(" ", max(0, 21-len(r.st)))
		l = append(l, fmt.Sprintf("%-22s %-15s YES NVRAM  %s%s %s", r.name, r.ip, c.statusWord(r.st), pad, c.statusWord(r.proto)))
	}
	c.emit(l)
}

func showIPRoute(c *conn, in *invocation) {
	l := []string{
		"Codes: L - local, C - connected, S - static, R - RIP, M - mobile, B - BGP",
		"       D - EIGRP, EX - EIGRP external, O - OSPF, IA - OSPF inter area",
		"       N1 - OSPF NSSA external type 1, N2 - OSPF NSSA external type 2",
		"       E1 - OSPF external type 1, E2 - OSPF external type 2",
		"       i - IS-IS, su - IS-IS summary, L1 - IS-IS level-1, L2 - IS-IS level-2",
		"       * - candidate default, U - per-user static route, o - ODR",
		"",
	}
	c.s.mu.Lock()
	gw := c.s.dev.ifaces[0]
	if gw.up() {
		l = append(l, "Gateway of last resort is 10.0.0.2 to network 0.0.0.0", "",
			"S*    0.0.0.0/0 [1/0] via 10.0.0.2")
	} else {
		l = append(l, "Gateway of last resort is not set", "")
	}
	for _, f := range c.s.dev.ifaces {
		if !f.up() || !f.addr.IsValid() {
			continue
		}
		l = append(l, fmt.Sprintf("C     %s is directly connected, %s", f.addr.Masked(), f.name()))
		if f.addr.Bits() < 32 {
			l = append(l, fmt.Sprintf("L     %s/32 is directly connected, %s", f.addr.Addr(), f.name()))
		}
	}
	c.s.mu.Unlock()
	c.emit(l)
}

func showUsers(c *conn, in *invocation) {
	l := []string{"    Line       User       Host(s)              Idle       Location"}
	for _, o := range c.s.liveConns() {
		mark := " "
		idle := "00:00:00"
		if o == c {
			mark = "*"
		} else {
			o.mu.Lock()
			d := time.Since(o.lastInput)
			o.mu.Unlock()
			idle = fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
		}
		o.mu.Lock()
		user := o.info.User
		o.mu.Unlock()
		line := fmt.Sprintf("%s%3d vty %d", mark, o.id+1, o.id-1)
		l = append(l, fmt.Sprintf("%-15s%-11s%-21s%-11s%s", line, user, "idle", idle, o.remoteIP()))
	}
	l = append(l, "", "  Interface    User               Mode         Idle     Peer Address")
	c.emit(l)
}

func showRunning(c *conn, in *invocation) {
	c.s.mu.Lock()
	host := c.s.dev.hostname
	ifs := make([]iface, len(c.s.dev.ifaces))
	for i, f := range c.s.dev.ifaces {
		ifs[i] = *f
	}
	c.s.mu.Unlock()
	body := []string{
		"!",
		"! Last configuration change at 09:12:44 UTC Mon Jun 2 2025 by " + c.s.cfg.Username,
		"!",
		"version 15.9",
		"service timestamps debug datetime msec",
		"service timestamps log datetime msec",
		"no service password-encryption",
		"!",
		"hostname " + host,
		"!",
		"boot-start-marker",
		"boot-end-marker",
		"!",
		"enable secret 9 $9$devsim$QmFzZTY0SXNOb3RFbmNyeXB0aW9u",
		"!",
		"no aaa new-model",
		"clock timezone UTC 0 0",
		"!",
		"ip domain name lab.example",
		"ip name-server 10.0.0.53",
		"ip cef",
		"no ipv6 cef",
		"!",
		"username " + c.s.cfg.Username + " privilege 15 secret 9 $9$devsim$VGhpc0lzTm90QVJlYWxIYXNo",
		"!",
	}
	for _, f := range ifs {
		body = append(body, "interface "+f.name())
		if f.desc != "" {
			body = append(body, " description "+f.desc)
		}
		if f.addr.IsValid() {
			body = append(body, fmt.Sprintf(" ip address %s %s", f.addr.Addr(), maskString(f.addr.Bits())))
		} else {
			body = append(body, " no ip address")
		}
		if f.shutdown {
			body = append(body, " shutdown")
		}
		if !f.loopback {
			body = append(body, " duplex auto", " speed auto")
		}
		body = append(body, "!")
	}
	body = append(body,
		"router ospf 1",
		" router-id 10.255.255.1",
		" passive-interface Loopback0",
	)
	for _, f := range ifs {
		if f.addr.IsValid() && f.typ == "GigabitEthernet" && f.num != "0/1" {
			body = append(body, fmt.Sprintf(" network %s %s area 0", f.addr.Masked().Addr(), wildcardString(f.addr.Bits())))
		}
	}
	body = append(body,
		"!",
		"ip forward-protocol nd",
		"no ip http server",
		"no ip http secure-server",
		"!",
		"ip route 0.0.0.0 0.0.0.0 10.0.0.2",
		"!",
		"logging buffered 16384",
		"snmp-server community public RO",
		"snmp-server location Lab rack 4, unit 12",
		"!",
		"banner motd ^C",
		"Authorized access only. All activity is logged.",
		"^C",
		"!",
		"line con 0",
		" logging synchronous",
		"line aux 0",
		"line vty 0 4",
		" exec-timeout 10 0",
		" login local",
		" transport input telnet ssh",
		"!",
		"ntp server 10.0.0.123",
		"!",
		"end",
	)
	size := 0
	for _, b := range body {
		size += len(b) + 1
	}
	l := []string{"Building configuration...", "", fmt.Sprintf("Current configuration : %d bytes", size)}
	c.emit(append(l, body...))
}

// --- configuration mode ---

func cmdDo(c *conn, in *invocation) {
	c.dispatch(in.rest, c.d.exec, in.caretBase+strings.Repeat(" ", in.restPos))
}

func cmdEnd(c *conn, in *invocation) { c.leaveConfig() }

func cmdIfExit(c *conn, in *invocation) {
	c.mode = modeConfig
	c.curIf = ""
}

func cmdHostname(c *conn, in *invocation) {
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

func cmdInterface(c *conn, in *invocation) {
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
func (c *conn) withIface(fn func(f *iface)) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if f := c.s.dev.findIface(c.curIf); f != nil {
		fn(f)
	}
}

func cmdDescription(c *conn, in *invocation) {
	d := in.rest
	if len(d) > 240 {
		d = d[:240]
	}
	c.withIface(func(f *iface) { f.desc = d })
}

func cmdNoDescription(c *conn, in *invocation) {
	c.withIface(func(f *iface) { f.desc = "" })
}

func cmdIPAddress(c *conn, in *invocation) {
	if len(in.args) == 1 && c.d.name != "ios" && strings.Contains(in.args[0], "/") {
		p, err := netip.ParsePrefix(in.args[0])
		if err != nil || !p.Addr().Is4() {
			c.invalidArg(in, 0)
			return
		}
		c.withIface(func(f *iface) { f.addr = p })
		return
	}
	if len(in.args) < 2 {
		c.fail(errIncomplete, in.caretBase, c.curLine, len(c.curLine))
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
	if !ok {
		c.invalidArg(in, 1)
		return
	}
	c.withIface(func(f *iface) { f.addr = netip.PrefixFrom(a, bits) })
}

func cmdShutdown(c *conn, in *invocation) {
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

func cmdNoShutdown(c *conn, in *invocation) {
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

func (c *conn) logMsgs(msgs []string) {
	if c.d.name != "ios" {
		return
	}
	for _, m := range msgs {
		c.line(c.logLine(m))
	}
}

// showLogging prints a deterministic buffer of Config.LogBuffer console
// messages (200 by default, about ten pages), for benchmarks.
func showLogging(c *conn, in *invocation) {
	_, ifs := c.snapshotIfaces()
	head := []string{
		"Syslog logging: enabled (0 messages dropped, 0 messages rate-limited, 0 flushes, 0 overruns, xml disabled, filtering disabled)",
		"    Console logging: level debugging, 212 messages logged, xml disabled,",
		"    Buffer logging:  level debugging, 212 messages logged, xml disabled,",
		"",
		"Log Buffer (16384 bytes):",
	}
	n := c.s.cfg.LogBuffer
	if n <= 0 {
		n = 200
	}
	start := DefaultClockStart.Add(-time.Duration(n) * 37 * time.Second)
	c.pageN(len(head)+n, func(j int) string {
		if j < len(head) {
			return head[j]
		}
		i := j - len(head)
		ts := start.Add(time.Duration(i) * 37 * time.Second).Format("Jan _2 15:04:05.000")
		f := ifs[i%len(ifs)]
		var msg string
		switch i % 4 {
		case 0:
			msg = fmt.Sprintf("%%SEC_LOGIN-5-LOGIN_SUCCESS: Login Success [user: %s] [Source: 10.0.0.%d] [localport: 23]", c.s.cfg.Username, 2+i%50)
		case 1:
			msg = fmt.Sprintf("%%LINEPROTO-5-UPDOWN: Line protocol on Interface %s, changed state to up", f.name())
		case 2:
			msg = "%OSPF-5-ADJCHG: Process 1, Nbr 10.0.0.2 on GigabitEthernet0/0 from LOADING to FULL, Loading Done"
		default:
			msg = fmt.Sprintf("%%SYS-6-LOGOUT: User %s has exited tty session %d(10.0.0.%d)", c.s.cfg.Username, 2+i%5, 2+i%50)
		}
		return "*" + ts + ": " + msg
	})
}
