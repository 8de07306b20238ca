package devsim

import (
	"fmt"
	"strings"
	"time"
)

// MikroTik RouterOS-like personality: "[admin@host] > " with menus
// ("[admin@host] /ip address> "), path commands ("/interface print"),
// the "-- [Q quit|D dump|down]" pager and RouterOS error words.

// routeros is the per-session state of the RouterOS personality.
type routeros struct {
	menu []string // the current menu path
}

func (r *routeros) prompt(c *session) string {
	p := "[" + c.loginName() + "@" + c.s.Hostname() + "] "
	if len(r.menu) > 0 {
		p += "/" + strings.Join(r.menu, " ")
	}
	return p + "> "
}

// end does nothing: RouterOS has no configuration mode.
func (r *routeros) end(c *session) {}

func newRouterOS() *profile {
	d := &profile{newState: func() personality { return &routeros{} }, privileged: true,
		pager: "-- [Q quit|D dump|down]", pagerDump: 'd', pagerErase: "\r\x1b[K",
		banner:     "\n",
		userPrompt: "Login: ", passPrompt: "Password: ",
		loginFailed: []string{"Login failed, incorrect username or password", ""},
		loginClosed: []string{"Login failed, incorrect username or password", ""},
		motd: "\n\n" +
			"  RouterOS-like CLI of the termhost device simulator\n" +
			"  RouterOS 7.14.3-sim (termhost devsim)\n\n" +
			"Press F1 for help\n\n",
	}
	printCmd := func(fn func(c *session)) *command {
		return &command{name: "print", help: "Print values of item properties", args: argOptional, argHelp: "without-paging|detail", run: func(c *session, in *invocation) {
			for i, a := range in.args {
				switch {
				case strings.HasPrefix("without-paging", a) && len(a) > 1:
					c.noMore = true
				case strings.HasPrefix("detail", a) && len(a) > 1:
				default:
					routerosErr(c, "expected end of command", in.pos[i])
					return
				}
			}
			fn(c)
		}}
	}
	d.exec = []*command{
		{name: "export", help: "Print or save an export script", run: func(c *session, in *invocation) { routerosExport(c) }},
		{name: "interface", help: "Interface configuration", sub: []*command{
			{name: "ethernet", help: "Ethernet interfaces", sub: []*command{printCmd(routerosInterfaces)}},
			printCmd(routerosInterfaces),
		}},
		{name: "ip", help: "IP options", sub: []*command{
			{name: "address", help: "Address management", sub: []*command{printCmd(routerosAddresses)}},
			{name: "route", help: "Route management", sub: []*command{printCmd(routerosRoutes)}},
		}},
		{name: "log", help: "System logs", sub: []*command{printCmd(routerosLog)}},
		{name: "quit", help: "Quit console", run: func(c *session, in *invocation) { c.line("interrupted"); c.closing = true }},
		{name: "system", help: "System information and utilities", sub: []*command{
			{name: "identity", help: "Router name", sub: []*command{
				printCmd(func(c *session) { c.emit([]string{"  name: " + c.s.Hostname()}) }),
				{name: "set", help: "Change item properties", args: argRequired, argHelp: "name=NAME", run: routerosSetIdentity},
			}},
			{name: "reboot", help: "Reboot the router", run: routerosReboot},
			{name: "resource", help: "System resources", sub: []*command{printCmd(routerosResource)}},
		}},
	}
	return d
}

// routerosErr prints a RouterOS syntax error about column pos (0-based).
func routerosErr(c *session, msg string, pos int) {
	c.line(fmt.Sprintf("%s (line 1 column %d)", msg, pos+1))
}

func routerosTable(c *session, path []string) []*command {
	t := c.pf.exec
	for _, p := range path {
		for _, cmd := range t {
			if cmd.name == p {
				t = cmd.sub
				break
			}
		}
	}
	return t
}

