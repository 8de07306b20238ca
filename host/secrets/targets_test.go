package secrets

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func mustCred(t *testing.T, entry string) Credential {
	t.Helper()
	cs, err := Parse([]byte(`{"version":"1.0","credentials":[`+entry+`]}`), Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

// TRUST-1: a credential is used only for its own host and port and the
// entries of its "hosts": names by name (case-insensitively, * within one
// label), addresses and networks by the address connected to.
func TestCredentialTargets(t *testing.T) {
	c := mustCred(t, `{"id":"r1","host":"R1.lab","username":"u","password":"cA==",
		"hosts":["10.0.0.0/24","10.0.1.5:2323","sw*.lab","[2001:db8::/32]:22","core.lab:830"]}`)
	ip := netip.MustParseAddr
	for _, tc := range []struct {
		host   string
		port   int
		remote string
		def    int
		want   bool
	}{
		{"r1.lab", 23, "", TelnetPort, true}, // its own name, the kind's port
		{"R1.LAB.", 22, "", SSHPort, true},
		{"r1.lab", 2323, "", TelnetPort, false}, // another port
		{"r2.lab", 23, "", TelnetPort, false},
		{"10.0.0.7", 23, "", TelnetPort, true},
		{"10.0.1.7", 23, "", TelnetPort, false},
		{"10.0.1.5", 2323, "", TelnetPort, true},
		{"10.0.1.5", 23, "", TelnetPort, false},
		{"gw.lab", 23, "10.0.0.9", TelnetPort, true}, // a name, by the address connected to
		{"gw.lab", 23, "192.0.2.1", TelnetPort, false},
		{"sw12.lab", 23, "", TelnetPort, true},
		{"sw12.evil.lab", 23, "", TelnetPort, false}, // * is one label
		{"sw12.lab.evil.com", 23, "", TelnetPort, false},
		{"2001:db8::1", 22, "", TelnetPort, true},
		{"[2001:db8::1]", 23, "", TelnetPort, false},
		{"core.lab", 830, "", SSHPort, true},
		{"core.lab", 22, "", SSHPort, false},
		{"localhost", 23, "127.0.0.1", TelnetPort, false},
	} {
		d := Dest{Host: tc.host, Port: tc.port}
		if tc.remote != "" {
			d.Remote = ip(tc.remote)
		}
		if got := c.Allows(d, tc.def); got != tc.want {
			t.Errorf("Allows(%v, default %d) = %v, want %v", d, tc.def, got, tc.want)
		}
	}
	// A port in the credential is the port of its bare entries.
	p := mustCred(t, `{"id":"p","host":"127.0.0.1","port":2300,"username":"u","password":"cA==","hosts":["127.0.0.2"]}`)
	if !p.Allows(Dest{Host: "127.0.0.2", Port: 2300}, TelnetPort) || p.Allows(Dest{Host: "127.0.0.2", Port: 23}, TelnetPort) {
		t.Error("a bare entry does not take the credential's port")
	}
	if !p.AllowsAddr(ip("127.0.0.1"), 2300, TelnetPort) || p.AllowsAddr(ip("127.0.0.3"), 2300, TelnetPort) {
		t.Error("AllowsAddr")
	}
	if s := p.TargetsString(TelnetPort); s != "127.0.0.1:2300, 127.0.0.2:2300" {
		t.Errorf("TargetsString = %q", s)
	}
}

func TestCredentialTargetErrors(t *testing.T) {
	for entry, want := range map[string]string{
		`"hosts":[""]`:                    "hosts[0]",
		`"hosts":["10.0.0.0/33"]`:         "not a network",
		`"hosts":["r1:0"]`:                "port",
		`"hosts":["a b"]`:                 "space",
		`"hosts":["r[1].lab"]`:            "wildcard",
		`"programs":["bin/sudo"]`:         "relative path",
		`"programs":[""]`:                 "programs[0]",
		`"hosts":"r1"`:                    "hosts",
		`"hosts":["[2001:db8::1]23"]`:     ":port",
		`"hosts":["[2001:db8::1]:99999"]`: "port",
	} {
		_, err := Parse([]byte(`{"credentials":[{"id":"x","host":"h","username":"u","password":"cA==",`+entry+`}]}`), Defaults{})
		if err == nil && want != "" || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (want %q)", entry, err, want)
		}
	}
}

// A program is the file its name resolves to, never a copy elsewhere with
// the same name.
func TestCredentialPrograms(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	real, _ := filepath.EvalSymlinks(cat)
	c := mustCred(t, `{"id":"x","host":"h","username":"u","password":"cA==","programs":["cat","/nonexistent/sudo"]}`)
	if !c.AllowsProgram(real) {
		t.Errorf("cat (%s) not allowed", real)
	}
	dir := t.TempDir()
	b, _ := os.ReadFile(real)
	copyPath := filepath.Join(dir, "cat")
	os.WriteFile(copyPath, b, 0o755)
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	if c.AllowsProgram(real) {
		t.Error("with a copy first in PATH, the original is still taken for cat")
	}
	if !c.AllowsProgram(copyPath) {
		t.Error("PATH is not what names resolve through")
	}
	if c.AllowsProgram("") || c.AllowsProgram("/nonexistent/sudo") {
		t.Error("a program that does not exist is allowed")
	}
}
