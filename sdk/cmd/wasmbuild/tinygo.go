package main

// A plugin whose directory holds a wasmbuild.json saying {"compiler":
// "tinygo", ...} is built with TinyGo's LLVM backend instead of go build
// (the vt plugin: RATIONALE "VT: built with TinyGo"). Everything the build
// needs comes from places CI reaches: LLVM 19, its wasm32 compiler-rt and
// wasi-libc from Debian, TinyGo's source and the Go toolchain it accepts
// from the module proxy. wasmbuild builds the TinyGo named in the file
// once, into the user cache directory, and pins everything else (target,
// flags, Go version) so the same source gives the same bytes.

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildSpec is a plugin directory's wasmbuild.json.
type buildSpec struct {
	// Compiler is "go" (the default, when there is no file) or "tinygo".
	Compiler string `json:"compiler"`
	// TinyGo is the module version of github.com/tinygo-org/tinygo to
	// build (v0.39.0); Go the toolchain it runs with (go1.25.10: TinyGo
	// accepts a range of Go releases, and the plugin's go.mod may name a
	// newer one); LLVM the Debian LLVM major version it links (19).
	TinyGo string `json:"tinygo,omitempty"`
	Go     string `json:"go,omitempty"`
	LLVM   int    `json:"llvm,omitempty"`
	// Stack is the wasm stack's size in bytes (TinyGo: 0, wasm-ld's
	// default of 64 KiB), for a plugin that recurses deeply (regexp
	// compiles: the dialect plugin needed 1 MiB, RATIONALE).
	Stack int `json:"stack,omitempty"`
}

// readBuildSpec reads dir/wasmbuild.json; without one the plugin is built
// with go build.
func readBuildSpec(dir string) (buildSpec, error) {
	b, err := os.ReadFile(filepath.Join(dir, "wasmbuild.json"))
	if errors.Is(err, os.ErrNotExist) {
		return buildSpec{Compiler: "go"}, nil
	}
	if err != nil {
		return buildSpec{}, err
	}
	var s buildSpec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%s/wasmbuild.json: %w", dir, err)
	}
	switch s.Compiler {
	case "", "go":
		s.Compiler = "go"
	case "tinygo":
		if s.Stack < 0 || s.Stack > 16<<20 || s.Stack%16 != 0 {
			return s, fmt.Errorf(`%s/wasmbuild.json: "stack" is %d; want bytes, a multiple of 16, at most 16 MiB (0: 64 KiB)`, dir, s.Stack)
		}
		if !strings.HasPrefix(s.TinyGo, "v") || !release.MatchString(s.Go) || s.LLVM <= 0 {
			return s, fmt.Errorf(`%s/wasmbuild.json: compiler "tinygo" needs "tinygo" (a module version such as "v0.39.0"), "go" (a Go release such as "go1.25.10") and "llvm" (a major version such as 19); have %q, %q, %d`,
				dir, s.TinyGo, s.Go, s.LLVM)
		}
	default:
		return s, fmt.Errorf(`%s/wasmbuild.json: "compiler" is %q; want "go" or "tinygo"`, dir, s.Compiler)
	}
	return s, nil
}

// tinygoTarget is the target the plugin is built for: wasip1 like go
// build's, with the features wazero runs, linked against Debian's
// wasi-libc and compiler-rt (TinyGo's module zip carries neither: they
// are git submodules). No scheduler: a screen plugin starts no goroutines.
func tinygoTarget(llvm, stack int) string {
	extra := ""
	if stack > 0 {
		extra = fmt.Sprintf(`, "-zstack-size=%d"`, stack)
	}
	return fmt.Sprintf(`{
	"llvm-target": "wasm32-unknown-wasi",
	"cpu": "generic",
	"features": "+bulk-memory,+mutable-globals,+nontrapping-fptoint,+sign-ext,-multivalue,-reference-types",
	"build-tags": ["tinygo.wasm"],
	"goos": "wasip1",
	"goarch": "wasm",
	"linker": "wasm-ld",
	"libc": "",
	"rtlib": "",
	"gc": "precise",
	"scheduler": "none",
	"default-stack-size": 65536,
	"cflags": ["-mbulk-memory", "-mnontrapping-fptoint", "-mno-multivalue", "-mno-reference-types", "-msign-ext",
		"-nostdlibinc", "-isystem", "/usr/include/wasm32-wasi"],
	"ldflags": ["--stack-first", "--no-demangle", "-L/usr/lib/wasm32-wasi", "-lc",
		"/usr/lib/llvm-%[1]d/lib/clang/%[1]d/lib/wasi/libclang_rt.builtins-wasm32.a"%[2]s],
	"extra-files": ["src/runtime/asm_tinygowasm.S"]
}
`, llvm, extra)
}

