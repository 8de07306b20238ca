package session

import (
	"errors"
	"strings"
	"testing"
)

// trustedFake is a fake binding that says whether it is trusted.
type trustedFake struct {
	*fake
	ok bool
}

func (f trustedFake) Trusted() bool { return f.ok }

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
		{"a binding that cannot say", []Binding{trustedFake{&fake{name: "telnet"}, true}, &fake{name: "mystery"}}, "mystery"},
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
