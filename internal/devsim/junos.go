package devsim

import (
	"fmt"
	"strings"
)

// Juniper Junos-like personality: "user@host> " operational mode,
// "user@host# " configuration mode under an "[edit ...]" banner, candidate
// configuration with commit, "---(more N%)---" pager.

// junos is the per-session state of the Junos personality.
type junos struct {
	tree
	path  string // the hierarchy level being edited ("interfaces ge-0/0/1")
	dirty bool   // uncommitted configuration changes
}

func (j *junos) prompt(c *session) string {
	who := c.loginName() + "@" + c.s.Hostname()
	if c.mode == modeExec {
		return who + "> "
	}
	path := ""
	if j.path != "" {
		path = " " + j.path
	}
	return "\n[edit" + path + "]\n" + who + "# "
}

// end does nothing: ^Z does not leave configuration mode.
func (j *junos) end(c *session) {}

func junosOf(c *session) *junos { return c.p.(*junos) }

func newJunos() *profile {
	syntax := "syntax error, expecting <command>."
	d := &profile{newState: func() personality { return &junos{} }, privileged: true, noMorePipe: true,
		banner:     "\n{host} (ttyp0)\n\n",
		userPrompt: "login: ", passPrompt: "Password:",
		loginFailed: []string{"Login incorrect"},
		loginClosed: []string{"Login incorrect"},
		motd:        "\n--- Junos-like OS 21.4R3-S2-sim (termhost device simulator)\n",
		pager:       "---(more {pct}%)---",
		errs:        [4][]string{{"{^}", syntax}, {"{^}", syntax}, {"{^}", "'{word}' is ambiguous."}, {"{^}", "unknown command."}},
		helpTitles:  [3]string{"Possible completions:", "Possible completions:", "Possible completions:"},
	}

	ifaceArg := "<interface-name>  Name of physical or logical interface, or terse"
	show := []*command{
		{name: "configuration", help: "Show current configuration", run: junosShowConfig},
		{name: "interfaces", help: "Show interface information", args: argOptional, argHelp: ifaceArg, run: junosShowInterfaces},
		{name: "route", help: "Show routing table information", run: junosShowRoute},
		{name: "system", help: "Show system information", sub: []*command{
			{name: "uptime", help: "Show time since system and processes started", run: junosShowUptime},
		}},
		{name: "version", help: "Show software process revision levels", run: junosShowVersion},
	}
	d.exec = []*command{
		{name: "configure", help: "Manipulate software configuration information", args: argOptional, argHelp: "exclusive|private", run: junosConfigure},
		{name: "echo", help: "Print a line of text", args: argOptional, raw: true, argHelp: "LINE  Text to print", run: cmdEcho},
		{name: "exit", help: "Exit the management session", run: cmdExit},
		{name: "quit", help: "Exit the management session", run: cmdExit},
		{name: "request", help: "Make system-level requests", sub: []*command{
			{name: "system", help: "Perform system-level operations", sub: []*command{
				{name: "reboot", help: "Reboot the system", run: junosReboot},
			}},
		}},
		{name: "set", help: "Set CLI properties, date/time, craft interface message", sub: []*command{
			{name: "cli", help: "Set CLI properties", sub: []*command{
				{name: "screen-length", help: "Set number of lines on screen", args: argRequired,
					argHelp: "<screen-length>  Number of lines on screen (0 = no pausing)", run: cmdTermLength},
			}},
		}},
		{name: "show", help: "Show system information", sub: show},
	}
	d.config = []*command{
		{name: "commit", help: "Commit current set of changes", args: argOptional, argHelp: "check|confirmed [minutes]|and-quit", run: junosCommit},
		{name: "delete", help: "Delete a data element", args: argRequired, raw: true, argHelp: "<statement>", run: junosSet},
		{name: "edit", help: "Edit a sub-element", args: argRequired, raw: true, argHelp: "<statement>", run: junosEdit},
		{name: "exit", help: "Exit from this level", args: argOptional, argHelp: "configuration-mode", run: junosExit},
		{name: "quit", help: "Quit from this level", args: argOptional, argHelp: "configuration-mode", run: junosExit},
		{name: "rollback", help: "Roll back to previous committed configuration", args: argOptional, argHelp: "<number>", run: junosRollback},
		{name: "run", help: "Run an operational-mode command", args: argRequired, raw: true, argHelp: "<command>", run: cmdDo},
		{name: "set", help: "Set a parameter", args: argRequired, raw: true, argHelp: "<statement>", run: junosSet},
		{name: "show", help: "Show a parameter", args: argOptional, raw: true, run: junosShowConfig},
		{name: "top", help: "Exit to top level of configuration", run: func(c *session, in *invocation) { junosOf(c).path = "" }},
		{name: "up", help: "Exit one level of configuration", run: junosUp},
	}
	d.configIf = d.config
	return d
}

