package devsim

import (
	"fmt"
	"strings"
)

// Huawei VRP-like personality: "<host>" user view, "[host]" system view,
// "[host-GigabitEthernet0/0/1]" interface view, "  ---- More ----" pager
// erased with ESC[42D.

func newHuawei() *profile {
	d := &profile{newState: newTree, privileged: true, pager: "  ---- More ----",
		loginHeader: "\nLogin authentication\n\n\n",
		userPrompt:  "Username:", passPrompt: "Password:",
		loginFailed: []string{"Error: Local authentication is rejected.", "", "", "Login authentication", "", ""},
		loginClosed: []string{"Error: Local authentication is rejected."},
		motd: "Info: The max number of VTY users is 5, and the number\n" +
			"      of current VTY users on line is 1.\n" +
			"      The current login time is {now}.\n",
		prompts:    [4]string{"<{host}>", "<{host}>", "[{host}]", "[{host}-{if}]"},
		pagerErase: "\x1b[42D" + strings.Repeat(" ", 42) + "\x1b[42D",
		errs: caretErrors("Error: Unrecognized command found at '^' position.",
			"Error:Incomplete command found at '^' position.", "Error:Ambiguous command found at '^' position."),
		helpTitles: [3]string{"User view commands:", "System view commands:", "Interface view commands:"},
	}

	ifaceArg := "STRING  Interface name, e.g. GigabitEthernet0/0/1, GE0/0/1, LoopBack0"
	display := &command{name: "display", help: "Display information", sub: []*command{
		{name: "current-configuration", help: "Current configuration", run: huaweiCurrentConfig},
		{name: "interface", help: "Status and configuration information for the interface", args: argOptional, argHelp: ifaceArg + ", brief", run: huaweiDisplayInterface},
		{name: "ip", help: "IP information", sub: []*command{
			{name: "routing-table", help: "IP routing table", run: huaweiRoutingTable},
		}},
		{name: "version", help: "Display version information", run: huaweiVersion},
	}}
	quit := &command{name: "quit", help: "Exit from current mode and enter prior mode", run: huaweiQuit}
	ret := &command{name: "return", help: "Enter the privileged mode", run: cmdEnd}
	d.exec = []*command{
		display,
		{name: "echo", help: "Print a line of text", args: argOptional, raw: true, argHelp: "TEXT  Text to print", run: cmdEcho},
		quit,
		{name: "reboot", help: "Reboot the device", run: huaweiReboot},
		{name: "save", help: "Save the current configuration", run: huaweiSave},
		{name: "screen-length", help: "Set the number of lines displayed on a screen", args: argRequired,
			argHelp: "INTEGER<0-512>  Number of lines (0: no pausing), then temporary", run: huaweiScreenLength},
		{name: "system-view", help: "Enter the system view", run: func(c *session, in *invocation) {
			c.line("Enter system view, return user view with return command.")
			c.mode = modeConfig
		}},
	}
	d.config = []*command{
		display,
		{name: "interface", help: "Specify the interface configuration view", args: argRequired, argHelp: ifaceArg, run: cmdInterface},
		quit, ret,
		{name: "sysname", help: "Set the host name", args: argRequired, argHelp: "TEXT  Host name", run: cmdHostname},
	}
	d.configIf = []*command{
		{name: "description", help: "Describe the interface", args: argRequired, raw: true, argHelp: "TEXT  Description", run: cmdDescription},
		display,
		{name: "interface", help: "Specify the interface configuration view", args: argRequired, argHelp: ifaceArg, run: cmdInterface},
		{name: "ip", help: "Specify IP configuration", sub: []*command{
			{name: "address", help: "Assign an IP address to the interface", args: argRequired, argHelp: "IP_ADDR<X.X.X.X>  IP address", run: setAddress(false, true)},
		}},
		quit, ret,
		{name: "shutdown", help: "Shut down the interface", run: func(c *session, in *invocation) { c.withIface(func(f *iface) { f.shutdown = true }) }},
		{name: "undo", help: "Negate a command or set its default", sub: []*command{
			{name: "description", help: "Describe the interface", run: cmdNoDescription},
			{name: "shutdown", help: "Shut down the interface", run: func(c *session, in *invocation) { c.withIface(func(f *iface) { f.shutdown = false }) }},
		}},
	}
	return d
}

