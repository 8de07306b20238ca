// Command wasmbuild builds a Go termhost plugin reproducibly and stamps its
// manifest into the module as the "termhost.manifest" custom section:
//
//	go run github.com/termhost/termhost/sdk/cmd/wasmbuild -o my.wasm ./path/to/plugin
//
// The plugin directory must hold a manifest.json (see sdk/ABI.md). The output
// is written to a temporary file and renamed into place, so a host watching
// the plugin directory never sees a half-written module; its directory is
// created if needed.
//
// The same source gives the same bytes only with the same Go toolchain, so
// wasmbuild pins it: the inner go build runs with GOTOOLCHAIN set to the
// toolchain the plugin's go.mod names (its toolchain line, else its go line
// when that names a release, such as "go 1.26.8"). A newer or older local
// Go then downloads that toolchain from the module proxy, once. -toolchain
// overrides the pin ("local": whatever go is installed).
//
// A plugin directory with a wasmbuild.json saying {"compiler": "tinygo",
// "tinygo": "v0.39.0", "go": "go1.25.10", "llvm": 19} is built with that
// TinyGo instead (tinygo.go): the vt, telnet and shell plugins are.
// wasmbuild builds the TinyGo once into the user cache directory, from the
// module proxy, against Debian's LLVM, compiler-rt for wasm32 and
// wasi-libc, and pins its target and flags; -toolchain and -overlay do not
// apply.
//
// With -check, wasmbuild builds into a temporary file and compares it with
// the existing output instead of replacing it, and exits with status 3 if
// they differ: make check-plugins uses this to prove each committed .wasm is
// what its source builds to.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

func main() {
	var o options
	flag.StringVar(&o.out, "o", "", "output .wasm file (default: <dir>/<name>.wasm); its directory is created if needed")
	flag.StringVar(&o.version, "version", "", "override the manifest's version")
	flag.StringVar(&o.toolchain, "toolchain", "", `Go toolchain for the build, e.g. go1.26.8, or "local" (default: the one the plugin's go.mod names)`)
	flag.BoolVar(&o.check, "check", false, "build into a temporary file and fail unless it is identical to the output file")
	flag.StringVar(&o.overlay, "overlay", "", "go build's -overlay file: add or replace source files without touching the tree (e.g. a dialect table)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wasmbuild [-o out.wasm] [-version v] [-toolchain go1.x.y|local] [-overlay file.json] [-check] <plugin package dir>\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	o.dir = flag.Arg(0)
	res, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmbuild:", err)
		var mismatch *mismatchError
		if errors.As(err, &mismatch) {
			os.Exit(3)
		}
		os.Exit(1)
	}
	if o.check {
		fmt.Printf("%s matches a fresh build of %s (%s)\n", res.out, o.dir, res.goVersion)
	}
}

type options struct {
	dir, out, version string
	toolchain         string // "" pinned by go.mod, "local", or a toolchain name
	check             bool
	overlay           string // go build -overlay
}

type result struct {
	out       string // the output file
	goVersion string // the toolchain that built it, as `go env GOVERSION` says
}

// mismatchError is a -check failure: the output file is not what the
// source builds to.
type mismatchError struct {
	out, dir, goVersion string
	have, fresh         []byte
}

func (e *mismatchError) Error() string {
	short := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:])[:12] }
	what := "differs from"
	if e.have == nil {
		what = "is missing; compared with"
	}
	return fmt.Sprintf("%s %s a fresh build of %s with %s (sha256 %s, fresh %s)",
		e.out, what, e.dir, e.goVersion, short(e.have), short(e.fresh))
}

