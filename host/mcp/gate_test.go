package mcp

import (
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termhost/termhost/host/link/pty"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
)

// The secret gate for every kind of session (TRUST-1): a Telnet or SSH
// session to one of the credential's targets (by name, or by the address
// connected to), or a PTY whose every foreground program the credential
// names, with no reader outside it.
func TestSecretGate(t *testing.T) {
	cs, err := secrets.Parse([]byte(`{"credentials":[
		{"id":"dev","host":"r1.lab","username":"u","password":"cA==","hosts":["10.0.0.0/24"],"programs":["cat"],"kinds":["telnet","ssh"]},
		{"id":"bare","host":"10.9.9.9","port":2323,"username":"u","password":"cA==","kinds":["telnet","ssh"]},
		{"id":"devonly","host":"r1.lab","username":"u","password":"cA==","programs":["cat"]},
		{"id":"sshonly","host":"r1.lab","username":"u","authType":"password","password":"cA==","programs":["cat"]}]}`), secrets.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	dev, bare, devOnly, sshOnly := cs[0], cs[1], cs[2], cs[3]
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	cat, _ = filepath.EvalSymlinks(cat)
	sess := &session.Session{ID: "S1"}
	ip := netip.MustParseAddr
	for _, tc := range []struct {
		name string
		cred secrets.Credential
		d    session.Destination
		want string // "" allowed, else a piece of the error
	}{
		{"ssh shell to its host", dev, session.Destination{Kind: session.KindSSH, Host: "r1.lab", Port: 22}, ""},
		{"telnet to its host", dev, session.Destination{Kind: session.KindTelnet, Host: "R1.lab", Port: 23}, ""},
		{"telnet, another port", dev, session.Destination{Kind: session.KindTelnet, Host: "r1.lab", Port: 2323}, "r1.lab:23"},
		{"a name connected to its network", dev, session.Destination{Kind: session.KindTelnet, Host: "gw", Port: 23, Remote: ip("10.0.0.4")}, ""},
		{"elsewhere", dev, session.Destination{Kind: session.KindTelnet, Host: "127.0.0.1", Port: 4444, Remote: ip("127.0.0.1")}, "127.0.0.1:4444"},
		{"its port, ssh", bare, session.Destination{Kind: session.KindSSH, Host: "10.9.9.9", Port: 2323}, ""},
		{"pty running cat", dev, session.Destination{Kind: session.KindPTY, Foreground: &pty.Foreground{Exes: []string{cat}}}, ""},
		{"pty, cat and another", dev, session.Destination{Kind: session.KindPTY, Foreground: &pty.Foreground{Exes: []string{cat, "/usr/bin/bash"}}}, "/usr/bin/bash"},
		{"pty, unknown program", dev, session.Destination{Kind: session.KindPTY, Foreground: &pty.Foreground{Exes: []string{""}}}, "cannot be identified"},
		{"pty, an outside reader", dev, session.Destination{Kind: session.KindPTY, Foreground: &pty.Foreground{Exes: []string{cat}, Outsiders: []string{"42 (/usr/bin/cat)"}}}, "outside"},
		{"pty, no programs", bare, session.Destination{Kind: session.KindPTY, Foreground: &pty.Foreground{Exes: []string{cat}}}, "names none"},
		{"no host", dev, session.Destination{Kind: "pipe"}, "no host"},
		// Credentials keep their kind: a device credential is for Telnet,
		// an SSH one for SSH, unless "kinds" says otherwise; a local
		// program is no kind ("programs" decides).
		{"device credential, ssh", devOnly, session.Destination{Kind: session.KindSSH, Host: "r1.lab", Port: 22}, `"kinds"`},
		{"device credential, telnet", devOnly, session.Destination{Kind: session.KindTelnet, Host: "r1.lab", Port: 23}, ""},
		{"ssh credential, telnet", sshOnly, session.Destination{Kind: session.KindTelnet, Host: "r1.lab", Port: 23}, `"kinds"`},
		{"ssh credential, ssh", sshOnly, session.Destination{Kind: session.KindSSH, Host: "r1.lab", Port: 22}, ""},
		{"ssh credential, pty running cat", sshOnly, session.Destination{Kind: session.KindPTY, Foreground: &pty.Foreground{Exes: []string{cat}}}, ""},
	} {
		err := secretGate(tc.cred, sess)(tc.d)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "credentialId")):
			t.Errorf("%s: %v (want an error on credentialId with %q)", tc.name, err, tc.want)
		}
	}
}
