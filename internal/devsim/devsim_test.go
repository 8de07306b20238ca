package devsim

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestListenRefusesNonLoopback(t *testing.T) {
	for _, a := range []string{"0.0.0.0:0", ":0", "10.1.2.3:23", "[::]:0", "example.com:23", "nonsense"} {
		s, err := Listen(a, Config{})
		if err == nil {
			s.Close()
			t.Errorf("Listen(%q) succeeded", a)
		}
	}
	for _, a := range []string{"127.0.0.1:0", "localhost:0"} {
		s, err := Listen(a, Config{})
		if err != nil {
			t.Errorf("Listen(%q): %v", a, err)
			continue
		}
		s.Close()
	}
}

func TestLoginNegotiationAndShowVersion(t *testing.T) {
	s := listen(t, Config{})
	c := dial(t, s.Addr())
	banner := c.expect("Username: ")
	if !strings.Contains(banner, "edge-r1 - termhost device simulator") || !strings.Contains(banner, "\x1b[") {
		t.Errorf("banner: %q", banner)
	}
	if !strings.Contains(banner, "\r\nUser Access Verification\r\n\r\nUsername: ") {
		t.Errorf("login header: %q", banner)
	}
	c.send("admin\r\n")
	if got := c.expect("Password: "); got != "admin\r\nPassword: " {
		t.Errorf("username echo: %q", got)
	}
	c.send("termhost\r\n")
	if got := c.expect("edge-r1>"); got != "\r\nedge-r1>" {
		t.Errorf("password must not be echoed: %q", got)
	}

	ss := s.Sessions()
	if len(ss) != 1 {
		t.Fatalf("sessions: %+v", ss)
	}
	si := ss[0]
	if si.TermType != "XTERM-256COLOR" || si.Width != 120 || si.Height != 40 || si.NAWSUpdates != 1 {
		t.Errorf("ttype/naws: %+v", si)
	}
	if !slices.Equal(si.Local, []string{"ECHO", "SGA"}) || !slices.Equal(si.Remote, []string{"NAWS", "NEW-ENVIRON", "TTYPE"}) {
		t.Errorf("options: local %v remote %v", si.Local, si.Remote)
	}
	if si.Env["USER"] != "tester" || si.Env["LANG"] != "C.UTF-8" {
		t.Errorf("env: %v", si.Env)
	}
	if !si.LoggedIn || si.User != "admin" || si.Privileged {
		t.Errorf("login state: %+v", si)
	}

	out := c.run("show version", "edge-r1>")
	for _, want := range []string{
		"show version\r\n",
		"\r\nedge-r1 uptime is 12 weeks, 3 days, 4 hours, 17 minutes\r\n",
		"Version 15.9(3)M4-sim",
		"4 Gigabit Ethernet interfaces\r\n",
		"Configuration register is 0x2102\r\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show version lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--More--") {
		t.Errorf("show version should fit one page")
	}
	if out2 := c.run("sh ver", "edge-r1>"); strings.TrimPrefix(out2, "sh ver") != strings.TrimPrefix(out, "show version") {
		t.Errorf("abbreviation differs:\n%q\n%q", out, out2)
	}

	// Window size updates are followed.
	c.naws(200, 255)
	waitFor(t, "NAWS update", func() bool { return s.Sessions()[0].NAWSUpdates == 2 })
	if si := s.Sessions()[0]; si.Width != 200 || si.Height != 255 {
		t.Errorf("NAWS with doubled 0xFF: %dx%d", si.Width, si.Height)
	}

	c.send("exit\r\n")
	if got := c.expectEOF(); !strings.Contains(got, "Goodbye from edge-r1.") {
		t.Errorf("exit: %q", got)
	}
	waitFor(t, "session removal", func() bool { return len(s.Sessions()) == 0 })
}

