package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
)

const upper = "../../examples/upper"

// The README's walkthrough builds into a plugins.d that does not exist yet.
func TestCreatesOutputDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "plugins.d", "dialects", "upper.wasm")
	res, err := build(options{dir: upper, out: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.out != out {
		t.Errorf("built %s, want %s", res.out, out)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := wasmhost.ReadManifest(wasm); err != nil || m.Name != "upper" {
		t.Errorf("manifest %+v, %v", m, err)
	}
	for _, d := range []string{filepath.Dir(out), filepath.Dir(filepath.Dir(out))} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		// 0755 less the umask: never more than that, always usable by us.
		if perm := st.Mode().Perm(); perm&^0o755 != 0 || perm&0o700 != 0o700 {
			t.Errorf("%s has mode %v, want 0755 (less the umask)", d, perm)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(out))
	if len(ents) != 1 {
		t.Errorf("output directory holds %d entries, want only the plugin", len(ents))
	}
}

// -check passes for the committed example (built with the toolchain go.mod
// pins, whatever go runs the test), and names the file, the source and the
// toolchain when a file differs or is missing.
func TestCheck(t *testing.T) {
	res, err := build(options{dir: upper, check: true})
	if err != nil {
		t.Fatalf("the committed %s/upper.wasm: %v", upper, err)
	}
	pinned, err := pinnedToolchain(upper)
	if err != nil {
		t.Fatal(err)
	}
	if pinned != "local" && res.goVersion != pinned {
		t.Errorf("built with %s, want the pinned %s", res.goVersion, pinned)
	}

	committed, err := os.ReadFile(filepath.Join(upper, "upper.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "upper.wasm")
	os.WriteFile(tampered, append(committed, 0), 0o644)
	missing := filepath.Join(t.TempDir(), "none.wasm")
	for _, tc := range []struct{ out, want string }{
		{tampered, tampered + " differs from a fresh build of " + upper + " with " + res.goVersion},
		{missing, missing + " is missing; compared with a fresh build of " + upper},
	} {
		_, err := build(options{dir: upper, out: tc.out, check: true})
		var mismatch *mismatchError
		if !errors.As(err, &mismatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("check of %s: %v; want a mismatch saying %q", tc.out, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(tampered); len(b) != len(committed)+1 {
		t.Error("-check replaced the file it checks")
	}
}

// The bytes do not depend on the go settings of whoever builds: without
// a go env file (GOENV=off, a user's machine without this one's settings)
// and with GOFLAGS that would stamp VCS information or change the
// compiler's output, the committed example still matches (issue 34).
func TestCheckIgnoresGoSettings(t *testing.T) {
	t.Setenv("GOENV", "off")
	t.Setenv("GOFLAGS", "-buildvcs=true -gcflags=-N")
	if _, err := build(options{dir: upper, check: true}); err != nil {
		t.Fatalf("the committed %s/upper.wasm with GOENV=off and GOFLAGS set: %v", upper, err)
	}
}

func TestPinnedToolchain(t *testing.T) {
	for _, tc := range []struct{ gomod, want string }{
		{"module x\n\ngo 1.26.8\n", "go1.26.8"},
		{"module x\n\ngo 1.26.0\n\ntoolchain go1.27.1 // newer than the go line\n", "go1.27.1"},
		{"module x\n\ngo 1.26\n", "local"},
		{"module x\n\ngo 1.26.8\n\ntoolchain default\n", "local"},
		{"module x\n", "local"},
	} {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "go.mod"), []byte(tc.gomod), 0o644)
		pkg := filepath.Join(root, "plugins", "p")
		os.MkdirAll(pkg, 0o755)
		if got, err := pinnedToolchain(pkg); err != nil || got != tc.want {
			t.Errorf("go.mod %q: %q, %v; want %q", tc.gomod, got, err, tc.want)
		}
	}
	// termhost's own: the toolchain that built the committed plugins.
	if got, _ := pinnedToolchain("."); !release.MatchString(got) {
		t.Errorf("termhost's go.mod pins %q, want a Go release", got)
	}
}

// A wasmbuild.json names its compiler and, for TinyGo, every version that
// decides the bytes; anything else is refused, naming the field.
func TestBuildSpec(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"", ""},
		{`{"compiler": "go"}`, ""},
		{`{"compiler": "tinygo", "tinygo": "v0.39.0", "go": "go1.25.10", "llvm": 19}`, ""},
		{`{"compiler": "gccgo"}`, `"compiler" is "gccgo"; want "go" or "tinygo"`},
		{`{"compiler": "tinygo", "go": "go1.25.10", "llvm": 19}`, `needs "tinygo"`},
		{`{"compiler": "tinygo", "tinygo": "v0.39.0", "go": "1.25", "llvm": 19}`, `"go" (a Go release`},
		{`{"compiler": "tinygo", "tinygo": "v0.39.0", "go": "go1.25.10"}`, `"llvm" (a major version`},
		{`{"compiler": "tinygo", "opt": 3}`, `unknown field "opt"`},
		{`[`, "wasmbuild.json"},
	} {
		dir := t.TempDir()
		if c.file != "" {
			if err := os.WriteFile(filepath.Join(dir, "wasmbuild.json"), []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, err := readBuildSpec(dir)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.file, err)
		case c.want == "" && s.Compiler == "":
			t.Errorf("%s: no compiler", c.file)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %s", c.file, err, c.want)
		}
	}
}

// The vt plugin, built with TinyGo, is refused -overlay and -toolchain
// (they are go build's) before anything is built.
func TestTinyGoRefusesGoFlags(t *testing.T) {
	for _, o := range []options{{dir: "../../../plugins/vt", toolchain: "local", check: true}, {dir: "../../../plugins/vt", overlay: "x.json", check: true}} {
		if _, err := build(o); err == nil || !strings.Contains(err.Error(), "builds with TinyGo") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// "stack" is bytes, a multiple of 16, at most 16 MiB.
func TestBuildSpecStack(t *testing.T) {
	for _, c := range []struct {
		stack string
		ok    bool
	}{{"0", true}, {"1048576", true}, {"-16", false}, {"1000", false}, {"33554432", false}} {
		dir := t.TempDir()
		js := `{"compiler": "tinygo", "tinygo": "v0.39.0", "go": "go1.25.10", "llvm": 19, "stack": ` + c.stack + `}`
		if err := os.WriteFile(filepath.Join(dir, "wasmbuild.json"), []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readBuildSpec(dir)
		if c.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), `"stack" is `+c.stack) {
			t.Errorf("stack %s: %v", c.stack, err)
		}
	}
}