// debianPackages are what a TinyGo build needs from Debian.
func debianPackages(llvm int) string {
	return fmt.Sprintf("llvm-%[1]d-dev libclang-%[1]d-dev liblld-%[1]d-dev lld-%[1]d clang-%[1]d libclang-rt-%[1]d-dev-wasm32 wasi-libc binaryen", llvm)
}

// tinygoBuild builds the plugin package pkg (run from the current
// directory, inside its module) into out with TinyGo; it returns a
// description of the toolchain.
func tinygoBuild(s buildSpec, dir, pkg, out string) (string, error) {
	what := fmt.Sprintf("TinyGo %s (%s, LLVM %d)", s.TinyGo, s.Go, s.LLVM)
	llvmBin := fmt.Sprintf("/usr/lib/llvm-%d/bin", s.LLVM)
	need := []string{
		filepath.Join(llvmBin, "llvm-config"),
		fmt.Sprintf("/usr/lib/llvm-%[1]d/lib/clang/%[1]d/lib/wasi/libclang_rt.builtins-wasm32.a", s.LLVM),
		"/usr/lib/wasm32-wasi/libc.a",
	}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			return what, fmt.Errorf("%s builds with %s, which needs %s (missing); on Debian: apt-get install %s",
				dir, what, p, debianPackages(s.LLVM))
		}
	}
	// TinyGo runs binaryen's wasm-opt on every wasm it builds (WASMOPT
	// names another).
	if os.Getenv("WASMOPT") == "" {
		if _, err := exec.LookPath("wasm-opt"); err != nil {
			return what, fmt.Errorf("%s builds with %s, which needs binaryen's wasm-opt (not in PATH, and WASMOPT is not set); on Debian: apt-get install %s",
				dir, what, debianPackages(s.LLVM))
		}
	}
	tg, root, err := tinygoTool(s, llvmBin)
	if err != nil {
		return what, err
	}
	gomod, err := findGoMod(dir)
	if err != nil || gomod == "" {
		return what, fmt.Errorf("%s: no go.mod above it (%v)", dir, err)
	}
	modPath, err := modulePath(gomod)
	if err != nil {
		return what, err
	}
	// TinyGo lists packages with the go command of s.Go, which refuses a
	// go.mod that names a newer Go: a go.mod of the same module path
	// saying the older one (the plugin imports nothing outside its module
	// and the standard library) stands in for it.
	tmp, err := os.MkdirTemp("", "wasmbuild-tinygo-*")
	if err != nil {
		return what, err
	}
	defer os.RemoveAll(tmp)
	mod := filepath.Join(tmp, "go.mod")
	goLang := strings.Join(strings.SplitN(strings.TrimPrefix(s.Go, "go"), ".", 3)[:2], ".")
	if err := os.WriteFile(mod, fmt.Appendf(nil, "module %s\n\ngo %s\n", modPath, goLang), 0o644); err != nil {
		return what, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), nil, 0o644); err != nil {
		return what, err
	}
	target := filepath.Join(tmp, "target.json")
	if err := os.WriteFile(target, []byte(tinygoTarget(s.LLVM, s.Stack)), 0o644); err != nil {
		return what, err
	}
	cmd := exec.Command(tg, "build", "-target="+target, "-buildmode=c-shared", "-scheduler=none",
		"-opt=2", "-no-debug", "-o", out, pkg)
	cmd.Env = append(tinygoEnv(s, llvmBin), "TINYGOROOT="+root, "GOFLAGS=-modfile="+mod)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return what, fmt.Errorf("tinygo build %s (%s): %w", dir, what, err)
	}
	return what, nil
}

