package devsim

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// This file holds the other members of the IOS family (see iosFamily):
// Cisco NX-OS, Arista EOS and FRRouting's vty. Their command words are the
// vendors' own; the output is written for the simulator.

func newNXOS() *profile {
	ifaceArg := "WORD  Interface name, e.g. Ethernet1/1, eth1/2, loopback0"
	return iosFamily{
		ifaceArg:  ifaceArg,
		doHelp:    "Run an exec command",
		prefixLen: true,
		configure: "Enter configuration commands, one per line. End with CNTL/Z.",
		show: []*command{
			{name: "clock", help: "Display current date", run: showClock},
			{name: "interface", help: "Display interface information", args: argOptional, argHelp: ifaceArg + ", brief", run: nxosShowInterface},
			{name: "ip", help: "Display IP information", sub: []*command{
				{name: "route", help: "Display IPv4 routes", run: nxosShowIPRoute},
			}},
			{name: "running-config", help: "Current operating configuration", run: showRunningFamily("nxos")},
			{name: "version", help: "Show the software version", run: nxosShowVersion},
		},
		exec: []*command{
			copyRunStart("Copy from one file to another", "Copy running configuration", "Copy to the startup configuration", emitter(
				"[########################################] 100%", "Copy complete, now saving to disk (please wait)...", "Copy complete.")),
			{name: "reload", help: "Reboot the entire box", priv: 15, run: nxosReload},
		},
	}.profile(&profile{
		pager: "--More--", privileged: true, noMorePipe: true,
		banner:      "\n{host}: NX-OS-like switch of the termhost device simulator (loopback lab)\n",
		loginHeader: "\nUser Access Verification\n",
		userPrompt:  "{host} login: ",
		loginFailed: []string{"Login incorrect"},
		loginClosed: []string{"Login incorrect"},
		motd:        "\nDevSim NX-OS-like software\nThis is a simulated switch; see https://github.com/termhost/termhost\n",
		errs:        caretErrors("% Invalid command at '^' marker.", "% Incomplete command at '^' marker.", "% Ambiguous command at '^' marker."),
	})
}

// emitter returns a command that prints lines.
func emitter(lines ...string) func(c *session, in *invocation) {
	return func(c *session, in *invocation) { c.emit(lines) }
}

func nxosShowVersion(c *session, in *invocation) {
	host := c.s.Hostname()
	up := c.s.uptime()
	m := int64(up.Minutes())
	c.emit([]string{
		"DevSim NX-OS-like Software",
		"Technical support: https://github.com/termhost/termhost",
		"Copyright (c) 2024-2025, the termhost authors.",
		"",
		"Software",
		"  BIOS: version 07.69",
		"  NXOS: version 10.3(4a)-sim [Maintenance Release]",
		"  NXOS image file is: bootflash:///nxos64-cs.10.3.4a.M.bin",
		"  NXOS compile time:  11/17/2023 12:00:00",
		"",
		"Hardware",
		"  devsim DSN9000 C93180YC-SIM chassis",
		"  Simulated CPU with 24569856 kB of memory.",
		"  Processor Board ID FDO24110SIM",
		"",
		"  Device name: " + host,
		"  bootflash: 53298520 kB",
		"",
		fmt.Sprintf("Kernel uptime is %d day(s), %d hour(s), %d minute(s), 0 second(s)", m/(24*60), m/60%24, m%60),
		"",
		"Last reset",
		"  Reason: Unknown",
	})
}

