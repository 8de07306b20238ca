package policy

import (
	"os"
	"testing"
)

// The shipped example parses and blocks what it says it blocks.
func TestShippedExample(t *testing.T) {
	data, err := os.ReadFile("../../rules.example.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(data)
	if err != nil {
		t.Fatalf("rules.example.json: %v", err)
	}
	for _, bad := range []string{"rm -rf /", "sudo rm -fr ~", "mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda", "ls; reboot", "sudo shutdown -h now", ":(){ :|:& };:", "chmod -R 777 /"} {
		if r.Check(bad) == nil {
			t.Errorf("example rules let %q through", bad)
		}
	}
	for _, ok := range []string{"ls -la", "rm -rf ./build", "rm -r /tmp/x", "echo reboot later", "dd if=a of=b", "cat /var/log/syslog"} {
		if err := r.Check(ok); err != nil {
			t.Errorf("example rules block %q: %v", ok, err)
		}
	}
}