func huaweiQuit(c *session, in *invocation) {
	switch c.mode {
	case modeConfigIf:
		c.mode, c.curIf = modeConfig, ""
	case modeConfig:
		c.mode = modeExec
	default:
		c.line("  Configuration console exit, please retry to log on")
		c.closing = true
	}
}

func huaweiScreenLength(c *session, in *invocation) {
	if len(in.args) < 2 {
		c.incomplete(in)
		return
	}
	if len(in.args) > 2 || !strings.HasPrefix("temporary", strings.ToLower(in.args[1])) {
		c.invalidArg(in, 1)
		return
	}
	cmdTermLength(c, &invocation{args: in.args[:1], pos: in.pos[:1], caretBase: in.caretBase})
	if c.pageLen == 0 {
		c.line("Info: The configuration takes effect on the current user terminal interface only.")
	}
}

func huaweiYN(c *session, question string) bool {
	a, err := c.ask(question)
	return err == nil && a != "" && a[0] == 'y'
}

func huaweiSave(c *session, in *invocation) {
	c.line("The current configuration will be written to the device.")
	if !huaweiYN(c, "Are you sure to continue?[Y/N]:") {
		return
	}
	c.emit([]string{"Now saving the current configuration to the slot 0.", "Info: Save the configuration successfully."})
}

func huaweiReboot(c *session, in *invocation) {
	c.line("Info: The system is comparing the configuration, please wait.")
	if !huaweiYN(c, "System will reboot! Continue?[Y/N]:") {
		return
	}
	c.emit([]string{"Info: system is rebooting ,please wait..."})
	c.closing = true
}

func huaweiVersion(c *session, in *invocation) {
	m := int64(c.s.uptime().Minutes())
	c.emit([]string{
		"DevSim VRP-like (R) software, Version 8.180 (DSR6800 V200R005C10-sim)",
		"Copyright (C) 2024-2025 the termhost authors",
		fmt.Sprintf("DevSim DSR6800 uptime is %d days, %d hours, %d minutes", m/(24*60), m/60%24, m%60),
		"",
		"DSR6800-48T4Q-SIM(Master) 1 : uptime is " + fmt.Sprintf("%d days, %d hours, %d minutes", m/(24*60), m/60%24, m%60),
		"        StartupTime 2025/03/06   05:13:00",
		"Memory    Size    : 2048 M bytes",
		"Flash     Size    : 1024 M bytes",
		"DSR6800-48T4Q-SIM version information",
		"1. PCB    Version : CEM48T4QP01    VER B",
		"2. MAB    Version : 1",
		"3. Board  Type    : DSR6800-48T4Q-SIM",
	})
}

