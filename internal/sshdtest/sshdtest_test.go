package sshdtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The harness works with OpenSSH's own client: key login, the command log.
func TestServerWithOpenSSHClient(t *testing.T) {
	s := Start(t, Options{})
	key := s.KeyPair("client", "ed25519", "")
	s.AuthorizeKey(key)
	out, err := exec.Command("ssh", "-i", key, "-p", strconv.Itoa(s.Port), "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
		s.User+"@"+s.Host, "echo hello-$((6*7))").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello-42") {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	if got := s.Commands(); len(got) != 1 || got[0] != "echo hello-$((6*7))" {
		t.Errorf("command log: %q", got)
	}
}

// Test processes running side by side share the throwaway user's
// password: a second process started while this one holds the user gets
// the same one, instead of setting a new one that would fail this one's
// password logins (go test ./... runs this package beside cmd/termhost).
func TestUserPasswordShared(t *testing.T) {
	if os.Getenv("SSHDTEST_PRINT_PASSWORD") == "1" {
		pass, err := ensureUser()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("password=" + pass + "\n")
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: no throwaway user")
	}
	pass, err := ensureUser()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestUserPasswordShared$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "SSHDTEST_PRINT_PASSWORD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the second process: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "password="+pass+"\n") {
		t.Errorf("the second process got another password (%q), which would fail this one's logins", out)
	}
}