func TestPaging(t *testing.T) {
	s := listen(t, Config{PageLines: 10, NoColor: true})
	c := dial(t, s.Addr())
	c.login()
	c.send("show interfaces\r\n")
	first := c.expect(" --More-- ")
	lines := strings.Split(strings.TrimPrefix(first, "show interfaces\r\n"), "\r\n")
	if len(lines) != 11 || lines[10] != " --More-- " {
		t.Fatalf("first page has %d lines: %q", len(lines), first)
	}
	if lines[0] != "GigabitEthernet0/0 is up, line protocol is up" {
		t.Errorf("first line %q", lines[0])
	}
	erase := "\r" + strings.Repeat(" ", len(" --More-- ")) + "\r"

	c.send(" ") // next page
	page2 := c.expect(" --More-- ")
	if !strings.HasPrefix(page2, erase) || strings.Count(page2, "\r\n") != 10 {
		t.Errorf("second page: %q", page2)
	}
	c.send("\r\n") // one more line
	one := c.expect(" --More-- ")
	if !strings.HasPrefix(one, erase) || strings.Count(one, "\r\n") != 1 {
		t.Errorf("one line: %q", one)
	}
	c.send("q")
	if got := c.expect("edge-r1>"); got != erase+"edge-r1>" {
		t.Errorf("quit pager: %q", got)
	}

	// terminal length 0 disables paging; the full output is long.
	c.run("terminal length 0", "edge-r1>")
	out := c.run("show interfaces", "edge-r1>")
	if strings.Contains(out, "--More--") {
		t.Errorf("paging after terminal length 0")
	}
	if n := strings.Count(out, "\r\n"); n < 60 {
		t.Errorf("show interfaces has only %d lines", n)
	}
	for _, w := range []string{"Loopback0 is up, line protocol is up", "GigabitEthernet0/2 is administratively down, line protocol is down", "GigabitEthernet0/3 is down, line protocol is down"} {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q", w)
		}
	}
	// Paging the whole thing with spaces yields the same text.
	c.run("term len 7", "edge-r1>")
	c.send("show interfaces\r\n")
	var paged strings.Builder
	for {
		got := c.expectAny(" --More-- ", "\r\nedge-r1>")
		paged.WriteString(got)
		if strings.HasSuffix(got, "edge-r1>") {
			break
		}
		c.send(" ")
	}
	clean := strings.ReplaceAll(strings.ReplaceAll(paged.String(), " --More-- ", ""), erase, "")
	clean = strings.TrimSuffix(clean, "edge-r1>")
	if clean != out {
		t.Errorf("paged output differs from unpaged:\n%q\n%q", clean, out)
	}
}

// expectAny waits for the first of several strings.
func (c *tclient) expectAny(ss ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		rest := c.unread()
		best := -1
		for _, s := range ss {
			if i := strings.Index(rest, s); i >= 0 && (best < 0 || i+len(s) < best) {
				best = i + len(s)
			}
		}
		if best >= 0 {
			c.mu.Lock()
			c.mark += best
			c.mu.Unlock()
			return rest[:best]
		}
		time.Sleep(2 * time.Millisecond)
	}
	c.t.Fatalf("timeout waiting for %q; unread %q", ss, c.unread())
	return ""
}

func TestEnableAndRunningConfig(t *testing.T) {
	s := listen(t, Config{})
	c := dial(t, s.Addr())
	c.login()
	out := c.run("show running-config", "edge-r1>")
	if !strings.Contains(out, "% Invalid input detected at '^' marker.") {
		t.Errorf("running-config must need enable: %q", out)
	}
	c.send("enable\r\n")
	c.expect("Password: ")
	c.send("wrong\r\n")
	c.expect("Password: ")
	c.send("termhost\r\n")
	if got := c.expect("edge-r1#"); got != "\r\nedge-r1#" {
		t.Errorf("enable: %q", got)
	}
	if !s.Sessions()[0].Privileged {
		t.Errorf("session not privileged")
	}
	c.run("terminal length 0", "edge-r1#")
	out = c.run("sh run", "edge-r1#")
	for _, w := range []string{"Building configuration...", "\r\nhostname edge-r1\r\n", "interface GigabitEthernet0/0\r\n description uplink to core-sw1\r\n ip address 10.0.0.1 255.255.255.252\r\n", "\r\nend\r\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("running-config lacks %q", w)
		}
	}
	if strings.Contains(out, "termhost") && strings.Contains(out, "secret termhost") {
		t.Errorf("password leaked")
	}
	c.run("disable", "edge-r1>")

	// Three wrong enable passwords.
	c.send("enable\r\n")
	for i := 0; i < 3; i++ {
		c.expect("Password: ")
		c.send("nope\r\n")
	}
	if got := c.expect("edge-r1>"); !strings.Contains(got, "% Bad secrets") {
		t.Errorf("bad enable: %q", got)
	}
}