func huaweiDisplayInterface(c *session, in *invocation) {
	_, ifs := c.snapshotIfaces()
	if len(in.args) == 1 && strings.HasPrefix("brief", strings.ToLower(in.args[0])) {
		l := []string{
			"PHY: Physical", "*down: administratively down", "(l): loopback", "(s): spoofing",
			"(b): BFD down", "(e): ETHOAM down", "(d): Dampening Suppressed",
			"InUti/OutUti: input utility/output utility",
			"Interface                   PHY   Protocol  InUti OutUti   inErrors  outErrors",
		}
		for _, f := range ifs {
			phy, proto, ut := "up", "up", "0.01%"
			switch {
			case f.shutdown:
				phy, proto, ut = "*down", "down", "0%"
			case !f.carrier:
				phy, proto, ut = "down", "down", "0%"
			case f.loopback:
				proto, ut = "up(s)", "0%"
			}
			l = append(l, fmt.Sprintf("%-27s %-5s %-9s %5s %6s %10d %10d", f.name(), phy, proto, ut, ut, 0, 0))
		}
		c.emit(l)
		return
	}
	c.showIfaces(in, func(f iface) (l []string) {
		add := func(format string, a ...any) { l = append(l, fmt.Sprintf(format, a...)) }
		st := "UP"
		switch {
		case f.shutdown:
			st = "Administratively DOWN"
		case !f.carrier:
			st = "DOWN"
		}
		proto := "UP"
		if !f.up() {
			proto = "DOWN"
		}
		k := f.seed
		inPk, inBy, outPk, outBy := f.counters()
		add("%s current state : %s (ifindex: %d)", f.name(), st, 4+k)
		add("Line protocol current state : %s", proto)
		add("Last line protocol up time : 2025-03-06 05:13:00")
		add("Description: %s", f.desc)
		add("Route Port,The Maximum Transmit Unit is 1500")
		if f.addr.IsValid() {
			add("Internet Address is %s", f.addr)
		} else {
			add("Internet protocol processing : disabled")
		}
		m := strings.ReplaceAll(f.mac(), ".", "-")
		add("IP Sending Frames' Format is PKTFMT_ETHNT_2, Hardware address is %s", m)
		if !f.loopback {
			add("Port Mode: COMMON COPPER, Port Split/Aggregate: -")
			add("Speed: 1000, Loopback: NONE")
			add("Duplex: FULL, Negotiation: ENABLE")
			add("Input Flow-control: DISABLE, Output Flow-control: DISABLE")
			add("Mdi: AUTO, Fec: NONE")
			add("Last physical up time   : 2025-03-06 05:13:00")
			add("Last physical down time : 2025-03-06 05:12:41")
		}
		add("Current system time: %s", c.s.now().Format("2006-01-02 15:04:05"))
		add("Statistics last cleared:never")
		add("    Last 300 seconds input rate: %d bits/sec, %d packets/sec", 2000*k, 3*k)
		add("    Last 300 seconds output rate: %d bits/sec, %d packets/sec", 1000*k, 2*k)
		add("    Input: %d packets, %d bytes", inPk, inBy)
		add("      Unicast: %d, Multicast: %d, Broadcast: %d", inPk, 120*k, 1023*k)
		add("    Output: %d packets, %d bytes", outPk, outBy)
		add("      Unicast: %d, Multicast: %d, Broadcast: 0", outPk, 120*k)
		add("    Input bandwidth utilization  :  0.01%%")
		add("    Output bandwidth utilization :  0.01%%")
		add("")
		return l
	})
}

func huaweiRoutingTable(c *session, in *invocation) {
	rs := c.routes()
	l := []string{
		"Proto: Protocol        Pre: Preference",
		"Route Flags: R - relay, D - download to fib, T - to vpn-instance, B - black hole route",
		"------------------------------------------------------------------------------",
		"Routing Table : _public_",
		fmt.Sprintf("         Destinations : %d       Routes : %d", len(rs), len(rs)),
		"",
		"Destination/Mask    Proto   Pre  Cost        Flags NextHop         Interface",
		"",
	}
	for _, r := range rs {
		proto, pre, flags, nh := "Direct", 0, "D", ifaceAddr(c, r.ifname)
		switch {
		case r.static:
			proto, pre, flags, nh = "Static", 60, "RD", r.via
		case r.local:
			nh = "127.0.0.1"
		}
		l = append(l, fmt.Sprintf("%18s  %-7s %-4d %-11d %-5s %-15s %s", r.prefix, proto, pre, 0, flags, nh, r.ifname))
	}
	c.emit(l)
}

func huaweiCurrentConfig(c *session, in *invocation) {
	host, ifs := c.snapshotIfaces()
	l := []string{"!Software Version V200R005C10-sim", "#", "sysname " + host, "#",
		"aaa", " local-user " + c.s.cfg.Username + " password irreversible-cipher $1c$devsim$c2ltdWxhdGVk$",
		" local-user " + c.s.cfg.Username + " service-type telnet ssh", " local-user " + c.s.cfg.Username + " level 3", "#"}
	for _, f := range ifs {
		l = append(l, "interface "+f.name())
		if f.desc != "" {
			l = append(l, " description "+f.desc)
		}
		if f.addr.IsValid() {
			l = append(l, fmt.Sprintf(" ip address %s %s", f.addr.Addr(), maskString(f.addr.Bits())))
		}
		if f.shutdown {
			l = append(l, " shutdown")
		}
		l = append(l, "#")
	}
	l = append(l, "ip route-static 0.0.0.0 0.0.0.0 10.0.0.2", "#", "user-interface vty 0 4",
		" authentication-mode aaa", " protocol inbound all", "#", "return")
	c.emit(l)
}
