package session

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// trustedFake is a fake binding that says whether it is trusted.
type trustedFake struct {
	*fake
	ok bool
}

func (f trustedFake) Trusted() bool { return f.ok }

// mute is a binding that cannot say whether it is trusted.
type mute struct{ Binding }

// A session's chain is trusted with secrets only when every binding of it,
// its screen included, says it is trusted; one that cannot say is not.
func TestChainTrusted(t *testing.T) {
	for _, c := range []struct {
		what  string
		chain []Binding
		bad   string
	}{
		{"all trusted", []Binding{trustedFake{&fake{name: "telnet"}, true}, trustedFake{&fake{name: "dialect"}, true}}, ""},
		{"an unpinned drop-in", []Binding{trustedFake{&fake{name: "telnet"}, true}, trustedFake{&fake{name: "upper"}, false}}, "upper"},
		{"a binding that cannot say", []Binding{trustedFake{&fake{name: "telnet"}, true}, mute{&fake{name: "mystery"}}}, "mystery"},
	} {
		for _, screenOK := range []bool{true, false} {
			s := &Session{chain: c.chain, screen: trustedFake{&fake{name: "vt"}, screenOK}}
			want := c.bad
			if !screenOK {
				want = strings.TrimPrefix(want+",vt", ",")
			}
			got := strings.Join(s.UntrustedPlugins(), ",")
			err := s.SecretsAllowed()
			if got != want || s.ChainTrusted() != (want == "") || (want == "") != (err == nil) ||
				(err != nil && (!errors.Is(err, ErrUntrustedPlugin) || !strings.Contains(err.Error(), "--plugin-pin"))) {
				t.Errorf("%s (screen trusted %v): untrusted %q, ChainTrusted %v, SecretsAllowed %v; want %q", c.what, screenOK, got, s.ChainTrusted(), err, want)
			}
		}
	}
}

// No credential goes through a session whose chain holds a plugin that is
// neither first-party nor pinned: it would see it on its way out. Nothing
// is written to the peer. (host/device's test of the same name covers
// SendSecret and Login.)
func TestSecretsRefusedThroughUntrustedPlugin(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{}, []*fake{{name: "telnet"}, {name: "upper", untrusted: true}}, nil)
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := peer.Read(b)
		got <- b[:n]
	}()
	for _, mask := range []bool{true, false} {
		err := s.SendCredential(ctxTimeout(t, 2*time.Second), []byte(testSecret), mask)
		if !errors.Is(err, ErrUntrustedPlugin) || !strings.Contains(err.Error(), `plugin "upper"`) {
			t.Fatalf("SendCredential (mask %v) through an unpinned plugin: %v", mask, err)
		}
	}
	select {
	case b := <-got:
		t.Fatalf("the peer got %q", b)
	case <-time.After(200 * time.Millisecond):
	}
}
