package host

import (
	"slices"
	"testing"
	"time"
)

// TestProgramEnv: termhost's own variables (names and prefixes) are left
// out; SSH_AUTH_SOCK is held apart for the decision at each start.
func TestProgramEnv(t *testing.T) {
	own := []EnvVar{{Name: "SSH_PASSPHRASE", Secret: true}, {Name: "PORT"}, {Name: "TERMHOST_*"}}
	env, sock := programEnv([]string{
		"HOME=/h", "SSH_PASSPHRASE=x", "PORT=1", "PORTABLE=yes", "TERMHOST_TOOLS=pty", "TERMHOST=bare",
		"SSH_AUTH_SOCK=/tmp/agent", "PATH=/bin",
	}, own)
	want := []string{"HOME=/h", "PORTABLE=yes", "TERMHOST=bare", "PATH=/bin"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	if sock != "SSH_AUTH_SOCK=/tmp/agent" {
		t.Errorf("agent socket %q", sock)
	}
}

// TestTrimAfterLastSession: freed memory goes back to the OS once every
// session has been quiet for a while, once enough was released, and once
// the last session has ended (it did not: with no live session there was
// no activity to follow), each once.
func TestTrimAfterLastSession(t *testing.T) {
	const quiet, enough = 3 * time.Second, 100
	var tr trimmer
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		now    int
		active []int
		freed  int
		want   bool
	}{
		{1, nil, 0, false},       // no session yet
		{2, []int{2}, 0, false},  // busy
		{4, []int{2}, 0, false},  // quiet 2 s
		{6, []int{2}, 0, true},   // quiet 4 s: trim
		{7, []int{2}, 0, false},  // already trimmed after that activity
		{8, []int{8}, 150, true}, // busy, but enough released
		{9, nil, 0, false},       // the last session ended
		{11, nil, 0, false},      // 2 s since
		{13, nil, 0, true},       // 4 s since: trim
		{20, nil, 0, false},      // once
	}
	for _, st := range steps {
		var active []time.Time
		for _, a := range st.active {
			active = append(active, at(a))
		}
		if got := tr.due(at(st.now), active, st.freed, quiet, enough); got != st.want {
			t.Fatalf("at %d s (active %v, freed %d): due %v, want %v", st.now, st.active, st.freed, got, st.want)
		}
	}
}