func junosConfigure(c *session, in *invocation) {
	c.line("Entering configuration mode")
	c.mode, junosOf(c).path = modeConfig, ""
}

func junosSet(c *session, in *invocation) {
	j := junosOf(c)
	j.dirty = true
	f := strings.Fields(j.path + " " + in.rest)
	// Apply interface descriptions so that "show interfaces" follows.
	if len(f) >= 4 && f[0] == "interfaces" && f[2] == "description" && strings.HasPrefix(c.curLine, "set") {
		c.s.mu.Lock()
		if i := c.s.dev.findIface(f[1]); i != nil {
			i.desc = strings.Trim(strings.Join(f[3:], " "), `"`)
		}
		c.s.mu.Unlock()
	}
}

func junosEdit(c *session, in *invocation) {
	j := junosOf(c)
	j.path = strings.TrimSpace(j.path + " " + strings.Join(in.args, " "))
}

func junosUp(c *session, in *invocation) {
	j := junosOf(c)
	f := strings.Fields(j.path)
	if len(f) == 0 {
		c.line("Exiting configuration mode")
		c.mode = modeExec
		return
	}
	j.path = strings.Join(f[:len(f)-1], " ")
}

func junosExit(c *session, in *invocation) {
	j := junosOf(c)
	if len(in.args) == 0 && j.path != "" {
		junosUp(c, in)
		return
	}
	if j.dirty {
		c.line("The configuration has been changed but not committed")
		a, err := c.ask("Exit with uncommitted changes? [yes,no] (yes) ")
		if err != nil || a != "" && !strings.HasPrefix("yes", a) {
			return
		}
	}
	c.line("Exiting configuration mode")
	c.mode, j.path = modeExec, ""
}

func junosCommit(c *session, in *invocation) {
	arg := ""
	if len(in.args) > 0 {
		arg = strings.ToLower(in.args[0])
	}
	switch {
	case arg == "":
		c.emit([]string{"commit complete"})
	case strings.HasPrefix("check", arg):
		c.emit([]string{"configuration check succeeds"})
		return
	case strings.HasPrefix("confirmed", arg):
		mins := "10"
		if len(in.args) > 1 {
			mins = in.args[1]
		}
		c.emit([]string{"configuration check succeeds",
			"commit confirmed will be automatically rolled back in " + mins + " minutes unless confirmed",
			"commit complete", "", "# commit confirmed will be rolled back in " + mins + " minutes"})
	case strings.HasPrefix("and-quit", arg):
		c.emit([]string{"commit complete", "Exiting configuration mode"})
		c.mode, junosOf(c).path = modeExec, ""
	default:
		c.invalidArg(in, 0)
		return
	}
	junosOf(c).dirty = false
}

func junosRollback(c *session, in *invocation) {
	c.line("load complete")
	junosOf(c).dirty = false
}

func junosReboot(c *session, in *invocation) {
	if a, err := c.ask("Reboot the system ? [yes,no] (no) "); err != nil || a == "" || !strings.HasPrefix("yes", a) {
		return
	}
	c.emit([]string{"", "Shutdown NOW!", "[pid 4242]"})
	c.closing = true
}

func junosShowVersion(c *session, in *invocation) {
	c.emit([]string{
		"Hostname: " + c.s.Hostname(),
		"Model: vsrx-sim",
		"Junos: 21.4R3-S2-sim",
		"Junos-like OS of the termhost device simulator [21.4R3-S2-sim]",
		"JUNOS OS Kernel 64-bit  [20230310.devsim]",
		"JUNOS OS runtime [20230310.devsim]",
		"JUNOS Packet Forwarding Engine Simulation Package [21.4R3-S2-sim]",
	})
}

func junosShowUptime(c *session, in *invocation) {
	now := c.s.now()
	c.emit([]string{
		"Current time: " + now.Format("2006-01-02 15:04:05 MST"),
		"System booted: " + now.Add(-c.s.uptime()).Format("2006-01-02 15:04:05 MST"),
		"Protocols started: " + now.Add(-c.s.uptime()).Format("2006-01-02 15:04:05 MST"),
		"Last configured: 2025-06-02 09:12:44 UTC by " + c.s.cfg.Username,
		"9:30AM  up 87 days,  4:17, 1 user, load averages: 0.08, 0.04, 0.01",
	})
}

