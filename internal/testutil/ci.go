package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run under CI (CI set, as CI services and
// .ci/run do), where every peer program and data set is installed.
func InCI() bool { return os.Getenv("CI") != "" }

// SkipUnlessCI skips the test with the message, except under CI, where
// what is missing was meant to be there (.ci/run installs it), so the test
// fails instead of passing unseen.
func SkipUnlessCI(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s; under CI (CI set) what a test needs must be there (.ci/run installs the programs), so this fails", msg)
	}
	t.Skip(msg)
}

// NeedProgram returns the path of the named program, or skips the test
// (fails it under CI) when it is not on PATH.
func NeedProgram(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		SkipUnlessCI(t, "%s is not installed", name)
	}
	return p
}