func build(o options) (result, error) {
	raw, err := os.ReadFile(filepath.Join(o.dir, "manifest.json"))
	if err != nil {
		return result{}, fmt.Errorf("read manifest: %w", err)
	}
	var man abi.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return result{}, fmt.Errorf("%s/manifest.json: %w", o.dir, err)
	}
	if o.version != "" {
		man.Version = o.version
	}
	man.ABI, man.ABIMinor = abi.Version, abi.Minor
	section, err := json.Marshal(man)
	if err != nil {
		return result{}, err
	}
	out := o.out
	if out == "" {
		out = filepath.Join(o.dir, man.Name+".wasm")
	}
	spec, err := readBuildSpec(o.dir)
	if err != nil {
		return result{}, err
	}
	var env []string
	var goVersion string
	if spec.Compiler == "tinygo" {
		if o.overlay != "" || o.toolchain != "" {
			return result{}, fmt.Errorf("%s builds with TinyGo (its wasmbuild.json): -overlay and -toolchain are for go build", o.dir)
		}
	} else if env, goVersion, err = toolchainEnv(o.dir, o.toolchain); err != nil {
		return result{}, err
	}
	res := result{out: out, goVersion: goVersion}

	tmpDir := filepath.Dir(out)
	if o.check {
		tmpDir = ""
	} else if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return res, fmt.Errorf("output directory: %w", err)
	}
	tmp, err := os.CreateTemp(tmpDir, ".wasmbuild-*")
	if err != nil {
		return res, err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName)

	pkg := o.dir
	if !filepath.IsAbs(pkg) && !strings.HasPrefix(pkg, ".") {
		pkg = "./" + pkg
	}
	if spec.Compiler == "tinygo" {
		if res.goVersion, err = tinygoBuild(spec, o.dir, pkg, tmpName); err != nil {
			return res, err
		}
	} else if err := goBuild(o, env, goVersion, pkg, tmpName); err != nil {
		return res, err
	}
	wasm, err := os.ReadFile(tmpName)
	if err != nil {
		return res, err
	}
	wasm = wasmhost.AppendCustomSection(wasm, abi.ManifestSection, section)
	if _, err := wasmhost.ReadManifest(wasm); err != nil {
		return res, fmt.Errorf("%s/manifest.json: %w", o.dir, err)
	}
	if o.check {
		have, err := os.ReadFile(out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, err
		}
		if !bytes.Equal(have, wasm) {
			return res, &mismatchError{out: out, dir: o.dir, goVersion: res.goVersion, have: have, fresh: wasm}
		}
		return res, nil
	}
	if err := os.WriteFile(tmpName, wasm, 0o644); err != nil {
		return res, err
	}
	return res, os.Rename(tmpName, out)
}

// goBuild builds pkg into out with go build for wasip1.
func goBuild(o options, env []string, goVersion, pkg, out string) error {
	// Every flag that decides the bytes is set here: a user's GOFLAGS (in
	// the environment or go's env file) is replaced, and VCS stamping,
	// which go build does by default in a checkout, is off.
	args := []string{"build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-ldflags=-buildid=", "-o", out}
	if o.overlay != "" {
		ov, err := filepath.Abs(o.overlay)
		if err != nil {
			return err
		}
		args = append(args, "-overlay", ov)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(env, "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s (%s): %w", o.dir, goVersion, err)
	}
	return nil
}

// toolchainEnv returns the environment for the inner go build, with
// GOTOOLCHAIN pinned, and the version of Go it runs. Asking that go for its
// version first downloads a pinned toolchain that is not installed, with
// the go command's own progress message.
func toolchainEnv(dir, toolchain string) ([]string, string, error) {
	if toolchain == "" {
		var err error
		if toolchain, err = pinnedToolchain(dir); err != nil {
			return nil, "", err
		}
	}
	env := append(os.Environ(), "GOTOOLCHAIN="+toolchain)
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, os.Stderr
	v, err := cmd.Output()
	if err != nil {
		//lint:ignore ST1005 "Go" is a name
		return nil, "", fmt.Errorf("Go toolchain %s for %s: %w", toolchain, dir, err)
	}
	return env, strings.TrimSpace(string(v)), nil
}

// release is a Go release name: go1.26.8, go1.27rc1; not a language
// version such as go1.26.
var release = regexp.MustCompile(`^go1\.\d+(\.\d+|rc\d+|beta\d+)`)

// pinnedToolchain is the toolchain the go.mod of dir's module names: its
// toolchain line, else its go line when that is a release. Without either
// (or with "toolchain default") it is "local".
func pinnedToolchain(dir string) (string, error) {
	gomod, err := findGoMod(dir)
	if err != nil || gomod == "" {
		return "local", err
	}
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	var goLine, toolchainLine string
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "//")
		switch f := strings.Fields(line); {
		case len(f) == 2 && f[0] == "go":
			goLine = "go" + f[1]
		case len(f) == 2 && f[0] == "toolchain":
			toolchainLine = f[1]
		}
	}
	if toolchainLine == "default" {
		return "local", nil
	}
	for _, t := range []string{toolchainLine, goLine} {
		if release.MatchString(t) {
			return t, nil
		}
	}
	return "local", nil
}

// findGoMod returns the go.mod of the module dir is in, or "" outside any.
func findGoMod(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(d, "go.mod")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", nil
		}
		d = parent
	}
}