func nxosShowInterface(c *session, in *invocation) {
	_, ifs := c.snapshotIfaces()
	if len(in.args) == 1 && strings.HasPrefix("brief", strings.ToLower(in.args[0])) {
		l := []string{
			"--------------------------------------------------------------------------------",
			"Ethernet        VLAN    Type Mode   Status  Reason                 Speed     Port",
			"Interface                                                                    Ch #",
			"--------------------------------------------------------------------------------",
		}
		for _, f := range ifs {
			if f.loopback {
				continue
			}
			st, reason := "up", "none"
			switch {
			case f.shutdown:
				st, reason = "down", "Administratively down"
			case !f.carrier:
				st, reason = "down", "Link not connected"
			}
			l = append(l, fmt.Sprintf("%-15s %-7s %-4s %-6s %-7s %-22s %-9s %s", "Eth"+f.num, "--", "eth", "routed", st, reason, "auto(D)", "--"))
		}
		l = append(l, "", "--------------------------------------------------------------------------------",
			"Interface     Status     Description", "--------------------------------------------------------------------------------")
		for _, f := range ifs {
			if f.loopback {
				l = append(l, fmt.Sprintf("%-13s %-10s %s", f.name(), "up", f.desc))
			}
		}
		c.emit(l)
		return
	}
	c.showIfaces(in, func(f iface) (l []string) {
		st := "up"
		if !f.up() {
			st = "down"
		}
		admin := "up"
		if f.shutdown {
			admin = "down"
		}
		reason := ""
		switch {
		case f.shutdown:
			reason = " (Administratively down)"
		case !f.carrier:
			reason = " (Link not connected)"
		}
		l = append(l, fmt.Sprintf("%s is %s%s", f.name(), st, reason))
		if f.loopback {
			l = append(l, "admin state is up,", "  Hardware: Loopback")
		} else {
			l = append(l, fmt.Sprintf("admin state is %s, Dedicated Interface", admin),
				fmt.Sprintf("  Hardware: 100/1000/10000/25000 Ethernet, address: %s (bia %s)", f.mac(), f.mac()))
		}
		l = append(l, familyIfaceBody(c, &f, "nxos")...)
		return l
	})
}

// showIfaces emits body(f) for the interface named by the arguments, or
// for every one.
func (c *session) showIfaces(in *invocation, body func(f iface) []string) {
	_, ifs := c.snapshotIfaces()
	if len(in.args) > 0 {
		c.s.mu.Lock()
		f := c.s.dev.findIface(in.rest)
		c.s.mu.Unlock()
		if f == nil {
			c.invalidArg(in, 0)
			return
		}
		ifs = slices.DeleteFunc(ifs, func(g iface) bool { return g.name() != f.name() })
	}
	var l []string
	for _, f := range ifs {
		l = append(l, body(f)...)
	}
	c.emit(l)
}

