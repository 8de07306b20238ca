package device

import "testing"

func TestPromptShape(t *testing.T) {
	for _, c := range []struct {
		learned, line string
		want          bool
	}{
		{"edge-r1::>", "edge-r1::> ", true},
		{"r1>", "r1#", true},
		{"r1>", "r1(config-if)#", true},
		{"r1>", "r10>", false},      // another host
		{"r1>", "r1 is up", false},  // output, no prompt end
		{"r1>", "r1 login:", false}, // a login field
		{"r1>", "Password:", false},
		{"> ", ">", true}, // no host name: only itself
		{"> ", "#", false},
		{"[admin@mt] >", "[admin@mt] /ip>", false},
	} {
		if got := shapeOf(c.learned).matches(c.line); got != c.want {
			t.Errorf("learned %q, line %q: %v, want %v", c.learned, c.line, got, c.want)
		}
	}
}
