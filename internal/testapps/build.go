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
		d, err := os.MkdirTemp("", "termhost-testapps-")
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
