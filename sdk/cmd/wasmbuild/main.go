// Command wasmbuild builds a Go termhost plugin reproducibly and stamps its
// manifest into the module as the "termhost.manifest" custom section:
//
//	go run github.com/termhost/termhost/sdk/cmd/wasmbuild -o my.wasm ./path/to/plugin
//
// The plugin directory must hold a manifest.json (see sdk/ABI.md). The output
// is written to a temporary file and renamed into place, so a host watching
// the plugin directory never sees a half-written module.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

func main() {
	out := flag.String("o", "", "output .wasm file (default: <dir>/<name>.wasm)")
	version := flag.String("version", "", "override the manifest's version")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wasmbuild [-o out.wasm] [-version v] <plugin package dir>\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := build(flag.Arg(0), *out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "wasmbuild:", err)
		os.Exit(1)
	}
}

func build(dir, out, version string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	var man abi.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	if version != "" {
		man.Version = version
	}
	man.ABI = abi.Version
	section, err := json.Marshal(man)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(dir, man.Name+".wasm")
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".wasmbuild-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName)

	pkg := dir
	if !filepath.IsAbs(pkg) && !bytes.HasPrefix([]byte(pkg), []byte(".")) {
		pkg = "./" + pkg
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-ldflags=-buildid=", "-o", tmpName, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", dir, err)
	}
	wasm, err := os.ReadFile(tmpName)
	if err != nil {
		return err
	}
	wasm = wasmhost.AppendCustomSection(wasm, abi.ManifestSection, section)
	if _, err := wasmhost.ReadManifest(wasm); err != nil {
		return fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	if err := os.WriteFile(tmpName, wasm, 0o644); err != nil {
		return err
	}
	return os.Rename(tmpName, out)
}