func TestWrongPassword(t *testing.T) {
	s := listen(t, Config{NoBanner: true})
	c := dial(t, s.Addr())
	c.expect("Username: ")
	c.send("admin\r\n")
	c.expect("Password: ")
	c.send("guess\r\n")
	if got := c.expect("Username: "); got != "\r\n% Login invalid\r\n\r\nUsername: " {
		t.Errorf("invalid login: %q", got)
	}
	c.send("admin\r\n")
	c.expect("Password: ")
	c.send("termhost\r\n")
	c.expect("edge-r1>")

	// Three failures close the connection.
	c2 := dial(t, s.Addr())
	for i := 0; i < 3; i++ {
		c2.expect("Username: ")
		c2.send("root\r\n")
		c2.expect("Password: ")
		c2.send("root\r\n")
	}
	if got := c2.expectEOF(); !strings.Contains(got, "% Login invalid") || !strings.Contains(got, "closing connection") {
		t.Errorf("after 3 failures: %q", got)
	}
}

func TestNoLoginAndEcho(t *testing.T) {
	s := listen(t, Config{NoLogin: true, Hostname: "lab-sw2", Banner: "Welcome\n"})
	c := dial(t, s.Addr())
	if got := c.expect("lab-sw2>"); got != "Welcome\r\nlab-sw2>" {
		t.Errorf("start: %q", got)
	}
	v := fmt.Sprint(6 * 7)
	if got := c.run("echo answer="+v+"  (spaces kept)", "lab-sw2>"); got != "echo answer=42  (spaces kept)\r\nanswer=42  (spaces kept)\r\n" {
		t.Errorf("echo: %q", got)
	}
	if got := c.run("echo \xff\xfe", "lab-sw2>"); got != "echo \xff\xfe\r\n\xff\xfe\r\n" {
		t.Errorf("0xFF round trip: %q", got)
	}
	// Line editing: backspace and DEL.
	if got := c.run("echo abX\bc\x7f\x7fd", "lab-sw2>"); !strings.HasSuffix(got, "\r\nad\r\n") {
		t.Errorf("editing: %q", got)
	}
	// Arrow keys are ignored.
	if got := c.run("echo x\x1b[Ay", "lab-sw2>"); !strings.HasSuffix(got, "\r\nxy\r\n") {
		t.Errorf("escape sequence: %q", got)
	}
}

func TestInvalidInput(t *testing.T) {
	s := listen(t, Config{NoLogin: true, NoBanner: true})
	c := dial(t, s.Addr())
	c.expect("edge-r1>")
	got := c.run("show foo", "edge-r1>")
	want := "show foo\r\n" + strings.Repeat(" ", len("edge-r1>show ")) + "^\r\n% Invalid input detected at '^' marker.\r\n\r\n"
	if got != want {
		t.Errorf("invalid:\n%q\n%q", got, want)
	}
	if got := c.run("frobnicate", "edge-r1>"); !strings.Contains(got, "\r\n        ^\r\n% Invalid input") {
		t.Errorf("unknown command: %q", got)
	}
	if got := c.run("sh i", "edge-r1>"); !strings.Contains(got, `% Ambiguous command:  "sh i"`) {
		t.Errorf("ambiguous: %q", got)
	}
	if got := c.run("show", "edge-r1>"); !strings.Contains(got, "% Incomplete command.") {
		t.Errorf("incomplete: %q", got)
	}
	if got := c.run("show version extra", "edge-r1>"); !strings.Contains(got, strings.Repeat(" ", len("edge-r1>show version "))+"^") {
		t.Errorf("extra arg: %q", got)
	}
	if got := c.run("?", "edge-r1>"); !strings.Contains(got, "Exec commands:") || !strings.Contains(got, "  show             Show running system information") || strings.Contains(got, "reload") {
		t.Errorf("help: %q", got)
	}
	if got := c.run("show ?", "edge-r1>"); !strings.Contains(got, "  version          System hardware and software status") {
		t.Errorf("show ?: %q", got)
	}
	if got := c.run("ping ?", "edge-r1>"); !strings.Contains(got, "WORD  Ping destination") {
		t.Errorf("ping ?: %q", got)
	}
}