// familyIfaceBody is the part of a detailed interface listing after the
// first lines: address, MTU, duplex and counters, worded per vendor.
func familyIfaceBody(c *session, f *iface, v string) []string {
	var l []string
	add := func(format string, a ...any) { l = append(l, fmt.Sprintf(format, a...)) }
	if f.desc != "" {
		add("  Description: %s", f.desc)
	}
	if f.addr.IsValid() {
		switch v {
		case "nxos":
			add("  Internet Address is %s", f.addr)
		case "frr":
			add("  inet %s", f.addr)
		default:
			add("  Internet address is %s", f.addr)
		}
	}
	inPk, inBy, outPk, outBy := f.counters()
	k := f.seed
	switch v {
	case "nxos":
		add("  MTU 1500 bytes, BW 10000000 Kbit , DLY 10 usec")
		add("  reliability 255/255, txload 1/255, rxload 1/255")
		add("  Encapsulation ARPA, medium is broadcast")
		if f.up() && !f.loopback {
			add("  full-duplex, 10 Gb/s, media type is 10G")
		} else if !f.loopback {
			add("  auto-duplex, auto-speed, media type is 10G")
		}
		add("  Last link flapped 12week(s) 3day(s)")
		add("  Last clearing of \"show interface\" counters never")
		add("  %d interface resets", k%3)
		add("  RX")
		add("    %d unicast packets  %d multicast packets  %d broadcast packets", inPk, k*120, k*1023)
		add("    %d input packets  %d bytes", inPk, inBy)
		add("    0 runts  0 giants  0 CRC  0 no buffer")
		add("    0 input error  0 short frame  0 overrun   0 underrun  0 ignored")
		add("    0 watchdog  0 bad etype drop  0 bad proto drop  0 if down drop")
		add("  TX")
		add("    %d unicast packets  %d multicast packets  0 broadcast packets", outPk, k*120)
		add("    %d output packets  %d bytes", outPk, outBy)
		add("    0 output error  0 collision  0 deferred  0 late collision")
		add("    0 lost carrier  0 no carrier  0 babble  0 output discard")
		add("")
	case "eos":
		add("  IP MTU 1500 bytes, BW 1000000 kbit")
		if f.up() && !f.loopback {
			add("  Full-duplex, 1Gb/s, auto negotiation: off, uni-link: n/a")
			add("  Up 12 weeks, 3 days, 4 hours, 17 minutes")
		} else if !f.loopback {
			add("  Unconfigured-duplex, Unconfigured-speed, auto negotiation: off, uni-link: n/a")
			add("  Down 12 weeks, 3 days, 4 hours, 17 minutes")
		}
		add("  Loopback Mode : None")
		add("  %d link status changes since last clear", 2+k%3)
		add("  Last clearing of \"show interface\" counters never")
		add("  5 minutes input rate %d bps (0.0%% with framing overhead), %d packets/sec", 2000*k, 3*k)
		add("  5 minutes output rate %d bps (0.0%% with framing overhead), %d packets/sec", 1000*k, 2*k)
		add("     %d packets input, %d bytes", inPk, inBy)
		add("     Received %d broadcasts, %d multicast", k*1023, k*511)
		add("     0 runts, 0 giants")
		add("     0 input errors, 0 CRC, 0 alignment, 0 symbol, 0 input discards")
		add("     0 PAUSE input")
		add("     %d packets output, %d bytes", outPk, outBy)
		add("     Sent 0 broadcasts, %d multicast", k*120)
		add("     0 output errors, 0 collisions")
		add("     0 late collision, 0 deferred, 0 output discards")
		add("     0 PAUSE output")
	case "frr":
		add("  index %d metric 0 mtu 1500 speed 10000", k+1)
		add("  flags: <UP,BROADCAST,RUNNING,MULTICAST>")
		add("  Type: Ethernet")
		add("  HWaddr: %s", f.macColon())
		add("  Interface Type Other")
		add("  Interface Slave Type None")
		add("  protodown: off ")
		add("  input packets %d, bytes %d, dropped 0, multicast packets %d", inPk, inBy, k*120)
		add("  input errors 0, length 0, overrun 0, CRC 0, frame 0")
		add("  fifo 0, missed 0")
		add("  output packets %d, bytes %d, dropped 0", outPk, outBy)
		add("  output errors 0, aborted 0, carrier 0, fifo 0, heartbeat 0")
		add("  window 0, collisions 0")
		add("  ND advertised reachable time is 0 milliseconds")
		add("  ND advertised retransmit interval is 0 milliseconds")
		add("  ND router advertisements sent: 0 rcvd: 0")
		add("  ND router advertisements are sent every 600 seconds")
		add("  ND router advertisements lifetime tracks ra-interval")
		add("  ND router advertisement default router preference is medium")
		add("  Hosts use stateless autoconfig for addresses.")
		add("")
	}
	return l
}

// routeEntry is one route of the deterministic routing table.
type routeEntry struct {
	prefix  netip.Prefix
	via     string // next hop, "" for connected
	ifname  string
	local   bool // the interface's own /32
	static  bool
	connect bool
}

// routes returns the routing table: a static default via 10.0.0.2 when
// the first interface is up, then the connected and local routes of every
// up interface with an address.
func (c *session) routes() []routeEntry {
	_, ifs := c.snapshotIfaces()
	var r []routeEntry
	if ifs[0].up() {
		r = append(r, routeEntry{prefix: netip.MustParsePrefix("0.0.0.0/0"), via: "10.0.0.2", ifname: ifs[0].name(), static: true})
	}
	for _, f := range ifs {
		if !f.up() || !f.addr.IsValid() {
			continue
		}
		r = append(r, routeEntry{prefix: f.addr.Masked(), ifname: f.name(), connect: true})
		if f.addr.Bits() < 32 {
			r = append(r, routeEntry{prefix: netip.PrefixFrom(f.addr.Addr(), 32), ifname: f.name(), local: true})
		}
	}
	return r
}

func nxosShowIPRoute(c *session, in *invocation) {
	l := []string{
		`IP Route Table for VRF "default"`,
		`'*' denotes best ucast next-hop`,
		`'**' denotes best mcast next-hop`,
		`'[x/y]' denotes [preference/metric]`,
		`'%<string>' in via output denotes VRF <string>`,
		"",
	}
	for _, r := range c.routes() {
		short := strings.Replace(r.ifname, "Ethernet", "Eth", 1)
		switch {
		case r.static:
			l = append(l, r.prefix.String()+", ubest/mbest: 1/0", "    *via "+r.via+", [1/0], 12w3d, static")
		case r.local:
			l = append(l, r.prefix.String()+", ubest/mbest: 1/0, attached", "    *via "+r.prefix.Addr().String()+", "+short+", [0/0], 12w3d, local")
		default:
			l = append(l, r.prefix.String()+", ubest/mbest: 1/0, attached", "    *via "+ifaceAddr(c, r.ifname)+", "+short+", [0/0], 12w3d, direct")
		}
	}
	c.emit(l)
}

