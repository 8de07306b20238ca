package sshdtest

import (
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