func TestShowCommands(t *testing.T) {
	s := listen(t, Config{NoLogin: true, NoBanner: true})
	c := dial(t, s.Addr())
	c.expect("edge-r1>")
	brief := c.run("show ip interface brief", "edge-r1>")
	for _, w := range []string{
		"Interface              IP-Address      OK? Method Status                Protocol",
		"GigabitEthernet0/0     10.0.0.1        YES NVRAM  \x1b[32mup\x1b[0m                    \x1b[32mup\x1b[0m",
		"GigabitEthernet0/2     172.16.20.1     YES NVRAM  \x1b[31madministratively down\x1b[0m \x1b[31mdown\x1b[0m",
		"GigabitEthernet0/3     unassigned      YES NVRAM  \x1b[31mdown\x1b[0m",
	} {
		if !strings.Contains(brief, w) {
			t.Errorf("brief lacks %q:\n%s", w, brief)
		}
	}
	if got := c.run("sh ip int br", "edge-r1>"); strings.TrimPrefix(got, "sh ip int br") != strings.TrimPrefix(brief, "show ip interface brief") {
		t.Errorf("abbreviated brief differs")
	}
	if got := c.run("show clock", "edge-r1>"); !strings.Contains(got, "09:30:0") || !strings.Contains(got, "UTC Mon Jun 2 2025") {
		t.Errorf("clock: %q", got)
	}
	if got := c.run("show users", "edge-r1>"); !strings.Contains(got, "*  2 vty 0") || !strings.Contains(got, "127.0.0.1") {
		t.Errorf("users: %q", got)
	}
	if got := c.run("show ip route", "edge-r1>"); !strings.Contains(got, "S*    0.0.0.0/0 [1/0] via 10.0.0.2") || !strings.Contains(got, "C     192.168.10.0/24 is directly connected, GigabitEthernet0/1") {
		t.Errorf("route: %q", got)
	}
	got := c.run("ping core-sw1", "edge-r1>")
	if !strings.Contains(got, "Sending 5, 100-byte ICMP Echos to 10.0.0.2, timeout is 2 seconds:\r\n!!!!!\r\nSuccess rate is 100 percent (5/5)") {
		t.Errorf("ping: %q", got)
	}
	if again := c.run("ping core-sw1", "edge-r1>"); again != got {
		t.Errorf("ping not deterministic")
	}
	if got := c.run("ping 203.0.113.9", "edge-r1>"); !strings.Contains(got, ".....\r\nSuccess rate is 0 percent (0/5)") {
		t.Errorf("unreachable ping: %q", got)
	}
	if got := c.run("ping nowhere", "edge-r1>"); !strings.Contains(got, "% Unrecognized host") {
		t.Errorf("unknown host: %q", got)
	}
	if got := c.run("show history", "edge-r1>"); !strings.Contains(got, "  ping nowhere\r\n") {
		t.Errorf("history: %q", got)
	}
	if got := c.run("help", "edge-r1>"); !strings.Contains(got, "  terminal         Set terminal line parameters") {
		t.Errorf("help: %q", got)
	}
}

