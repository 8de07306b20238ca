package devsim

import (
	"fmt"
	"strconv"
	"strings"
)

// Linux personality: a Debian-like login and a tiny shell with a bash-like
// prompt ("user@host:~$ ", "root@host:~# "), no pager, exit codes.

// linux is the per-session state of the Linux personality.
type linux struct {
	status int // exit status of the last command ($?)
}

func (l *linux) prompt(c *session) string { return c.stdPrompt() }

// end does nothing: the shell has no configuration mode.
func (l *linux) end(c *session) {}

func newLinux() *profile {
	return &profile{newState: func() personality { return &linux{} }, noPager: true,
		banner:     "\nDebian GNU/Linux 12\n\n",
		userPrompt: "{host} login: ", passPrompt: "Password: ",
		loginFailed: []string{"", "Login incorrect"},
		loginClosed: []string{"", "Login incorrect"},
		motd: "Linux {host} 6.1.0-21-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.90-1 (2024-05-03) x86_64\n\n" +
			"This is a simulated host of the termhost device simulator.\n" +
			"Last login: Mon Jun  2 09:12:44 UTC 2025 from 10.0.0.2 on pts/0\n",
		prompts: [4]string{"{user}@{host}:~$ ", "root@{host}:~# "},
	}
}

func (sh *linux) run(c *session, line string) {
	args := strings.Fields(line)
	status := 0
	out := func(l ...string) { c.emit(l) }
	fail := func(code int, l ...string) {
		c.emit(l)
		status = code
	}
	user := c.loginName()
	if c.priv >= 15 {
		user = "root"
	}
	switch args[0] {
	case "echo":
		var w []string
		for _, a := range args[1:] {
			a = strings.ReplaceAll(a, "$?", strconv.Itoa(sh.status))
			a = strings.ReplaceAll(a, "$USER", user)
			a = strings.ReplaceAll(a, "$HOSTNAME", c.s.Hostname())
			w = append(w, strings.Trim(a, `"'`))
		}
		out(strings.Join(w, " "))
	case "true", ":":
	case "false":
		status = 1
	case "exit", "logout":
		if c.priv >= 15 {
			c.line("logout")
			c.setPriv(1)
			break
		}
		c.line("logout")
		c.closing = true
	case "hostname":
		out(c.s.Hostname())
	case "whoami":
		out(user)
	case "id":
		if c.priv >= 15 {
			out("uid=0(root) gid=0(root) groups=0(root)")
		} else {
			out(fmt.Sprintf("uid=1000(%s) gid=1000(%s) groups=1000(%s),27(sudo)", user, user, user))
		}
	case "pwd":
		if c.priv >= 15 {
			out("/root")
		} else {
			out("/home/" + user)
		}
	case "ls":
		out("notes.txt")
	case "uname":
		switch {
		case len(args) == 1 || args[1] == "-s":
			out("Linux")
		case args[1] == "-a":
			out("Linux " + c.s.Hostname() + " 6.1.0-21-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.90-1 (2024-05-03) x86_64 GNU/Linux")
		case args[1] == "-r":
			out("6.1.0-21-amd64")
		case args[1] == "-n":
			out(c.s.Hostname())
		default:
			fail(1, "uname: invalid option -- '"+strings.TrimLeft(args[1], "-")+"'", "Try 'uname --help' for more information.")
		}
	case "cat":
		if len(args) == 2 && args[1] == "/etc/os-release" {
			out(`PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"`, `NAME="Debian GNU/Linux"`, `VERSION_ID="12"`,
				`VERSION="12 (bookworm)"`, "VERSION_CODENAME=bookworm", "ID=debian")
		} else if len(args) == 2 && args[1] == "notes.txt" {
			out("lab notes: the uplink is ether1/eth0")
		} else if len(args) > 1 {
			fail(1, "cat: "+args[1]+": No such file or directory")
		}
	case "seq":
		linuxSeq(c, args[1:], &status)
	case "ip":
		linuxIP(c, args[1:], &status)
	case "rm":
		if len(args) == 3 && args[1] == "-i" {
			ans, err := c.readLine("rm: remove regular file '"+args[2]+"'? ", true, true)
			if err == nil && strings.HasPrefix(strings.ToLower(strings.TrimSpace(ans)), "y") && args[2] != "notes.txt" {
				fail(1, "rm: cannot remove '"+args[2]+"': No such file or directory")
			}
			break
		}
		fail(1, "rm: missing operand")
	case "su":
		pw, err := c.readLine("Password: ", false, true)
		if err != nil {
			break
		}
		if pw != c.s.cfg.EnableSecret {
			fail(1, "su: Authentication failure")
			break
		}
		c.setPriv(15)
	case "sudo":
		if c.priv >= 15 || len(args) < 2 {
			if len(args) < 2 {
				fail(1, "usage: sudo -h | -K | -k | -V")
			}
			break
		}
		ok := false
		for try := 0; try < 3 && !ok; try++ {
			pw, err := c.readLine("[sudo] password for "+user+": ", false, true)
			if err != nil {
				return
			}
			if ok = pw == c.s.cfg.Password; !ok && try < 2 {
				c.line("Sorry, try again.")
			}
		}
		if !ok {
			fail(1, "sudo: 3 incorrect password attempts")
			break
		}
		if args[1] == "-i" || args[1] == "su" || args[1] == "-s" {
			c.setPriv(15)
			break
		}
		saved := c.priv
		c.setPriv(15)
		sh.run(c, strings.Join(args[1:], " "))
		c.setPriv(saved)
		return
	case "reboot":
		if c.priv < 15 {
			fail(1, "reboot: must be superuser.")
			break
		}
		c.emit([]string{"", "Broadcast message from root@" + c.s.Hostname() + " on pts/0 (Mon 2025-06-02 09:30:00 UTC):", "",
			"The system will reboot now!", ""})
		c.closing = true
	default:
		fail(127, "sh: "+args[0]+": not found")
	}
	sh.status = status
}

