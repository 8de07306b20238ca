package devsim

import (
	"strings"
	"testing"
	"time"
)

// pstep sends in, waits for want and checks the output up to it. want is
// expected right after a CR LF unless it starts with "~"; a want of "EOF"
// waits for the server to close.
type pstep struct {
	in   string
	want string
	has  []string
	not  []string
}

type pscript struct {
	personality string
	pager       string // the end of the pager prompt, answered with space in other steps
	steps       []pstep
	badLogin    []pstep // wrong password, then the retry prompt
}

func loginSteps(userPrompt, passPrompt, prompt string, has ...string) []pstep {
	return []pstep{
		{"", userPrompt, has, nil},
		{"admin\r", "~" + passPrompt, nil, nil},
		{"termhost\r", prompt, nil, nil},
	}
}

// pagerSteps: a long command pages; space shows a page, Enter a line, q
// quits back to the prompt.
func pagerSteps(cmd, pager, prompt string) []pstep {
	w := pager
	if !strings.HasPrefix(w, "~") {
		w = "\r\n" + w
	}
	w = "~" + strings.TrimPrefix(w, "~")
	return []pstep{
		{cmd + "\r", w, nil, nil},
		{" ", w, nil, nil},
		{"\r", w, nil, nil},
		{"q", "~" + prompt, nil, nil},
	}
}