func TestConfigMode(t *testing.T) {
	s := listen(t, Config{NoBanner: true, NoColor: true})
	c := dial(t, s.Addr())
	c.login()
	c.send("enable\r\n")
	c.expect("Password: ")
	c.send("termhost\r\n")
	c.expect("edge-r1#")
	if got := c.run("conf t", "edge-r1(config)#"); !strings.Contains(got, "End with CNTL/Z.") {
		t.Errorf("conf t: %q", got)
	}
	c.run("interface gi0/2", "edge-r1(config-if)#")
	c.run("description lab uplink", "edge-r1(config-if)#")
	if got := c.run("no shutdown", "edge-r1(config-if)#"); !strings.Contains(got, "%LINK-3-UPDOWN: Interface GigabitEthernet0/2, changed state to up") {
		t.Errorf("no shut: %q", got)
	}
	if got := c.run("do show ip interface brief", "edge-r1(config-if)#"); !strings.Contains(got, "GigabitEthernet0/2     172.16.20.1     YES NVRAM  up                    up") {
		t.Errorf("do show: %q", got)
	}
	if got := c.run("do show bogus", "edge-r1(config-if)#"); !strings.Contains(got, "\r\n"+strings.Repeat(" ", len("edge-r1(config-if)#do show "))+"^\r\n") {
		t.Errorf("do caret: %q", got)
	}
	c.run("exit", "edge-r1(config)#")
	c.run("hostname core-r9", "core-r9(config)#")
	c.send("\x1a")
	if got := c.expect("core-r9#"); !strings.Contains(got, "^Z\r\n") || !strings.Contains(got, "%SYS-5-CONFIG_I: Configured from console by admin on vty0 (127.0.0.1)") {
		t.Errorf("ctrl-z: %q", got)
	}
	if s.Hostname() != "core-r9" {
		t.Errorf("hostname %q", s.Hostname())
	}
	c.run("terminal length 0", "core-r9#")
	if got := c.run("show running-config", "core-r9#"); !strings.Contains(got, "interface GigabitEthernet0/2\r\n description lab uplink\r\n ip address 172.16.20.1 255.255.255.0\r\n duplex") {
		t.Errorf("config not applied: %q", got)
	}
	// A second session sees the shared device state.
	c2 := dial(t, s.Addr())
	c2.expect("Username: ")
	c2.send("admin\r\ntermhost\r\n")
	c2.expect("core-r9>")
}

func TestInterrupt(t *testing.T) {
	s := listen(t, Config{NoLogin: true, NoBanner: true, PageLines: 5})
	c := dial(t, s.Addr())
	c.expect("edge-r1>")
	// IP at the pager aborts the output.
	c.send("show interfaces\r\n")
	c.expect(" --More-- ")
	c.cmd(cmdIP)
	erase := "\r" + strings.Repeat(" ", len(" --More-- ")) + "\r"
	if got := c.expect("edge-r1>"); got != erase+"^C\r\nedge-r1>" {
		t.Errorf("IP at pager: %q", got)
	}
	// IP at the prompt discards the line being typed.
	c.send("show ver")
	c.cmd(cmdIP)
	if got := c.expect("edge-r1>"); got != "show ver^C\r\nedge-r1>" {
		t.Errorf("IP at prompt: %q", got)
	}
	// ^C as a plain byte works the same.
	c.send("echo x\x03")
	if got := c.expect("edge-r1>"); got != "echo x^C\r\nedge-r1>" {
		t.Errorf("^C at prompt: %q", got)
	}
	if got := c.run("echo still alive", "edge-r1>"); !strings.Contains(got, "\r\nstill alive\r\n") {
		t.Errorf("after interrupts: %q", got)
	}
	// IP arriving with a command aborts its output early.
	c.run("terminal length 0", "edge-r1>")
	c.write(append([]byte("show interfaces\r\n"), cmdIAC, cmdIP))
	got := c.expect("^C\r\nedge-r1>")
	if strings.Count(got, "edge-r1>") != 1 || !strings.HasPrefix(got, "show interfaces\r\n") {
		t.Errorf("abort: %q", got)
	}
	if si := s.Sessions()[0]; si.IP != 3 {
		t.Errorf("IP count %d", si.IP)
	}
}