func ifaceAddr(c *session, name string) string {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if f := c.s.dev.findIface(name); f != nil && f.addr.IsValid() {
		return f.addr.Addr().String()
	}
	return ""
}

func nxosReload(c *session, in *invocation) {
	if a, err := c.ask("This command will reboot the system. (y/n)?  [n] "); err != nil || a == "" || a[0] != 'y' {
		return
	}
	c.line("")
	c.line("The system is going down for reboot NOW.")
	c.closing = true
}

// showRunningFamily is "show running-config" of NX-OS, EOS and FRR.
func showRunningFamily(v string) func(c *session, in *invocation) {
	return func(c *session, in *invocation) {
		host, ifs := c.snapshotIfaces()
		var l []string
		switch v {
		case "nxos":
			l = append(l, "", "!Command: show running-config", "!Running configuration last done at: Mon Jun  2 09:12:44 2025", "", "version 10.3(4a) Bios:version 07.69",
				"hostname "+host, "feature ospf", "feature interface-vlan", "",
				"username "+c.s.cfg.Username+" password 5 $5$devsim$c2ltdWxhdGVkLW5vdC1hLWhhc2g  role network-admin",
				"ip domain-lookup", "", "ip route 0.0.0.0/0 10.0.0.2", "")
		case "eos":
			l = append(l, "! Command: show running-config", "! device: "+host+" (vEOS-lab, EOS-4.31.2F-sim)", "!",
				"no aaa root", "!", "username "+c.s.cfg.Username+" privilege 15 role network-admin secret sha512 $6$devsim$c2ltdWxhdGVk", "!",
				"hostname "+host, "!", "spanning-tree mode mstp", "!")
		case "frr":
			l = append(l, "Building configuration...", "", "Current configuration:", "!", "frr version 9.1", "frr defaults traditional",
				"hostname "+host, "log syslog informational", "service integrated-vtysh-config", "!", "ip route 0.0.0.0/0 10.0.0.2", "!")
		}
		for _, f := range ifs {
			l = append(l, "interface "+f.name())
			if f.desc != "" {
				l = append(l, "  description "+f.desc)
			}
			if v == "nxos" && !f.loopback {
				l = append(l, "  no switchport")
			}
			if f.addr.IsValid() {
				l = append(l, "  ip address "+f.addr.String())
			}
			if f.shutdown {
				l = append(l, "  shutdown")
			} else if v == "nxos" {
				l = append(l, "  no shutdown")
			}
			if v != "nxos" {
				l = append(l, "!")
			} else {
				l = append(l, "")
			}
		}
		switch v {
		case "eos":
			l = append(l, "ip routing", "!", "ip route 0.0.0.0/0 10.0.0.2", "!", "end")
		case "frr":
			l = append(l, "router ospf", " ospf router-id 10.255.255.1", " network 10.0.0.0/30 area 0", "exit", "!", "line vty", "!", "end")
		default:
			l = append(l, "router ospf 1", "  router-id 10.255.255.1", "line console", "line vty", "")
		}
		c.emit(l)
	}
}

// ---- Arista EOS ----

