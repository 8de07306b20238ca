package host

import (
	"slices"
	"testing"
)

// TestProgramEnv: termhost's own variables (names and prefixes) are left
// out; SSH_AUTH_SOCK is held apart for the decision at each start.
func TestProgramEnv(t *testing.T) {
	own := []EnvVar{{Name: "SSH_PASSPHRASE", Secret: true}, {Name: "PORT"}, {Name: "TERMHOST_*"}}
	env, sock := programEnv([]string{
		"HOME=/h", "SSH_PASSPHRASE=x", "PORT=1", "PORTABLE=yes", "TERMHOST_TOOLS=pty", "TERMHOST=bare",
		"SSH_AUTH_SOCK=/tmp/agent", "PATH=/bin",
	}, own)
	want := []string{"HOME=/h", "PORTABLE=yes", "TERMHOST=bare", "PATH=/bin"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	if sock != "SSH_AUTH_SOCK=/tmp/agent" {
		t.Errorf("agent socket %q", sock)
	}
}