func TestAYTAndBreak(t *testing.T) {
	s := listen(t, Config{NoLogin: true, NoBanner: true})
	c := dial(t, s.Addr())
	c.expect("edge-r1>")
	c.cmd(cmdAYT)
	if got := c.expect("]\r\n"); got != "\r\n[edge-r1: yes]\r\n" {
		t.Errorf("AYT: %q", got)
	}
	c.cmd(cmdBRK)
	c.cmd(cmdNOP)
	waitFor(t, "BRK count", func() bool { si := s.Sessions()[0]; return si.BRK == 1 && si.AYT == 1 })
	if got := c.run("echo ok", "edge-r1>"); got != "echo ok\r\nok\r\n" {
		t.Errorf("after AYT: %q", got)
	}
}

func TestNoNegotiationLoop(t *testing.T) {
	s := listen(t, Config{NoLogin: true, NoBanner: true, EOR: true})
	c := dial(t, s.Addr())
	c.expect("edge-r1>")
	before := s.Sessions()[0]
	// Repeat agreements (must not be answered), ask for unsupported
	// options (answered once each), and confirm refusals.
	c.cmd(cmdDO, optEcho)
	c.cmd(cmdDO, optSGA)
	c.cmd(cmdWILL, optTTYPE)
	c.cmd(cmdWILL, optNAWS)
	c.cmd(cmdDONT, optEOR) // we refused EOR; the server already knows
	c.cmd(cmdWONT, optBinary)
	c.cmd(cmdDO, optBinary)
	c.cmd(cmdWILL, optLinemode)
	c.run("echo sync", "edge-r1>")
	after := s.Sessions()[0]
	if d := after.NegSent - before.NegSent; d != 2 {
		t.Errorf("server sent %d negotiation replies, want 2 (WONT BINARY, DONT LINEMODE)", d)
	}
	if after.NegReceived-before.NegReceived != 8 {
		t.Errorf("received %d", after.NegReceived-before.NegReceived)
	}
	if slices.Contains(after.Local, "BINARY") || slices.Contains(after.Remote, "LINEMODE") {
		t.Errorf("accepted unsupported option: %+v", after)
	}
	// Turning ECHO off and on is honoured.
	c.cmd(cmdDONT, optEcho)
	waitFor(t, "ECHO off", func() bool { return !slices.Contains(s.Sessions()[0].Local, "ECHO") })
	if got := c.run("echo hidden", "edge-r1>"); got != "\r\nhidden\r\n" {
		t.Errorf("echo while client echoes locally: %q", got)
	}
	// Each request was sent once only.
	if n := strings.Count(strings.Join(c.negLog, ","), "WILL ECHO"); n != 1 {
		t.Errorf("WILL ECHO seen %d times in %v", n, c.negLog)
	}
}