func newEOS() *profile {
	ifaceArg := "WORD  Interface name, e.g. Ethernet1, et2, Loopback0"
	return iosFamily{
		ifaceArg:  ifaceArg,
		doHelp:    "Run an exec command",
		prefixLen: true,
		show: []*command{
			{name: "clock", help: "System time", run: showClock},
			{name: "interfaces", help: "Details related to interfaces", args: argOptional, argHelp: ifaceArg, run: eosShowInterfaces},
			{name: "ip", help: "Details related to IPv4", sub: []*command{
				{name: "interface", help: "IP interface status and configuration", sub: []*command{
					{name: "brief", help: "IP interface status and configuration summary", run: eosShowIPIntBrief},
				}},
				{name: "route", help: "IP routing table", run: eosShowIPRoute},
			}},
			{name: "running-config", help: "Current operating configuration", priv: 15, run: showRunningFamily("eos")},
			{name: "version", help: "Software and hardware versions", run: eosShowVersion},
		},
		exec: []*command{
			copyRunStart("Copy files from source to destination", "Copy running configuration", "Copy to the startup configuration",
				emitter("Copy completed successfully.")),
			{name: "reload", help: "Reload the system", priv: 15, run: func(c *session, in *invocation) {
				if reloadConfirmed(c) {
					c.lines([]string{"Broadcast message from root@" + c.s.Hostname(), "        (unknown) at 9:30 ...", "", "The system is going down for reboot NOW!"})
					c.closing = true
				}
			}},
		},
	}.profile(&profile{
		pager: " --More-- ", noMorePipe: true,
		pagerErase:  strings.Repeat("\b", 10) + strings.Repeat(" ", 10) + strings.Repeat("\b", 10),
		banner:      "\n{host}: EOS-like switch of the termhost device simulator (loopback lab)\n\n",
		userPrompt:  "{host} login: ",
		loginFailed: []string{"", "Login incorrect"},
		loginClosed: []string{"", "Login incorrect"},
		motd:        "Last login: Mon Jun  2 09:12:44 2025 from 10.0.0.2\n",
		errs:        caretErrors("% Invalid input", "% Incomplete command", "% Ambiguous command"),
	})
}

func eosShowVersion(c *session, in *invocation) {
	c.emit([]string{
		"DevSim EOS-like vEOS-lab",
		"Hardware version: ",
		"Serial number: SN-DEVSIM-0001",
		"Hardware MAC address: 5254.0012.3400",
		"System MAC address: 5254.0012.3400",
		"",
		"Software image version: 4.31.2F-sim",
		"Architecture: x86_64",
		"Internal build version: 4.31.2F-devsim",
		"Image format version: 1.0",
		"",
		"Uptime: " + formatUptime(c.s.uptime()),
		"Total memory: 4002360 kB",
		"Free memory: 2716828 kB",
	})
}

func eosShowInterfaces(c *session, in *invocation) {
	c.showIfaces(in, func(f iface) (l []string) {
		st, proto := f.status()
		tail := " (connected)"
		switch {
		case f.loopback:
			tail = ""
		case f.shutdown:
			tail = " (disabled)"
		case !f.carrier:
			tail = " (notconnect)"
		}
		l = append(l, fmt.Sprintf("%s is %s, line protocol is %s%s", f.name(), st, proto, tail))
		if f.loopback {
			l = append(l, "  Hardware is Loopback")
		} else {
			l = append(l, fmt.Sprintf("  Hardware is Ethernet, address is %s (bia %s)", f.mac(), f.mac()))
		}
		l = append(l, familyIfaceBody(c, &f, "eos")...)
		return l
	})
}

func eosShowIPIntBrief(c *session, in *invocation) {
	_, ifs := c.snapshotIfaces()
	l := []string{
		"                                                                        Address",
		"Interface         IP Address            Status       Protocol        MTU    Owner  ",
		"----------------- --------------------- ------------ -------------- ------ -------",
	}
	for _, f := range ifs {
		st, proto := f.status()
		a := "unassigned"
		if f.addr.IsValid() {
			a = f.addr.String()
		}
		l = append(l, fmt.Sprintf("%-17s %-21s %-12s %-14s %-6s", f.name(), a, st, proto, "1500"))
	}
	c.emit(l)
}

func eosShowIPRoute(c *session, in *invocation) {
	l := []string{
		"",
		"VRF: default",
		"Codes: C - connected, S - static, K - kernel,",
		"       O - OSPF, IA - OSPF inter area, E1 - OSPF external type 1,",
		"       E2 - OSPF external type 2, B - Other BGP Routes,",
		"       B I - iBGP, B E - eBGP, R - RIP, I L1 - IS-IS level 1,",
		"       I L2 - IS-IS level 2, A B - BGP Aggregate, NG - Nexthop Group Static Route",
		"",
	}
	rs := c.routes()
	if len(rs) > 0 && rs[0].static {
		l = append(l, "Gateway of last resort:", " S        0.0.0.0/0 [1/0] via 10.0.0.2, "+rs[0].ifname, "")
	} else {
		l = append(l, "Gateway of last resort is not set", "")
	}
	for _, r := range rs {
		if r.connect {
			l = append(l, fmt.Sprintf(" C        %s is directly connected, %s", r.prefix, r.ifname))
		}
	}
	c.emit(append(l, ""))
}

