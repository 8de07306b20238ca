package devsim

import (
	"fmt"
	"strings"
	"time"
)

// --- show commands ---

func showClock(c *session, in *invocation) {
	c.emit([]string{c.s.now().Format("15:04:05.000 MST Mon Jan 2 2006")})
}

func showHistory(c *session, in *invocation) {
	var l []string
	for _, h := range c.history {
		l = append(l, "  "+h)
	}
	c.emit(l)
}

func showPrivilege(c *session, in *invocation) {
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

func showVersion(c *session, in *invocation) {
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

func showInterfaces(c *session, in *invocation) {
	c.showIfaces(in, func(f iface) []string { return c.interfaceLines(&f) })
}

func (c *session) interfaceLines(f *iface) []string {
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
func (c *session) statusWord(s string) string {
	if s == "up" {
		return c.color(ansiGreen, s)
	}
	return c.color(ansiRed, s)
}

func showIPIntBrief(c *session, in *invocation) {
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

func showIPRoute(c *session, in *invocation) {
	l := []string{
		"Codes: L - local, C - connected, S - static, R - RIP, M - mobile, B - BGP",
		"       D - EIGRP, EX - EIGRP external, O - OSPF, IA - OSPF inter area",
		"       N1 - OSPF NSSA external type 1, N2 - OSPF NSSA external type 2",
		"       E1 - OSPF external type 1, E2 - OSPF external type 2",
		"       i - IS-IS, su - IS-IS summary, L1 - IS-IS level-1, L2 - IS-IS level-2",
		"       * - candidate default, U - per-user static route, o - ODR",
		"",
	}
	rs := c.routes()
	if len(rs) > 0 && rs[0].static {
		l = append(l, "Gateway of last resort is 10.0.0.2 to network 0.0.0.0", "")
	} else {
		l = append(l, "Gateway of last resort is not set", "")
	}
	for _, r := range rs {
		switch {
		case r.static:
			l = append(l, "S*    0.0.0.0/0 [1/0] via 10.0.0.2")
		case r.local:
			l = append(l, fmt.Sprintf("L     %s is directly connected, %s", r.prefix, r.ifname))
		default:
			l = append(l, fmt.Sprintf("C     %s is directly connected, %s", r.prefix, r.ifname))
		}
	}
	c.emit(l)
}

func showUsers(c *session, in *invocation) {
	l := []string{"    Line       User       Host(s)              Idle       Location"}
	for _, o := range c.s.liveConns() {
		mark, idle := " ", "00:00:00"
		user, d := o.who()
		if o == c.conn {
			mark = "*"
		} else {
			idle = fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
		}
		line := fmt.Sprintf("%s%3d vty %d", mark, o.id+1, o.id-1)
		l = append(l, fmt.Sprintf("%-15s%-11s%-21s%-11s%s", line, user, "idle", idle, o.remoteIP()))
	}
	l = append(l, "", "  Interface    User               Mode         Idle     Peer Address")
	c.emit(l)
}

func showRunning(c *session, in *invocation) {
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

// showLogging prints a deterministic buffer of Config.LogBuffer console
// messages (200 by default, about ten pages), for benchmarks.
func showLogging(c *session, in *invocation) {
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