func TestPromptMarks(t *testing.T) {
	t.Run("EOR", func(t *testing.T) {
		s := listen(t, Config{EOR: true, NoBanner: true})
		c := dial(t, s.Addr(), func(c *tclient) { c.acceptEOR = true })
		c.login()
		c.run("echo hi", "edge-r1>")
		marks := c.promptMarks()
		want := []string{"EOR:Username: ", "EOR:Password: ", "EOR:edge-r1>", "EOR:edge-r1>"}
		if len(marks) != 4 {
			t.Fatalf("marks %q", marks)
		}
		for i, m := range marks {
			if !strings.HasSuffix(m, strings.TrimPrefix(want[i], "EOR:")) || !strings.HasPrefix(m, "EOR:") {
				t.Errorf("mark %d = %q, want suffix %q", i, m, want[i])
			}
		}
		if si := s.Sessions()[0]; !slices.Contains(si.Local, "EOR") {
			t.Errorf("EOR not agreed: %v", si.Local)
		}
	})
	t.Run("EOR refused", func(t *testing.T) {
		s := listen(t, Config{EOR: true, NoBanner: true, NoLogin: true})
		c := dial(t, s.Addr())
		c.expect("edge-r1>")
		c.run("echo x", "edge-r1>")
		if m := c.promptMarks(); len(m) != 0 {
			t.Errorf("marks without EOR/with SGA: %q", m)
		}
	})
	t.Run("GA without SGA", func(t *testing.T) {
		s := listen(t, Config{NoBanner: true, NoLogin: true, PageLines: 3})
		c := dial(t, s.Addr(), func(c *tclient) { c.refuseSGA = true })
		c.expect("edge-r1>")
		c.send("show version\r\n")
		c.expect(" --More-- ")
		c.send("q")
		c.expect("edge-r1>")
		m := c.promptMarks()
		if len(m) != 3 || !strings.HasSuffix(m[0], "edge-r1>") || !strings.HasSuffix(m[1], " --More-- ") || !strings.HasPrefix(m[2], "GA:") {
			t.Errorf("GA marks: %q", m)
		}
	})
}

func TestRawClientWithoutTelnet(t *testing.T) {
	s := listen(t, Config{NoBanner: true, NoLogin: true, NegotiationTimeout: 50 * time.Millisecond})
	c := dial(t, s.Addr(), func(c *tclient) { c.refuseAll = true })
	c.expect("edge-r1>")
	c.send("echo plain\n") // bare LF ends a line too; no server echo (ECHO not agreed)
	if got := c.expect("edge-r1>"); !strings.Contains(got, "\r\nplain\r\n") || strings.Contains(got, "echo plain") {
		t.Errorf("raw client: %q", got)
	}
}

func TestReloadAndExit(t *testing.T) {
	s := listen(t, Config{NoBanner: true, Password: "s3cret"})
	c := dial(t, s.Addr())
	c.expect("Username: ")
	c.send("admin\r\n")
	c.expect("Password: ")
	c.send("s3cret\r\n")
	c.expect("edge-r1>")
	if got := c.run("reload", "edge-r1>"); !strings.Contains(got, "% Invalid input") {
		t.Errorf("reload needs enable: %q", got)
	}
	c.send("en\r\n")
	c.expect("Password: ")
	c.send("s3cret\r\n")
	c.expect("edge-r1#")
	c.send("reload\r\n")
	c.expect("Proceed with reload? [confirm]")
	c.send("n\r\n")
	if got := c.expect("edge-r1#"); got != "n\r\nReload cancelled\r\nedge-r1#" {
		t.Errorf("cancel: %q", got)
	}
	c.send("reload\r\n")
	c.expect("[confirm]")
	c.send("\r\n")
	c.expect("Reload cancelled\r\nedge-r1#")
	c.send("reload\r\n")
	c.expect("[confirm]")
	c.send("y\r\n")
	got := c.expectEOF()
	if !strings.Contains(got, "%SYS-5-RELOAD: Reload requested by admin") || !strings.Contains(got, "Goodbye from edge-r1.") {
		t.Errorf("reload: %q", got)
	}
}

func TestFragmentedOutputIsIdentical(t *testing.T) {
	script := func(t *testing.T, cfg Config) string {
		cfg.PageLines = 8
		cfg.EOR = true
		s := listen(t, cfg)
		c := dial(t, s.Addr(), func(c *tclient) { c.acceptEOR = true })
		c.login()
		c.send("show version\r\n")
		for !strings.HasSuffix(c.expectAny(" --More-- ", "edge-r1>"), "edge-r1>") {
			c.send(" ")
		}
		c.run("echo \xff\xff split \xff", "edge-r1>")
		c.send("show interfaces\r\n")
		c.expect(" --More-- ")
		c.send(" ")
		c.expect(" --More-- ")
		c.send("\r")
		c.expect(" --More-- ")
		c.send("q")
		c.expect("edge-r1>")
		c.run("show ip int brief", "edge-r1>")
		c.run("bogus command", "edge-r1>")
		c.send("exit\r\n")
		c.expectEOF()
		if si := len(c.promptMarks()); si < 8 {
			t.Errorf("only %d EOR marks", si)
		}
		return c.transcript() + fmt.Sprintf("\nmarks=%d", len(c.promptMarks()))
	}
	plain := script(t, Config{})
	frag := script(t, Config{Fragment: RandomFragmenter(42, 3), FragmentDelay: 50 * time.Microsecond})
	if plain != frag {
		t.Errorf("fragmented transcript differs:\n%q\n%q", plain, frag)
	}
	one := script(t, Config{Fragment: RandomFragmenter(7, 1)})
	if plain != one {
		t.Errorf("byte-by-byte transcript differs")
	}
}