func (r *routeros) run(c *session, line string) {
	toks := tokenize(line)
	if len(toks) == 0 {
		return
	}
	path := append([]string(nil), r.menu...)
	if strings.HasPrefix(toks[0].text, "/") {
		path = nil
		toks[0].text = toks[0].text[1:]
		toks[0].pos++
		if toks[0].text == "" {
			toks = toks[1:]
		}
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.text == ".." {
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			continue
		}
		if t.text == "?" {
			c.emit(c.helpList(routerosTable(c, path), "", false))
			return
		}
		m, amb := c.match(routerosTable(c, path), t.text)
		if amb {
			routerosErr(c, "ambiguous command name "+t.text, t.pos)
			return
		}
		if m == nil {
			routerosErr(c, "bad command name "+t.text, t.pos)
			return
		}
		if len(m.sub) > 0 {
			path = append(path, m.name)
			continue
		}
		in := &invocation{}
		for _, a := range toks[i+1:] {
			in.args = append(in.args, a.text)
			in.pos = append(in.pos, a.pos)
		}
		if len(in.args) > 0 {
			in.rest = line[in.pos[0]:]
			if m.args == argNone {
				routerosErr(c, "expected end of command", in.pos[0])
				return
			}
		} else if m.args == argRequired {
			routerosErr(c, "expected end of command", len(line))
			return
		}
		m.run(c, in)
		return
	}
	r.menu = path
}

func routerosInterfaces(c *session) {
	_, ifs := c.snapshotIfaces()
	l := []string{"Flags: R - RUNNING; X - DISABLED", "Columns: NAME, TYPE, ACTUAL-MTU, L2MTU, MAC-ADDRESS",
		" #    NAME     TYPE       ACTUAL-MTU  L2MTU  MAC-ADDRESS      "}
	for i, f := range ifs {
		flag := " "
		switch {
		case f.shutdown:
			flag = "X"
		case f.up():
			flag = "R"
		}
		if f.desc != "" {
			l = append(l, fmt.Sprintf(" %d    ;;; %s", i, f.desc))
		}
		typ, mtu, l2, mac := "ether", "1500", "1598", strings.ToUpper(f.macColon())
		if f.loopback {
			typ, mtu, l2, mac = "loopback", "65536", "", "00:00:00:00:00:00"
		}
		l = append(l, fmt.Sprintf("%2d  %s %-8s %-10s %10s  %5s  %s", i, flag, f.name(), typ, mtu, l2, mac))
	}
	c.emit(l)
}

func routerosAddresses(c *session) {
	_, ifs := c.snapshotIfaces()
	l := []string{"Flags: X - DISABLED", "Columns: ADDRESS, NETWORK, INTERFACE", "#   ADDRESS            NETWORK       INTERFACE"}
	n := 0
	for _, f := range ifs {
		if !f.addr.IsValid() {
			continue
		}
		flag := " "
		if f.shutdown {
			flag = "X"
		}
		l = append(l, fmt.Sprintf("%d %s %-18s %-13s %s", n, flag, f.addr, f.addr.Masked().Addr(), f.name()))
		n++
	}
	c.emit(l)
}

func routerosRoutes(c *session) {
	l := []string{"Flags: D - DYNAMIC; A - ACTIVE; c - CONNECT, s - STATIC", "Columns: DST-ADDRESS, GATEWAY, DISTANCE",
		"#     DST-ADDRESS      GATEWAY   DISTANCE"}
	n := 0
	for _, r := range c.routes() {
		switch {
		case r.static:
			l = append(l, fmt.Sprintf("%-2d As  %-16s %-9s %8d", n, r.prefix, r.via, 1))
			n++
		case r.connect:
			l = append(l, fmt.Sprintf("   DAc %-16s %-9s %8d", r.prefix, r.ifname, 0))
		}
	}
	c.emit(l)
}

