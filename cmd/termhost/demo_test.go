package main

import (
	"os"
	"strings"
	"testing"
)

func TestColorDecision(t *testing.T) {
	for _, tc := range []struct {
		mode     colorMode
		noColor  string
		terminal bool
		want     bool
	}{
		{colorAuto, "", true, true},
		{colorAuto, "", false, false}, // a pipe or a file
		{colorAuto, "1", true, false}, // https://no-color.org
		{colorAuto, "0", true, false}, // any non-empty value
		{colorAlways, "1", false, true},
		{colorNever, "", true, false},
	} {
		if got := tc.mode.enabled(tc.noColor, tc.terminal); got != tc.want {
			t.Errorf("--color=%s NO_COLOR=%q terminal=%v: colour %v, want %v", tc.mode, tc.noColor, tc.terminal, got, tc.want)
		}
	}
	var m colorMode
	for in, want := range map[string]colorMode{"true": colorAlways, "false": colorNever, "auto": colorAuto, "ALWAYS": colorAlways} {
		if err := m.Set(in); err != nil || m != want {
			t.Errorf("Set(%q): %s, %v", in, m, err)
		}
	}
	if isTerminal(&strings.Builder{}) {
		t.Error("a strings.Builder is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}

func TestEscapeControls(t *testing.T) {
	for in, want := range map[string]string{
		"GigabitEthernet0/0 is \x1b[32mup\x1b[0m": `GigabitEthernet0/0 is \e[32mup\e[0m`,
		"\r          \redge-r1>":                  `\r          \redge-r1>`,
		"a\b \bb\tc\x00\x7f":                      "a\\b \\bb\tc\\x00\\x7f",
		"caf\xc3\xa9 \xff \u009b":                 `café \xff \u009b`,
	} {
		if got := escapeControls(in); got != want {
			t.Errorf("escapeControls(%q) = %q, want %q", in, got, want)
		}
	}
}

// The demo writes no escape codes into a pipe, and shows the device's own
// colour readably instead; --color=always wins over NO_COLOR.
func TestDemoColour(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo twice")
	}
	stdout, stderr, status := runBinary(t, nil, "demo", "--cache-dir", cacheDir())
	if status != 0 {
		t.Fatalf("demo: status %d\n%s", status, stderr)
	}
	if i := strings.IndexByte(stdout, 0x1b); i >= 0 {
		t.Errorf("escape code in piped output: %q", stdout[max(0, i-40):min(len(stdout), i+40)])
	}
	for _, want := range []string{"[1] → telnet_connect", `is \e[32mup\e[0m`, "demo finished"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("piped demo output lacks %q", want)
		}
	}

	stdout, stderr, status = runBinary(t, []string{"NO_COLOR=1"}, "demo", "--color=always", "--cache-dir", cacheDir())
	if status != 0 {
		t.Fatalf("demo --color=always: status %d\n%s", status, stderr)
	}
	for _, want := range []string{"\x1b[1m[1] → telnet_connect", "is \x1b[32mup\x1b[0m"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo --color=always lacks %q", want)
		}
	}
}
