package secrets

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A credential keeps its kind: written with authType it is for SSH, a
// device credential (a password, no authType) for Telnet, unless "kinds"
// says otherwise; a mistake in "kinds" names the entry and the field.
func TestCredentialKinds(t *testing.T) {
	const data = `{"credentials": [
		{"id": "ssh", "host": "h", "username": "u", "authType": "password", "password": "cHc="},
		{"id": "dev", "host": "h", "username": "u", "password": "cHc="},
		{"id": "both", "host": "h", "username": "u", "authType": "password", "password": "cHc=", "kinds": ["ssh", "telnet", "ssh"]},
		{"id": "devssh", "host": "h", "username": "u", "password": "cHc=", "kinds": ["ssh"]}
	]}`
	cs, err := Parse([]byte(data), Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"ssh": {"ssh"}, "dev": {"telnet"}, "both": {"ssh", "telnet"}, "devssh": {"ssh"}}
	for _, c := range cs {
		if !slices.Equal(c.Kinds, want[c.ID]) {
			t.Errorf("%s: kinds %q, want %q", c.ID, c.Kinds, want[c.ID])
		}
	}
	byID := func(id string) Credential {
		for _, c := range cs {
			if c.ID == id {
				return c
			}
		}
		t.Fatalf("no %s", id)
		return Credential{}
	}
	err = byID("ssh").CheckKind(KindTelnet)
	var ke *KindError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), `"kinds" is ["ssh"]`) || !strings.Contains(err.Error(), "in clear") || !strings.Contains(err.Error(), `"authType"`) {
		t.Errorf("an SSH credential for Telnet: %v", err)
	}
	if err := byID("dev").CheckKind(KindSSH); err == nil || !strings.Contains(err.Error(), `"kinds" is ["telnet"]`) || !strings.Contains(err.Error(), "device credential") {
		t.Errorf("a device credential for SSH: %v", err)
	}
	if _, err := byID("dev").Keys(); !errors.As(err, &ke) {
		t.Errorf("Keys of a device credential: %v", err)
	}
	if err := byID("both").CheckKind(KindTelnet); err != nil {
		t.Error(err)
	}
	if err := byID("both").CheckKind(KindSSH); err != nil {
		t.Error(err)
	}
	if k, err := byID("devssh").Keys(); err != nil {
		t.Errorf("Keys of a device credential for ssh: %v", err)
	} else {
		k.Close()
	}
	for _, c := range []struct{ in, want string }{
		{`{"credentials": [{"id": "a", "host": "h", "username": "u", "password": "cHc=", "kinds": []}]}`, `credentials[0] ("a").kinds: empty`},
		{`{"credentials": [{"id": "a", "host": "h", "username": "u", "password": "cHc=", "kinds": ["pty"]}]}`, `credentials[0] ("a").kinds[0]: "pty" is not a kind`},
	} {
		if _, err := Parse([]byte(c.in), Defaults{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.in, err, c.want)
		}
	}
}