func cat(parts ...[]pstep) []pstep {
	var out []pstep
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var pscripts = []pscript{
	{
		personality: "cisco_ios", pager: " --More-- ",
		steps: cat(loginSteps("Username: ", "Password: ", "edge-r1>", "User Access Verification"), []pstep{
			{"enable\r", "Password: ", nil, nil},
			{"en4ble\r", "edge-r1#", nil, nil},
			{"configure terminal\r", "edge-r1(config)#", []string{"End with CNTL/Z."}, nil},
			{"interface gi0/1\r", "edge-r1(config-if)#", nil, nil},
			{"exit\r", "edge-r1(config)#", nil, nil},
			{"interface gi0/1\r", "edge-r1(config-if)#", nil, nil},
			{"end\r", "edge-r1#", nil, nil},
			{"show foo\r", "edge-r1#", []string{"\r\n             ^\r\n% Invalid input detected at '^' marker.\r\n"}, nil},
			{"show version\r", "edge-r1#", []string{"Version 15.9(3)M4-sim", "edge-r1 uptime is 12 weeks"}, nil},
			{"show ip route\r", "edge-r1#", []string{"S*    0.0.0.0/0 [1/0] via 10.0.0.2"}, nil},
			{"reload\r", "Proceed with reload? [confirm]", nil, nil},
			{"n\r", "edge-r1#", []string{"Reload cancelled"}, nil},
			{"copy running-config startup-config\r", "Destination filename [startup-config]? ", nil, nil},
			{"\r", "edge-r1#", []string{"Building configuration...\r\n[OK]"}, nil},
		}, pagerSteps("show interfaces", " --More-- ", "edge-r1#"), []pstep{
			{"terminal length 0\r", "edge-r1#", nil, nil},
			{"show interfaces\r", "edge-r1#", []string{"Loopback0 is up"}, []string{"--More--"}},
			{"disable\r", "edge-r1>", nil, nil},
			{"exit\r", "EOF", nil, nil},
		}),
		badLogin: []pstep{{"", "Username: ", nil, nil}, {"admin\r", "~Password: ", nil, nil}, {"nope\r", "Username: ", []string{"% Login invalid"}, nil}},
	},
	{
		personality: "cisco_nxos", pager: "--More--",
		steps: cat(loginSteps("edge-r1 login: ", "Password: ", "edge-r1#", "User Access Verification"), []pstep{
			{"configure terminal\r", "edge-r1(config)#", []string{"End with CNTL/Z."}, nil},
			{"interface eth1/2\r", "edge-r1(config-if)#", nil, nil},
			{"exit\r", "edge-r1(config)#", nil, nil},
			{"interface Ethernet1/2\r", "edge-r1(config-if)#", nil, nil},
			{"end\r", "edge-r1#", nil, nil},
			{"show foo\r", "edge-r1#", []string{"\r\n             ^\r\n% Invalid command at '^' marker.\r\n"}, nil},
			{"show version\r", "edge-r1#", []string{"NXOS: version 10.3(4a)-sim", "Device name: edge-r1"}, nil},
			{"show ip route\r", "edge-r1#", []string{"0.0.0.0/0, ubest/mbest: 1/0\r\n    *via 10.0.0.2, [1/0], 12w3d, static"}, nil},
			{"show interface brief\r", "edge-r1#", []string{"Eth1/3", "Administratively down"}, nil},
			{"reload\r", "This command will reboot the system. (y/n)?  [n] ", nil, nil},
			{"n\r", "edge-r1#", nil, nil},
			{"copy running-config startup-config\r", "edge-r1#", []string{"Copy complete."}, nil},
			{"show interface | no-more\r", "edge-r1#", []string{"loopback0 is up"}, []string{"--More--"}},
		}, pagerSteps("show interface", "--More--", "edge-r1#"), []pstep{
			{"terminal length 0\r", "edge-r1#", nil, nil},
			{"show interface\r", "edge-r1#", []string{"Ethernet1/8 is up"}, []string{"--More--"}},
			{"exit\r", "EOF", nil, nil},
		}),
		badLogin: []pstep{{"", "edge-r1 login: ", nil, nil}, {"admin\r", "~Password: ", nil, nil}, {"nope\r", "edge-r1 login: ", []string{"Login incorrect"}, nil}},
	},
	{
		personality: "arista_eos", pager: " --More-- ",
		steps: cat(loginSteps("edge-r1 login: ", "Password: ", "edge-r1>", "EOS-like switch"), []pstep{
			{"enable\r", "Password: ", nil, nil},
			{"en4ble\r", "edge-r1#", nil, nil},
			{"configure terminal\r", "edge-r1(config)#", nil, nil},
			{"interface Ethernet3\r", "edge-r1(config-if)#", nil, nil},
			{"exit\r", "edge-r1(config)#", nil, nil},
			{"interface et3\r", "edge-r1(config-if)#", nil, nil},
			{"end\r", "edge-r1#", nil, nil},
			{"show foo\r", "edge-r1#", []string{"\r\n             ^\r\n% Invalid input\r\n"}, nil},
			{"show version\r", "edge-r1#", []string{"Software image version: 4.31.2F-sim", "Uptime: 12 weeks"}, nil},
			{"show ip route\r", "edge-r1#", []string{" S        0.0.0.0/0 [1/0] via 10.0.0.2, Ethernet1", " C        192.168.10.0/24 is directly connected, Ethernet2"}, nil},
			{"show ip interface brief\r", "edge-r1#", []string{"Ethernet3         172.16.20.1/24        administratively down"}, nil},
			{"reload\r", "Proceed with reload? [confirm]", nil, nil},
			{"n\r", "edge-r1#", []string{"Reload cancelled"}, nil},
			{"copy running-config startup-config\r", "edge-r1#", []string{"Copy completed successfully."}, nil},
			{"show interfaces | no-more\r", "edge-r1#", []string{"Loopback0 is up"}, []string{"--More--"}},
		}, pagerSteps("show interfaces", " --More-- ", "edge-r1#"), []pstep{
			{"terminal length 0\r", "edge-r1#", nil, nil},
			{"show interfaces\r", "edge-r1#", []string{"Ethernet8 is up"}, []string{"--More--"}},
			{"disable\r", "edge-r1>", nil, nil},
			{"exit\r", "EOF", nil, nil},
		}),
		badLogin: []pstep{{"", "edge-r1 login: ", nil, nil}, {"admin\r", "~Password: ", nil, nil}, {"nope\r", "edge-r1 login: ", []string{"Login incorrect"}, nil}},
	},
	{
		personality: "frr", pager: " --More-- ",
		steps: cat([]pstep{
			{"", "Password: ", []string{"Hello, this is FRRouting (version 9.1).", "User Access Verification"}, nil},
			{"termhost\r", "edge-r1>", nil, nil},
			{"enable\r", "Password: ", nil, nil},
			{"en4ble\r", "edge-r1#", nil, nil},
			{"configure terminal\r", "edge-r1(config)#", nil, nil},
			{"interface eth2\r", "edge-r1(config-if)#", nil, nil},
			{"exit\r", "edge-r1(config)#", nil, nil},
			{"interface eth2\r", "edge-r1(config-if)#", nil, nil},
			{"end\r", "edge-r1#", nil, nil},
			{"foo\r", "edge-r1#", []string{"\r\n% Unknown command: foo\r\n"}, nil},
			{"show version\r", "edge-r1#", []string{"FRRouting 9.1 (edge-r1)"}, nil},
			{"show ip route\r", "edge-r1#", []string{"S>* 0.0.0.0/0 [1/0] via 10.0.0.2, eth0", "C>* 10.0.0.0/30 is directly connected, eth0"}, nil},
			{"write memory\r", "edge-r1#", []string{"[OK]"}, nil},
		}, pagerSteps("show interface", " --More-- ", "edge-r1#"), []pstep{
			{"terminal length 0\r", "edge-r1#", nil, nil},
			{"show interface\r", "edge-r1#", []string{"Interface lo is up"}, []string{"--More--"}},
			{"exit\r", "EOF", nil, nil},
		}),
		badLogin: []pstep{{"", "Password: ", nil, nil}, {"nope\r", "~Password: ", nil, []string{"edge-r1>"}}},
	},
	{
		personality: "juniper_junos", pager: "%)---",
		steps: cat(loginSteps("login: ", "Password:", "admin@edge-r1> ", "edge-r1 (ttyp0)"), []pstep{
			{"configure\r", "\r\n[edit]\r\nadmin@edge-r1# ", []string{"Entering configuration mode"}, nil},
			{"edit interfaces ge-0/0/1\r", "\r\n[edit interfaces ge-0/0/1]\r\nadmin@edge-r1# ", nil, nil},
			{"set description lab-east\r", "\r\n[edit interfaces ge-0/0/1]\r\nadmin@edge-r1# ", nil, nil},
			{"up\r", "\r\n[edit interfaces]\r\nadmin@edge-r1# ", nil, nil},
			{"top\r", "\r\n[edit]\r\nadmin@edge-r1# ", nil, nil},
			{"exit\r", "Exit with uncommitted changes? [yes,no] (yes) ", []string{"The configuration has been changed but not committed"}, nil},
			{"no\r", "\r\n[edit]\r\nadmin@edge-r1# ", nil, nil},
			{"commit confirmed\r", "\r\n[edit]\r\nadmin@edge-r1# ", []string{"commit complete"}, nil},
			{"run show interfaces terse\r", "\r\n[edit]\r\nadmin@edge-r1# ", []string{"ge-0/0/1.0              up    up   inet     192.168.10.1/24"}, nil},
			{"exit\r", "admin@edge-r1> ", []string{"Exiting configuration mode"}, nil},
			{"foo\r", "admin@edge-r1> ", []string{"\r\n               ^\r\nunknown command.\r\n"}, nil},
			{"show foo\r", "admin@edge-r1> ", []string{"\r\n                    ^\r\nsyntax error, expecting <command>.\r\n"}, nil},
			{"show version\r", "admin@edge-r1> ", []string{"Hostname: edge-r1", "Junos: 21.4R3-S2-sim"}, nil},
			{"show route\r", "admin@edge-r1> ", []string{"inet.0: ", "0.0.0.0/0          *[Static/5] 12w3d 04:17:00\r\n                    >  to 10.0.0.2 via ge-0/0/0.0"}, nil},
			{"show interfaces ge-0/0/1\r", "admin@edge-r1> ", []string{"Description: lab-east"}, nil},
			{"request system reboot\r", "Reboot the system ? [yes,no] (no) ", nil, nil},
			{"no\r", "admin@edge-r1> ", nil, nil},
			{"show interfaces | no-more\r", "admin@edge-r1> ", []string{"Physical interface: lo0"}, []string{"---(more"}},
		}, pagerSteps("show interfaces", "~%)---", "admin@edge-r1> "), []pstep{
			{"set cli screen-length 0\r", "admin@edge-r1> ", nil, nil},
			{"show interfaces\r", "admin@edge-r1> ", []string{"Physical interface: lo0"}, []string{"---(more"}},
			{"exit\r", "EOF", nil, nil},
		}),
		badLogin: []pstep{{"", "login: ", nil, nil}, {"admin\r", "~Password:", nil, nil}, {"nope\r", "login: ", []string{"Login incorrect"}, nil}},
	},
	{
		personality: "huawei", pager: "  ---- More ----",
		steps: cat(loginSteps("Username:", "Password:", "<edge-r1>", "Login authentication"), []pstep{
			{"system-view\r", "[edge-r1]", []string{"Enter system view"}, nil},
			{"interface GigabitEthernet0/0/1\r", "[edge-r1-GigabitEthernet0/0/1]", nil, nil},
			{"quit\r", "[edge-r1]", nil, nil},
			{"interface ge0/0/2\r", "[edge-r1-GigabitEthernet0/0/2]", nil, nil},
			{"return\r", "<edge-r1>", nil, nil},
			{"foo\r", "<edge-r1>", []string{"\r\n         ^\r\nError: Unrecognized command found at '^' position.\r\n"}, nil},
			{"display version\r", "<edge-r1>", []string{"VRP-like (R) software, Version 8.180"}, nil},
			{"display ip routing-table\r", "<edge-r1>", []string{"         0.0.0.0/0  Static  60   0           RD    10.0.0.2        GigabitEthernet0/0/0"}, nil},
			{"display interface brief\r", "<edge-r1>", []string{"GigabitEthernet0/0/2        *down down"}, nil},
			{"save\r", "Are you sure to continue?[Y/N]:", []string{"The current configuration will be written to the device."}, nil},
			{"y\r", "<edge-r1>", []string{"Info: Save the configuration successfully."}, nil},
			{"reboot\r", "System will reboot! Continue?[Y/N]:", nil, nil},
			{"n\r", "<edge-r1>", nil, nil},
		}, pagerSteps("display interface", "  ---- More ----", "<edge-r1>"), []pstep{
			{"screen-length 0 temporary\r", "<edge-r1>", []string{"Info: The configuration takes effect"}, nil},
			{"display interface\r", "<edge-r1>", []string{"LoopBack0 current state : UP"}, []string{"---- More ----"}},
			{"quit\r", "EOF", nil, nil},
		}),
		badLogin: []pstep{{"", "Username:", nil, nil}, {"admin\r", "~Password:", nil, nil}, {"nope\r", "Username:", []string{"Error: Local authentication is rejected."}, nil}},
	},
	{
		personality: "mikrotik_routeros", pager: "-- [Q quit|D dump|down]",
		steps: cat(loginSteps("Login: ", "Password: ", "[admin@edge-r1] > "), []pstep{
			{"/ip address\r", "[admin@edge-r1] /ip address> ", nil, nil},
			{"print\r", "[admin@edge-r1] /ip address> ", []string{"10.0.0.1/30        10.0.0.0      ether1"}, nil},
			{"..\r", "[admin@edge-r1] /ip> ", nil, nil},
			{"/\r", "[admin@edge-r1] > ", nil, nil},
			{"foo\r", "[admin@edge-r1] > ", []string{"\r\nbad command name foo (line 1 column 1)\r\n"}, nil},
			{"/interface foo\r", "[admin@edge-r1] > ", []string{"\r\nbad command name foo (line 1 column 12)\r\n"}, nil},
			{"/system resource print\r", "[admin@edge-r1] > ", []string{"uptime: 12w3d4h17m", "version: 7.14.3-sim"}, nil},
			{"/interface print\r", "[admin@edge-r1] > ", []string{" 2  X ether3   ether", ";;; uplink to core-sw1"}, nil},
			{"/ip route print\r", "[admin@edge-r1] > ", []string{"0  As  0.0.0.0/0        10.0.0.2"}, nil},
			{"/system reboot\r", "Reboot, yes? [y/N]: ", nil, nil},
			{"n\r", "[admin@edge-r1] > ", []string{"action cancelled"}, nil},
		}, pagerSteps("/log print", "-- [Q quit|D dump|down]", "[admin@edge-r1] > "), []pstep{
			{"/log print\r", "~-- [Q quit|D dump|down]", nil, nil},
			{"d", "[admin@edge-r1] > ", []string{"\r\n 2025-06-02 09:29:23 route,ospf,info"}, []string{"-- [Q quit"}},
			{"/log print without-paging\r", "[admin@edge-r1] > ", nil, []string{"-- [Q quit"}},
			{"/quit\r", "EOF", nil, nil},
		}),
		badLogin: []pstep{{"", "Login: ", nil, nil}, {"admin\r", "~Password: ", nil, nil}, {"nope\r", "Login: ", []string{"Login failed, incorrect username or password"}, nil}},
	},
	{
		personality: "linux",
		steps: cat(loginSteps("edge-r1 login: ", "Password: ", "admin@edge-r1:~$ ", "Debian GNU/Linux 12"), []pstep{
			{"sudo -i\r", "~[sudo] password for admin: ", nil, nil},
			{"termhost\r", "root@edge-r1:~# ", nil, nil},
			{"exit\r", "admin@edge-r1:~$ ", []string{"logout"}, nil},
			{"su -\r", "~Password: ", nil, nil},
			{"en4ble\r", "root@edge-r1:~# ", nil, nil},
			{"exit\r", "admin@edge-r1:~$ ", nil, nil},
			{"foo\r", "admin@edge-r1:~$ ", []string{"\r\nsh: foo: not found\r\n"}, nil},
			{"echo $?\r", "admin@edge-r1:~$ ", []string{"\r\n127\r\n"}, nil},
			{"uname -a\r", "admin@edge-r1:~$ ", []string{"Linux edge-r1 6.1.0-21-amd64"}, nil},
			{"ip addr\r", "admin@edge-r1:~$ ", []string{"inet 10.0.0.1/30 brd 10.0.0.3 scope global eth0", "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP>"}, nil},
			{"ip route\r", "admin@edge-r1:~$ ", []string{"default via 10.0.0.2 dev eth0 proto static"}, nil},
			{"rm -i notes.txt\r", "~rm: remove regular file 'notes.txt'? ", nil, nil},
			{"n\r", "admin@edge-r1:~$ ", nil, nil},
			{"seq 1 300\r", "admin@edge-r1:~$ ", []string{"\r\n300\r\n"}, []string{"More"}},
			{"exit\r", "EOF", []string{"logout"}, nil},
		}),
		badLogin: []pstep{{"", "edge-r1 login: ", nil, nil}, {"admin\r", "~Password: ", nil, nil}, {"nope\r", "edge-r1 login: ", []string{"Login incorrect"}, nil}},
	},
}

// runPScript runs steps against a fresh server and returns the transcript.
func runPScript(t *testing.T, personality, pager string, steps []pstep, frag func([]byte) [][]byte) string {
	t.Helper()
	s := listen(t, Config{Personality: personality, EnableSecret: "en4ble", NoColor: true, PageLines: 20,
		Clock: func() time.Time { return DefaultClockStart }, Fragment: frag})
	c := dial(t, s.Addr())
	for i, st := range steps {
		if st.in != "" {
			c.send(st.in)
		}
		var got string
		w, ok := strings.CutPrefix(st.want, "~")
		if !ok {
			w = "\r\n" + w
		}
		switch {
		case st.want == "EOF":
			got = c.expectEOF()
		case pager == "" || strings.Contains(w, pager):
			got = c.expect(w)
		default:
			// Other long outputs page too: answer with space.
			for n := 0; n < 100; n++ {
				g := c.expectAny(w, pager)
				got += g
				if strings.HasSuffix(g, w) {
					break
				}
				c.send(" ")
			}
		}
		if strings.HasSuffix(st.in, "\r") && strings.HasPrefix(got, "termhost") {
			t.Errorf("step %d: password echoed: %q", i, got)
		}
		for _, h := range st.has {
			if !strings.Contains(got, h) {
				t.Errorf("step %d %q: output lacks %q:\n%q", i, st.in, h, got)
			}
		}
		for _, n := range st.not {
			if strings.Contains(got, n) {
				t.Errorf("step %d %q: output has %q:\n%q", i, st.in, n, got)
			}
		}
	}
	return c.transcript()
}

func TestPersonalities(t *testing.T) {
	if len(pscripts) != len(Personalities) {
		t.Errorf("%d scripts for %d personalities", len(pscripts), len(Personalities))
	}
	for i, ps := range pscripts {
		t.Run(ps.personality, func(t *testing.T) {
			plain := runPScript(t, ps.personality, ps.pager, ps.steps, nil)
			frag := runPScript(t, ps.personality, ps.pager, ps.steps, RandomFragmenter(int64(i+1), 3))
			if plain != frag {
				t.Errorf("fragmented transcript differs")
			}
			if again := runPScript(t, ps.personality, ps.pager, ps.steps, nil); again != plain {
				t.Errorf("transcript not deterministic")
			}
			runPScript(t, ps.personality, ps.pager, ps.badLogin, RandomFragmenter(int64(i+7), 2))
		})
	}
}

// TestPersonalityLongOutput checks that each personality has an output of
// about ten pages for benchmarks.
func TestPersonalityLongOutput(t *testing.T) {
	long := map[string]string{
		"cisco_ios": "show logging", "cisco_nxos": "show interface", "arista_eos": "show interfaces",
		"frr": "show interface", "juniper_junos": "show interfaces", "huawei": "display interface",
		"mikrotik_routeros": "/log print", "linux": "seq 1 200",
	}
	for _, p := range Personalities {
		t.Run(p, func(t *testing.T) {
			s := listen(t, Config{Personality: p, NoLogin: true, NoBanner: true, NoColor: true, PageLines: -1})
			c := dial(t, s.Addr())
			var prompt string
			switch p {
			case "cisco_ios", "arista_eos", "frr":
				prompt = "edge-r1>"
			case "cisco_nxos":
				prompt = "edge-r1#"
			case "juniper_junos":
				prompt = "admin@edge-r1> "
			case "huawei":
				prompt = "<edge-r1>"
			case "mikrotik_routeros":
				prompt = "[admin@edge-r1] > "
			case "linux":
				prompt = "admin@edge-r1:~$ "
			}
			c.expect(prompt)
			if p == "cisco_ios" {
				c.send("enable\r")
				c.expect("Password: ")
				c.send("termhost\r")
				prompt = "edge-r1#"
				c.expect(prompt)
			}
			out := c.run(long[p], prompt)
			n := strings.Count(out, "\r\n")
			if n < 190 {
				t.Errorf("%s: %d lines", long[p], n)
			}
			t.Logf("%s: %q has %d lines", p, long[p], n)
		})
	}
}
