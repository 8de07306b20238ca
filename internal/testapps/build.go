// Package testapps holds small terminal programs for tests (SPEC TUI-5):
// echo (line-oriented), menu (a full-screen menu with a reverse-video
// selection, under application cursor keys), progress (a bar redrawn with
// CR) and editor (a tiny full-screen editor with bracketed paste and a
// cursor-position query), and bubbletea (a Bubble Tea list, in a Go module
// of its own). Build compiles one for a test.
package testapps

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Build compiles the test app name once per test binary and returns the
// path of the executable.
func Build(t testing.TB, name string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp(scratch(), "termhost-testapps-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), name)
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build test app %s: %v\n%s", name, err, b)
	}
	built[name] = out
	return out
}

// scratch is where the apps are built: beside the test binary when `go
// test` built it in its own work directory (removed when the run ends, so
// nothing is left in the temporary directory), else the temporary
// directory.
func scratch() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	d := filepath.Dir(exe)
	if strings.Contains(d, "go-build") {
		return d
	}
	return ""
}