// tinygoEnv is the environment TinyGo and its go commands run in: the
// pinned Go, LLVM's tools first on PATH, no GOOS/GOARCH/GOFLAGS of the
// caller's.
func tinygoEnv(s buildSpec, llvmBin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOOS", "GOARCH", "GOFLAGS", "GOTOOLCHAIN", "TINYGOROOT", "PATH", "CGO_ENABLED":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOTOOLCHAIN="+s.Go, "PATH="+llvmBin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// tinygoTool returns the tinygo command and its TINYGOROOT, building them
// into the user cache directory the first time (about two minutes: the
// compiler links LLVM). The directory is named by everything that decides
// the tool, and appears whole or not at all.
func tinygoTool(s buildSpec, llvmBin string) (tool, root string, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "", fmt.Errorf("user cache directory for TinyGo: %w", err)
	}
	dir := filepath.Join(cache, "termhost", "tinygo", fmt.Sprintf("%s-%s-llvm%d", s.TinyGo, s.Go, s.LLVM))
	tool, root = filepath.Join(dir, "tinygo"), filepath.Join(dir, "root")
	if _, err := os.Stat(tool); err == nil {
		return tool, root, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", "", err
	}
	fmt.Fprintf(os.Stderr, "wasmbuild: building TinyGo %s with %s and LLVM %d into %s (once)\n", s.TinyGo, s.Go, s.LLVM, dir)
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-*")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	env := append(tinygoEnv(s, llvmBin), "GOFLAGS=-mod=mod")

	// The module zip from the proxy (the go command verifies it against
	// the checksum database).
	dl := exec.Command("go", "mod", "download", "-json", "github.com/tinygo-org/tinygo@"+s.TinyGo)
	dl.Dir, dl.Env, dl.Stderr = tmp, env, os.Stderr
	js, err := dl.Output()
	if err != nil {
		return "", "", fmt.Errorf("download TinyGo %s: %w", s.TinyGo, err)
	}
	var info struct{ Zip, Error string }
	if err := json.Unmarshal(js, &info); err != nil || info.Zip == "" {
		return "", "", fmt.Errorf("download TinyGo %s: %s %v", s.TinyGo, info.Error, err)
	}
	tmpRoot := filepath.Join(tmp, "root")
	if err := unzipModule(info.Zip, "github.com/tinygo-org/tinygo@"+s.TinyGo+"/", tmpRoot); err != nil {
		return "", "", fmt.Errorf("unpack TinyGo %s: %w", s.TinyGo, err)
	}
	// src/net is a git submodule the zip leaves out; the plugin never
	// imports net, but TinyGo's package loader wants the directory.
	if err := os.MkdirAll(filepath.Join(tmpRoot, "src", "net"), 0o755); err != nil {
		return "", "", err
	}
	b := exec.Command("go", "build", "-trimpath", fmt.Sprintf("-tags=llvm%d", s.LLVM), "-o", filepath.Join(tmp, "tinygo"), ".")
	b.Dir, b.Env, b.Stdout, b.Stderr = tmpRoot, env, os.Stderr, os.Stderr
	if err := b.Run(); err != nil {
		return "", "", fmt.Errorf("build TinyGo %s with LLVM %d (on Debian: apt-get install %s): %w", s.TinyGo, s.LLVM, debianPackages(s.LLVM), err)
	}
	final := filepath.Join(tmp, "final")
	if err := os.Mkdir(final, 0o755); err != nil {
		return "", "", err
	}
	for _, n := range []string{"tinygo", "root"} {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(final, n)); err != nil {
			return "", "", err
		}
	}
	if err := os.Rename(final, dir); err != nil {
		if _, serr := os.Stat(tool); serr == nil {
			return tool, root, nil // another wasmbuild finished first
		}
		return "", "", err
	}
	return tool, root, nil
}

// unzipModule unpacks the files of a module zip under prefix into dst.
func unzipModule(zipPath, prefix, dst string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		if !strings.HasPrefix(p, dst+string(filepath.Separator)) {
			return fmt.Errorf("zip entry %q leaves the directory", f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if f.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := writeZipFile(f, p, mode); err != nil {
			return err
		}
	}
	return nil
}

func writeZipFile(f *zip.File, p string, mode os.FileMode) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// modulePath is the module line of a go.mod.
func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}