// ---- FRRouting vty ----

func newFRR() *profile {
	save := emitter("Building Configuration...", "Configuration saved to /etc/frr/frr.conf", "[OK]")
	return iosFamily{
		ifaceArg:  "IFNAME  Interface name, e.g. eth0, lo",
		doHelp:    "Run an exec command",
		prefixLen: true,
		show: []*command{
			{name: "interface", help: "Interface status and configuration", args: argOptional, argHelp: "IFNAME  Interface name, e.g. eth0, lo", run: frrShowInterface},
			{name: "ip", help: "IP information", sub: []*command{
				{name: "route", help: "IP routing table", run: frrShowIPRoute},
			}},
			{name: "running-config", help: "running configuration (same as write terminal)", run: showRunningFamily("frr")},
			{name: "version", help: "Displays zebra version", run: frrShowVersion},
		},
		exec: []*command{
			copyRunStart("Copy from one file to another", "Copy running configuration", "Copy to the startup configuration", save),
			writeMemory("Write configuration to the file (same as write file)", save),
		},
	}.profile(&profile{
		// FRR's vty: " --More-- " and a NUL, wiped with backspaces; pages
		// in rows of the window's width, so a long line may be cut.
		pager:        " --More-- \x00",
		pagerErase:   strings.Repeat("\b", 10) + strings.Repeat(" ", 10) + strings.Repeat("\b", 10),
		pagerRows:    true,
		enableFailed: "% Bad enable passwords, too many failures!",
		banner:       "\nHello, this is FRRouting (version 9.1).\nCopyright 1996-2005 Kunihiro Ishiguro, et al.\n\n",
		loginHeader:  "\nUser Access Verification\n\n",
		loginClosed:  []string{"% Bad passwords, too many failures!"},
		errs: [4][]string{{"% Unknown command: {line}"}, {"% Command incomplete: {line}"}, {"% Ambiguous command: {line}"},
			{"% Unknown command: {line}"}},
	})
}

func frrShowVersion(c *session, in *invocation) {
	c.emit([]string{
		"FRRouting 9.1 (" + c.s.Hostname() + ") on Linux(6.1.0-21-amd64).",
		"Copyright 1996-2005 Kunihiro Ishiguro, et al.",
		"configured with:",
		"    '--prefix=/usr' '--sysconfdir=/etc' '--localstatedir=/var' '--enable-vtysh' '--enable-multipath=64'",
	})
}

func frrShowInterface(c *session, in *invocation) {
	c.showIfaces(in, func(f iface) (l []string) {
		st := "up"
		if !f.up() {
			st = "down"
		}
		l = append(l, fmt.Sprintf("Interface %s is %s, line protocol is %s", f.name(), st, st))
		l = append(l, "  Link ups:       1    last: 2025/03/06 05:13:00.00", "  Link downs:     0    last: (never)", "  vrf: default")
		l = append(l, familyIfaceBody(c, &f, "frr")...)
		return l
	})
}

func frrShowIPRoute(c *session, in *invocation) {
	l := []string{
		"Codes: K - kernel route, C - connected, L - local, S - static,",
		"       R - RIP, O - OSPF, I - IS-IS, B - BGP, E - EIGRP, N - NHRP,",
		"       T - Table, v - VNC, V - VNC-Direct, A - Babel, F - PBR,",
		"       f - OpenFabric, t - Table-Direct,",
		"       > - selected route, * - FIB route, q - queued, r - rejected, b - backup",
		"       t - trapped, o - offload failure",
		"",
	}
	for _, r := range c.routes() {
		switch {
		case r.static:
			l = append(l, fmt.Sprintf("S>* %s [1/0] via %s, %s, weight 1, 12w3d04h", r.prefix, r.via, r.ifname))
		case r.local:
			l = append(l, fmt.Sprintf("L>* %s is directly connected, %s, 12w3d04h", r.prefix, r.ifname))
		default:
			l = append(l, fmt.Sprintf("C>* %s is directly connected, %s, 12w3d04h", r.prefix, r.ifname))
		}
	}
	c.emit(l)
}
