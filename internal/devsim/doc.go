// Package devsim is termhost's embedded network-device simulator: a Telnet
// server on a loopback address that behaves like a small router with a
// Cisco IOS-like CLI. `termhost demo` drives it through the real MCP tools,
// and end-to-end tests use it as a deterministic Telnet peer.
//
// # Telnet behaviour
//
// On connect the server negotiates first, like a real telnetd:
//
//	IAC WILL ECHO, IAC WILL SGA, IAC DO TTYPE, IAC DO NAWS,
//	IAC WILL EOR (only with Config.EOR), IAC DO NEW-ENVIRON
//
// and waits (at most Config.NegotiationTimeout) for the answers before it
// sends the banner. When the client agrees to TTYPE it is sent
// SB TTYPE SEND and the first IS answer is recorded; NEW-ENVIRON gets
// SB NEW-ENVIRON SEND and the variables are recorded; NAWS sizes are
// recorded and later updates followed. Negotiation uses the RFC 1143 state
// machine per option and side, so a command that confirms the current state
// is never answered and no negotiation loop is possible; options the
// server does not implement are refused once (DO TIMING-MARK is always
// answered with WILL TIMING-MARK, as it is a marker, not a state).
//
// The decoder keeps all state between reads: IAC, option and
// subnegotiation bytes may be split anywhere. IAC IAC is a 0xFF data byte,
// CR NUL is CR and CR LF one end of line (a bare LF ends a line too).
// IAC IP (or a ^C byte) interrupts: output stops, the pager is left and
// "^C" plus a fresh prompt is shown. IAC AYT is answered at once with
// "\r\n[<hostname>: yes]\r\n". IAC BRK and AO are counted. IAC EC/EL act
// like backspace and ^U.
//
// Every prompt (login prompts, CLI prompt, pager, confirmation questions)
// is followed by IAC EOR when the client agreed to EOR, and by IAC GA when
// it did not agree to SGA, so clients can detect "waiting for input"
// without timing heuristics.
//
// The server echoes input itself (it said WILL ECHO) unless the client
// refused ECHO, and never echoes passwords. Backspace/DEL erase, ^U erases
// the line, ^W a word; ANSI escape sequences (arrow keys) are ignored.
// All output lines end with CR LF, 0xFF in output is sent as IAC IAC, and
// every write goes through one function that applies Config.Fragment and
// Config.FragmentDelay (tests use RandomFragmenter to cut IAC sequences
// anywhere).
//
// # The CLI
//
// Login is "User Access Verification" / "Username: " / "Password: " (3
// attempts; Config.NoLogin skips it). The prompt is "edge-r1>" in user
// mode and "edge-r1#" after "enable" (same password). Every command word
// may be abbreviated to an unambiguous prefix ("sh ip int br", "conf t");
// unknown words get a caret under the offending word and
// "% Invalid input detected at '^' marker.", "?" lists commands.
//
// User EXEC: show version|clock|interfaces [name]|ip interface brief|
// ip route|users|history|privilege, terminal length N (0 disables paging),
// echo TEXT (prints TEXT verbatim, for reading back values), ping HOST
// (deterministic: 5 "!" or 5 "." for documentation prefixes), help, ?,
// enable, exit/logout/quit (goodbye line and close).
//
// Privileged EXEC adds: show running-config, disable, reload (asks
// "Proceed with reload? [confirm]"; only an answer starting with 'y'
// reloads, which means goodbye and close), configure terminal with
// hostname, interface NAME, description, ip address, [no] shutdown,
// do CMD, exit, end and ^Z. Configuration changes are shared by all
// sessions of one Server.
//
// Long output (show interfaces, show running-config) is paged with
// " --More-- " every Config.PageLines lines: space shows the next page,
// Enter one more line, q (or any other key) stops; the pager prompt is
// erased with CR, blanks, CR. Config.EndlessCommand names a command that
// pages without end (tests of a client's pager bound). Output is
// deterministic: the clock starts at a fixed instant (DefaultClockStart)
// and uptime at a fixed value.
//
// # Layers
//
// A connection is a conn (conn.go, negotiate.go: the Telnet behaviour
// above), and the CLI running over it a session (cli.go: login, the command
// loop, abbreviations, help, errors, the pager). The session asks its
// personality (personality.go) for the prompt and for what a command line
// does; the personality value is made per session and holds the state only
// its vendor has. Everything else a vendor varies (login texts, error lines,
// pager words, command tables) is data in its profile, built once per
// Server; newIOS shows the shape.
//
// # Personalities
//
// Config.Personality selects the vendor the device imitates (Personalities
// lists them); everything above describes "cisco_ios", the default. The
// others share the engine (line editing, abbreviations, paging, shared
// device state) with their own login, prompts, pager, questions, errors
// and commands, and eight ports plus a loopback named the vendor's way:
//
//	cisco_nxos         "edge-r1 login: " → "edge-r1#" (no enable); conf t, (config)#,
//	                   (config-if)#; "--More--"; reload "(y/n)?  [n] "; "% Invalid command at '^' marker."
//	arista_eos         "edge-r1 login: " → "edge-r1>", enable → "edge-r1#"; " --More-- " erased with
//	                   BS/space/BS; reload "[confirm]"; "% Invalid input"; "| no-more"
//	frr                "Password: " only → "edge-r1>", enable, conf t; " --More-- " and a NUL,
//	                   erased with BS/space/BS, pages counted in rows of the NAWS width
//	                   (a long line is cut by the pager, as zebra's vty does);
//	                   "% Unknown command: LINE"; write memory
//	juniper_junos      "login: " "Password:" → "admin@edge-r1> "; configure → "[edit]" line +
//	                   "admin@edge-r1# "; edit/up/top/set/commit [confirmed]/exit (asks when
//	                   uncommitted); "---(more N%)---"; set cli screen-length 0; "| no-more";
//	                   request system reboot "[yes,no] (no) "; "unknown command." / "syntax error, expecting <command>."
//	huawei             "Username:" "Password:" → "<edge-r1>", system-view "[edge-r1]", interface
//	                   "[edge-r1-GigabitEthernet0/0/1]", quit/return/^Z; "  ---- More ----" erased
//	                   with ESC[42D; screen-length 0 temporary; save/reboot "[Y/N]:";
//	                   "Error: Unrecognized command found at '^' position."
//	mikrotik_routeros  "Login: " "Password: " → "[admin@edge-r1] > ", menus "[admin@edge-r1] /ip address> ",
//	                   "..", "/"; "-- [Q quit|D dump|down]" (D shows the rest); print without-paging;
//	                   /system reboot "Reboot, yes? [y/N]: "; "bad command name foo (line 1 column 1)"
//	linux              "edge-r1 login: " "Password: " → "admin@edge-r1:~$ ", sudo -i / su - →
//	                   "root@edge-r1:~# "; no pager; "sh: foo: not found" (echo $? gives 127)
//
// Config.EnableSecret is the enable password (and the root password of
// "su -"); it defaults to Password. Config.Dialect is the older name of
// Personality ("ios").
//
// # Inetd
//
// ListenInetd is a separate, minimal inetd ("nowait" mode) for
// interoperability tests against daemons that only run under inetd, such
// as GNU inetutils telnetd:
//
//	d, err := devsim.ListenInetd("127.0.0.1:0", []string{"/usr/sbin/telnetd", "-E", "/bin/sh"}, nil)
//
// Both Listen and ListenInetd refuse non-loopback addresses.
package devsim
