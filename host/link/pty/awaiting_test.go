package pty

import (
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/testutil"
)

var _ link.InputWaiter = (*PTY)(nil)

// TestAwaiting: a shell reading its terminal is waiting, and so is a
// program polling the terminal alone (python's readline); a program
// asleep or running is busy, and the group is told apart from the
// terminal's first program.
func TestAwaiting(t *testing.T) {
	state := func(p *PTY, want link.InputState, leader bool) {
		t.Helper()
		var got link.Awaiting
		if !testutil.Poll(5*time.Second, func() bool {
			got = p.Awaiting()
			return got.State == want && got.Leader == leader
		}) {
			t.Fatalf("Awaiting = %+v (%v), want %v with leader %v", got, got.State, want, leader)
		}
	}
	sh := start(t, "sh")
	collect(sh)
	state(sh, link.InputWaiting, true)
	sh.Write([]byte("sleep 30\n"))
	state(sh, link.InputBusy, false)
	sh.Signal("interrupt")
	state(sh, link.InputWaiting, true)
	sh.Write([]byte("exec sh -c 'while :; do :; done'\n"))
	state(sh, link.InputBusy, true)

	py := testutil.NeedProgram(t, "python3")
	p := start(t, py, "-q", "-i")
	collect(p)
	state(p, link.InputWaiting, true) // readline polls the terminal alone
	p.Write([]byte("import time; time.sleep(30)\n"))
	state(p, link.InputBusy, true)
}