func routerosResource(c *session) {
	up := c.s.uptime()
	m := int64(up.Minutes())
	c.emit([]string{
		fmt.Sprintf("                   uptime: %dw%dd%dh%dm", m/(7*24*60), m/(24*60)%7, m/60%24, m%60),
		"                  version: 7.14.3-sim (stable)",
		"               build-time: 2024-04-17 12:47:58",
		"         factory-software: 7.1",
		"              free-memory: 824.5MiB",
		"             total-memory: 1024.0MiB",
		"                      cpu: QEMU",
		"                cpu-count: 2",
		"            cpu-frequency: 2400MHz",
		"                 cpu-load: 1%",
		"           free-hdd-space: 85.2MiB",
		"          total-hdd-space: 128.0MiB",
		"        architecture-name: x86_64",
		"               board-name: CHR-sim",
		"                 platform: RouterOS-like (termhost devsim)",
	})
}

// routerosLog is a deterministic log of 200 entries (ten pages).
func routerosLog(c *session) {
	_, ifs := c.snapshotIfaces()
	start := DefaultClockStart.Add(-200 * 37 * time.Second)
	var l []string
	for i := 0; i < 200; i++ {
		t := start.Add(time.Duration(i) * 37 * time.Second).Format("2006-01-02 15:04:05")
		f := ifs[i%len(ifs)]
		var msg string
		switch i % 5 {
		case 0:
			msg = fmt.Sprintf("system,info,account user %s logged in from 10.0.0.%d via telnet", c.s.cfg.Username, 2+i%50)
		case 1:
			msg = fmt.Sprintf("interface,info %s link up (speed 1G, full duplex)", f.name())
		case 2:
			msg = fmt.Sprintf("dhcp,info dhcp-client on %s got IP address 10.1.%d.%d", f.name(), i%8, 10+i%200)
		case 3:
			msg = fmt.Sprintf("system,info,account user %s logged out from 10.0.0.%d via telnet", c.s.cfg.Username, 2+i%50)
		default:
			msg = fmt.Sprintf("route,ospf,info OSPF neighbor 10.0.0.2 state change from Loading to Full on %s", f.name())
		}
		l = append(l, " "+t+" "+msg)
	}
	c.emit(l)
}

func routerosExport(c *session) {
	host, ifs := c.snapshotIfaces()
	l := []string{"# 2025-06-02 09:30:00 by RouterOS 7.14.3-sim", "# software id = DSIM-0001", "#", "/interface ethernet"}
	for _, f := range ifs {
		if f.loopback {
			continue
		}
		s := fmt.Sprintf("set [ find default-name=%s ]", f.name())
		if f.desc != "" {
			s += fmt.Sprintf(" comment=%q", f.desc)
		}
		if f.shutdown {
			s += " disabled=yes"
		}
		l = append(l, s)
	}
	l = append(l, "/ip address")
	for _, f := range ifs {
		if f.addr.IsValid() {
			l = append(l, fmt.Sprintf("add address=%s interface=%s network=%s", f.addr, f.name(), f.addr.Masked().Addr()))
		}
	}
	l = append(l, "/ip route", "add disabled=no dst-address=0.0.0.0/0 gateway=10.0.0.2", "/system identity", "set name="+host)
	c.emit(l)
}

func routerosSetIdentity(c *session, in *invocation) {
	v, ok := strings.CutPrefix(in.args[0], "name=")
	if !ok || v == "" || len(in.args) > 1 {
		routerosErr(c, "expected end of command", in.pos[0])
		return
	}
	c.s.mu.Lock()
	c.s.dev.hostname = strings.Trim(v, `"`)
	c.s.mu.Unlock()
}

func routerosReboot(c *session, in *invocation) {
	a, err := c.ask("Reboot, yes? [y/N]: ")
	if err != nil {
		return
	}
	if a == "" || a[0] != 'y' {
		c.line("action cancelled")
		return
	}
	c.line("system will reboot shortly")
	c.closing = true
}
