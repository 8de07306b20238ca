package wasmhost

import (
	"context"
	"strings"
	"testing"

	"github.com/termhost/termhost/sdk/abi"
)

// emptyModule is the smallest valid wasm module: magic and version.
var emptyModule = []byte("\x00asm\x01\x00\x00\x00")

func TestManifestSection(t *testing.T) {
	for _, c := range []struct {
		name, manifest, want string
	}{
		{"ok", `{"name":"x","version":"1","kind":"dialect","abi":1}`, ""},
		{"no name", `{"version":"1","kind":"dialect","abi":1}`, `"name" is empty`},
		{"no version", `{"name":"x","kind":"dialect","abi":1}`, `"version" is empty`},
		{"other abi", `{"name":"x","version":"1","kind":"dialect","abi":2}`, "ABI 1"},
		{"abi 1.0", `{"name":"x","version":"1","kind":"dialect","abi":1,"abiMinor":0}`, ""},
		{"abi 1.1", `{"name":"x","version":"1","kind":"dialect","abi":1,"abiMinor":1}`, ""},
		{"abi 1.2", `{"name":"x","version":"1","kind":"dialect","abi":1,"abiMinor":2}`, ""},
		{"newer minor", `{"name":"x","version":"1","kind":"dialect","abi":1,"abiMinor":99}`,
			`"abiMinor" is 99; this host speaks ABI 1.0 to 1.2 (the plugin needs a newer termhost)`},
		{"bad kind", `{"name":"x","version":"1","kind":"toaster","abi":1}`, `expected protocol, screen or dialect`},
		{"not json", `{`, "not valid JSON"},
	} {
		wasm := AppendCustomSection(append([]byte(nil), emptyModule...), abi.ManifestSection, []byte(c.manifest))
		m, err := ReadManifest(wasm)
		switch {
		case c.want == "" && (err != nil || m.Name != "x"):
			t.Errorf("%s: %v %+v", c.name, err, m)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ReadManifest([]byte("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("not wasm: %v", err)
	}
	if _, err := ReadManifest(emptyModule); err == nil || !strings.Contains(err.Error(), "not a termhost plugin") {
		t.Errorf("no manifest: %v", err)
	}
	truncated := AppendCustomSection(append([]byte(nil), emptyModule...), abi.ManifestSection, []byte(`{"name":"x"}`))
	if _, err := ReadManifest(truncated[:len(truncated)-3]); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated: %v", err)
	}
}

func TestCompileRejectsModulesWithoutTheABI(t *testing.T) {
	wasm := AppendCustomSection(append([]byte(nil), emptyModule...), abi.ManifestSection,
		[]byte(`{"name":"empty","version":"1","kind":"dialect","abi":1}`))
	_, err := Compile(context.Background(), wasm, Options{})
	if err == nil || !strings.Contains(err.Error(), `missing export "termhost_abi_v1"`) {
		t.Fatalf("err = %v, want a missing-export error", err)
	}
}

// The manifest is found by reading section headers only: behind other
// sections and other custom sections (a name section, say), and every
// prefix of such a module is an error, never a panic or a wrong manifest.
func TestManifestAmongSections(t *testing.T) {
	mod := append([]byte(nil), emptyModule...)
	mod = append(mod, 1, 4, 1, 0x60, 0, 0) // a type section: one func type () -> ()
	mod = AppendCustomSection(mod, "name", make([]byte, 300))
	mod = AppendCustomSection(mod, abi.ManifestSection+"x", []byte(`{"name":"wrong"}`))
	mod = AppendCustomSection(mod, abi.ManifestSection, []byte(`{"name":"x","version":"1","kind":"dialect","abi":1}`))
	if m, err := ReadManifest(mod); err != nil || m.Name != "x" {
		t.Fatalf("ReadManifest = %+v, %v", m, err)
	}
	for n := range len(mod) {
		if m, err := ReadManifest(mod[:n]); err == nil {
			t.Fatalf("a %d-byte prefix of %d read as %+v", n, len(mod), m)
		}
	}
}
