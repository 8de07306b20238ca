package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorpus runs detection and prompt parsing over testdata/corpus: one
// directory per dialect, one file per sample (banners, logins, prompts in
// each mode, written for termhost from the vendors' documentation). A
// file's first line says what its last prompt is: "# mode=… submode=…
// hostname=…"; the rest is what the device sends (LF becomes CR LF),
// with what the user types after a prompt or login field between « and »
// (sent outbound, then echoed).
//
// Detection must name the directory's dialect from the samples alone.
// Samples that carry a banner or version text must all be right; a bare
// prompt ("prompt-only" files) is ambiguous by nature between the
// IOS-like CLIs (cisco_ios, arista_eos, frr all show "name#"), so the
// corpus keeps some on purpose and the overall threshold is 85%: every
// banner sample right, and most prompt-only ones. Parsing the mode,
// sub-mode and hostname with the right dialect must always succeed.
func TestCorpus(t *testing.T) {
	dirs, err := os.ReadDir("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	var total, detected, parsed int
	var misses []string
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join("testdata/corpus", d.Name(), "*.txt"))
		if len(files) == 0 {
			t.Errorf("%s: no samples", d.Name())
		}
		if _, ok := Lookup(d.Name()); !ok {
			t.Errorf("%s: no such dialect", d.Name())
			continue
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			head, body, _ := strings.Cut(string(b), "\n")
			body = strings.ReplaceAll(body, "\n", "\r\n")
			want := map[string]string{}
			rest := strings.TrimPrefix(head, "# mode=")
			want["mode"], rest, _ = strings.Cut(rest, " submode=")
			want["submode"], want["hostname"], _ = strings.Cut(rest, " hostname=")
			total++
			auto := New()
			feedLines(auto, body)
			if got := auto.Info().Dialect; got == d.Name() {
				detected++
			} else {
				misses = append(misses, f+" → "+got)
				if !strings.Contains(f, "prompt-only") {
					t.Errorf("%s: detected %q; a sample with a banner must be detected", f, got)
				}
			}
			sc := forced(t, d.Name())
			feedLines(sc, body)
			in := sc.Info()
			if in.Mode == want["mode"] && in.Submode == want["submode"] && in.Hostname == want["hostname"] {
				parsed++
			} else {
				t.Errorf("%s: mode %q submode %q hostname %q; want %v", f, in.Mode, in.Submode, in.Hostname, want)
			}
		}
	}
	acc := float64(detected) / float64(total)
	t.Logf("corpus: %d samples; detection accuracy %.1f%% (%d/%d); mode parsing %d/%d", total, 100*acc, detected, total, parsed, total)
	for _, m := range misses {
		t.Logf("  missed: %s", m)
	}
	if acc < 0.85 {
		t.Errorf("detection accuracy %.1f%% is below 85%%", 100*acc)
	}
}

// feedLines feeds a sample as a device and its user would: the device's
// bytes up to each «typed text», then the typed line outbound, then the
// rest (its echo first).
func feedLines(sc *Scanner, body string) {
	for {
		i := strings.Index(body, "«")
		if i < 0 {
			sc.Inbound([]byte(body), discard{})
			return
		}
		sc.Inbound([]byte(body[:i]), discard{})
		body = body[i+len("«"):]
		typed, rest, _ := strings.Cut(body, "»")
		sc.Outbound([]byte(typed + "\r"))
		body = typed + rest
	}
}