func junosShowInterfaces(c *session, in *invocation) {
	_, ifs := c.snapshotIfaces()
	if len(in.args) == 1 && strings.HasPrefix("terse", strings.ToLower(in.args[0])) && len(in.args[0]) >= 2 {
		l := []string{"Interface               Admin Link Proto    Local                 Remote"}
		for _, f := range ifs {
			admin, link := "up", "up"
			if f.shutdown {
				admin = "down"
			}
			if !f.up() {
				link = "down"
			}
			l = append(l, fmt.Sprintf("%-23s %-5s %s", f.name(), admin, link))
			if f.addr.IsValid() {
				l = append(l, fmt.Sprintf("%-23s %-5s %-4s %-8s %s", f.name()+".0", admin, link, "inet", f.addr))
			}
		}
		c.emit(l)
		return
	}
	c.showIfaces(in, func(f iface) (l []string) {
		add := func(format string, a ...any) { l = append(l, fmt.Sprintf(format, a...)) }
		en, link := "Enabled", "Up"
		if f.shutdown {
			en = "Administratively down"
		}
		if !f.up() {
			link = "Down"
		}
		k := f.seed
		inPk, _, outPk, _ := f.counters()
		add("Physical interface: %s, %s, Physical link is %s", f.name(), en, link)
		add("  Interface index: %d, SNMP ifIndex: %d", 147+k, 525+k)
		if f.desc != "" {
			add("  Description: %s", f.desc)
		}
		if f.loopback {
			add("  Type: Loopback, Link-level type: Unspecified, MTU: Unlimited")
		} else {
			add("  Link-level type: Ethernet, MTU: 1514, Speed: 1000mbps, BPDU Error: None, Loop Detect PDU Error: None,")
			add("  Loopback: Disabled, Source filtering: Disabled, Flow control: Enabled")
		}
		add("  Device flags   : Present Running")
		add("  Interface flags: SNMP-Traps Internal: 0x4000")
		add("  Link flags     : None")
		add("  CoS queues     : 8 supported, 8 maximum usable queues")
		add("  Current address: %s, Hardware address: %s", f.macColon(), f.macColon())
		add("  Last flapped   : 2025-03-06 05:13:00 UTC (12w3d 04:17 ago)")
		add("  Input rate     : %d bps (%d pps)", 2000*k, 3*k)
		add("  Output rate    : %d bps (%d pps)", 1000*k, 2*k)
		add("  Active alarms  : None")
		add("  Active defects : None")
		add("  Interface transmit statistics: Disabled")
		if f.addr.IsValid() {
			add("")
			add("  Logical interface %s.0 (Index %d) (SNMP ifIndex %d)", f.name(), 69+k, 540+k)
			add("    Flags: Up SNMP-Traps 0x4004000 Encapsulation: ENET2")
			add("    Input packets : %d", inPk)
			add("    Output packets: %d", outPk)
			add("    Protocol inet, MTU: 1500")
			add("      Flags: Sendbcast-pkt-to-re")
			add("      Addresses, Flags: Is-Preferred Is-Primary")
			add("        Destination: %s, Local: %s", f.addr.Masked(), f.addr.Addr())
		}
		add("")
		return l
	})
}

func junosShowRoute(c *session, in *invocation) {
	rs := c.routes()
	l := []string{"",
		fmt.Sprintf("inet.0: %d destinations, %d routes (%d active, 0 holddown, 0 hidden)", len(rs), len(rs), len(rs)),
		"+ = Active Route, - = Last Active, * = Both", ""}
	for _, r := range rs {
		switch {
		case r.static:
			l = append(l, fmt.Sprintf("%-18s *[Static/5] 12w3d 04:17:00", r.prefix), fmt.Sprintf("                    >  to %s via %s.0", r.via, r.ifname))
		case r.local:
			l = append(l, fmt.Sprintf("%-18s *[Local/0] 12w3d 04:17:00", r.prefix), fmt.Sprintf("                       Local via %s.0", r.ifname))
		default:
			l = append(l, fmt.Sprintf("%-18s *[Direct/0] 12w3d 04:17:00", r.prefix), fmt.Sprintf("                    >  via %s.0", r.ifname))
		}
	}
	c.emit(l)
}

func junosShowConfig(c *session, in *invocation) {
	host, ifs := c.snapshotIfaces()
	l := []string{"## Last commit: 2025-06-02 09:12:44 UTC by " + c.s.cfg.Username,
		"version 21.4R3-S2-sim;", "system {", "    host-name " + host + ";",
		"    login {", "        user " + c.s.cfg.Username + " {", "            class super-user;",
		"            authentication {", `                encrypted-password "$6$devsim$c2ltdWxhdGVk"; ## SECRET-DATA`,
		"            }", "        }", "    }", "    services {", "        telnet;", "        ssh;", "    }", "}", "interfaces {"}
	for _, f := range ifs {
		l = append(l, "    "+f.name()+" {")
		if f.desc != "" {
			l = append(l, `        description "`+f.desc+`";`)
		}
		if f.shutdown {
			l = append(l, "        disable;")
		}
		if f.addr.IsValid() {
			l = append(l, "        unit 0 {", "            family inet {", "                address "+f.addr.String()+";", "            }", "        }")
		}
		l = append(l, "    }")
	}
	l = append(l, "}", "routing-options {", "    static {", "        route 0.0.0.0/0 next-hop 10.0.0.2;", "    }", "}")
	c.emit(l)
}