func linuxSeq(c *session, args []string, status *int) {
	lo, hi := 1, 0
	var err error
	switch len(args) {
	case 1:
		hi, err = strconv.Atoi(args[0])
	case 2:
		lo, err = strconv.Atoi(args[0])
		if err == nil {
			hi, err = strconv.Atoi(args[1])
		}
	default:
		c.emit([]string{"seq: missing operand"})
		*status = 1
		return
	}
	if err != nil || hi-lo > 1000000 {
		c.emit([]string{"seq: invalid argument"})
		*status = 1
		return
	}
	var l []string
	for i := lo; i <= hi; i++ {
		l = append(l, strconv.Itoa(i))
	}
	c.emit(l)
}

func linuxIP(c *session, args []string, status *int) {
	obj := ""
	if len(args) > 0 {
		obj = args[0]
	}
	_, ifs := c.snapshotIfaces()
	switch {
	case obj != "" && strings.HasPrefix("address", obj), obj == "a":
		var l []string
		l = append(l, "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000",
			"    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00",
			"    inet 127.0.0.1/8 scope host lo", "       valid_lft forever preferred_lft forever")
		n := 2
		for _, f := range ifs {
			if f.loopback {
				l = append(l, "    inet "+f.addr.String()+" scope global lo", "       valid_lft forever preferred_lft forever")
				continue
			}
			flags, state := "<BROADCAST,MULTICAST,UP,LOWER_UP>", "UP"
			switch {
			case f.shutdown:
				flags, state = "<BROADCAST,MULTICAST>", "DOWN"
			case !f.carrier:
				flags, state = "<NO-CARRIER,BROADCAST,MULTICAST,UP>", "DOWN"
			}
			l = append(l, fmt.Sprintf("%d: %s: %s mtu 1500 qdisc fq_codel state %s group default qlen 1000", n, f.name(), flags, state),
				"    link/ether "+f.macColon()+" brd ff:ff:ff:ff:ff:ff",
				fmt.Sprintf("    altname enp0s%d", 2+n))
			if f.addr.IsValid() {
				l = append(l, fmt.Sprintf("    inet %s brd %s scope global %s", f.addr, broadcast(f), f.name()),
					"       valid_lft forever preferred_lft forever")
			}
			n++
		}
		c.emit(l)
	case obj != "" && (strings.HasPrefix("route", obj) || obj == "r"):
		var l []string
		for _, r := range c.routes() {
			switch {
			case r.static:
				l = append(l, "default via "+r.via+" dev "+r.ifname+" proto static")
			case r.connect && !strings.HasPrefix(r.ifname, "lo"):
				l = append(l, fmt.Sprintf("%s dev %s proto kernel scope link src %s", r.prefix, r.ifname, ifaceAddr(c, r.ifname)))
			}
		}
		c.emit(l)
	default:
		c.emit([]string{"Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }", "where  OBJECT := { address | route | link }"})
		*status = 255
	}
}

func broadcast(f iface) string {
	a := f.addr.Masked().Addr().As4()
	bits := f.addr.Bits()
	for i := bits; i < 32; i++ {
		a[i/8] |= 0x80 >> (i % 8)
	}
	return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3])
}
