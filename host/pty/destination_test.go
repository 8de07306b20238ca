package pty

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/host/session"
)

// A PTY's destination is its foreground program, resolved; a process of
// another session that holds its terminal open is reported as an outsider
// (it could read a secret typed there).
func TestPTYDestination(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	want, _ := filepath.EvalSymlinks(sleep)
	r := session.NewRegistry(session.Limits{}, session.Config{})
	t.Cleanup(r.Close)
	s, err := Open(context.Background(), r, nil, Programs{}, Options{Command: "sleep", Args: []string{"30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var d session.Destination
	eventually(t, "the foreground program", func() bool {
		d = s.Destination()
		return d.Foreground != nil && len(d.Foreground.Exes) > 0 && d.Foreground.Exes[0] == want
	})
	if d.Kind != session.KindPTY || d.Host != "" || len(d.Foreground.Outsiders) != 0 {
		t.Fatalf("destination: %+v %+v", d, d.Foreground)
	}
	slave, err := os.Readlink("/proc/" + strconv.Itoa(d.Foreground.Pgid) + "/fd/0")
	if err != nil {
		t.Skipf("cannot see the terminal: %v", err)
	}
	f, err := os.OpenFile(slave, os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open %s: %v", slave, err)
	}
	spy := exec.Command("sleep", "30")
	spy.Stdin = f
	if err := spy.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer func() { spy.Process.Kill(); spy.Wait() }()
	eventually(t, "the outsider", func() bool {
		d = s.Destination()
		return d.Foreground != nil && len(d.Foreground.Outsiders) == 1
	})
}

// eventually waits for cond, with a bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