func TestRandomFragmenter(t *testing.T) {
	f := RandomFragmenter(1, 4)
	p := []byte("hello, fragmented world")
	pieces := f(p)
	var joined []byte
	for _, x := range pieces {
		if len(x) < 1 || len(x) > 4 {
			t.Errorf("piece length %d", len(x))
		}
		joined = append(joined, x...)
	}
	if string(joined) != string(p) {
		t.Errorf("joined %q", joined)
	}
	if len(f(nil)) != 0 {
		t.Errorf("empty input")
	}
	a, b := RandomFragmenter(9, 5)(p), RandomFragmenter(9, 5)(p)
	if len(a) != len(b) {
		t.Errorf("not deterministic")
	}
}

func TestCloseWithLiveConnections(t *testing.T) {
	base := runtime.NumGoroutine()
	s, err := Listen("127.0.0.1:0", Config{PageLines: 5, Fragment: RandomFragmenter(3, 8), FragmentDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var cs []*tclient
	for i := 0; i < 4; i++ {
		c := dial(t, s.Addr())
		cs = append(cs, c)
	}
	cs[0].login()
	cs[0].send("show interfaces\r\n")
	cs[0].expect(" --More-- ") // parked in the pager
	cs[1].login()
	cs[2].expect("Username: ") // parked in login
	// cs[3] may still be negotiating.
	waitFor(t, "4 sessions", func() bool { return len(s.Sessions()) == 4 })

	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	for _, c := range cs {
		c.expectEOF()
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if len(s.Sessions()) != 0 {
		t.Errorf("sessions after Close")
	}
	for _, c := range cs {
		c.nc.Close()
		<-c.done
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

func TestIdleTimeout(t *testing.T) {
	s := listen(t, Config{NoBanner: true, NoLogin: true, IdleTimeout: 200 * time.Millisecond})
	c := dial(t, s.Addr())
	c.expect("edge-r1>")
	if got := c.expectEOF(); !strings.Contains(got, "idle timeout") {
		t.Errorf("idle: %q", got)
	}
}

func TestFormatUptime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		defaultUptime:      "12 weeks, 3 days, 4 hours, 17 minutes",
		time.Minute:        "1 minute",
		25 * time.Hour:     "1 day, 1 hour, 0 minutes",
		7 * 24 * time.Hour: "1 week, 0 days, 0 hours, 0 minutes",
	} {
		if got := formatUptime(d); got != want {
			t.Errorf("formatUptime(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestInterruptSlowOutput(t *testing.T) {
	s := listen(t, Config{NoLogin: true, NoBanner: true, NoColor: true, PageLines: -1,
		Fragment: RandomFragmenter(5, 16), FragmentDelay: 2 * time.Millisecond})
	c := dial(t, s.Addr())
	c.expect("edge-r1>")
	c.send("show interfaces\r\n")
	c.expect("GigabitEthernet0/0 is up")
	c.cmd(cmdIP)
	got := c.expect("^C\r\nedge-r1>")
	if strings.Contains(got, "Loopback0 is up") {
		t.Errorf("output was not aborted")
	}
	if got := c.run("echo next", "edge-r1>"); got != "echo next\r\nnext\r\n" {
		t.Errorf("after abort: %q", got)
	}
}
