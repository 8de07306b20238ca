package session

import (
	"bytes"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/testutil"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// TestScreenRepliesOnlyToWhoAsked (SPEC DONE-5): the screen's answer to a
// terminal query reaches the program while it is there to read it, and is
// dropped — never typed into the shell that runs next — when the
// terminal says the foreground group's leader has exited, or when the
// foreground group is the shell itself while its integration says a
// command runs (a builtin, or a program that exited).
func TestScreenRepliesOnlyToWhoAsked(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	screen := &fake{name: "screen",
		data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
			if bytes.Contains(p, []byte("\x1b[6n")) {
				s.Emit(abi.ToPeer, []byte("\x1b[1;1R"))
			}
			return abi.Consumed, nil
		},
	}
	// The shell integration's marks, as the shell plugin makes them: "C"
	// a command starts, "B" a prompt.
	marks := &fake{name: "marks",
		data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
			if dir == abi.Outbound {
				return abi.Continue, nil
			}
			for _, c := range p {
				switch c {
				case 'C':
					s.Emit(abi.Event, []byte(`{"type":"command","source":"shell"}`))
				case 'B':
					s.Emit(abi.Event, []byte(`{"type":"prompt","source":"shell"}`))
				default:
					s.Emit(abi.ToUser, []byte{c})
				}
			}
			return abi.Consumed, nil
		},
	}
	s, peer, pl := testKind(t, r, Spec{Kind: "pipe"}, []*fake{marks}, screen)
	answered := func(want bool) {
		t.Helper()
		peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		b := make([]byte, 16)
		n, err := peer.Read(b)
		switch {
		case want && string(b[:n]) != "\x1b[1;1R":
			t.Fatalf("the query was not answered: %q, %v", b[:n], err)
		case !want && n > 0:
			t.Fatalf("an answer reached the peer: %q", b[:n])
		case !want && !isTimeout(err):
			t.Fatalf("read: %v", err)
		}
	}
	set := func(st link.InputState, leader bool) {
		v := int32(st)
		if leader {
			v |= 0x100
		}
		pl.awaiting.Store(v)
	}

	write(peer, "B")              // at the shell's prompt
	set(link.InputWaiting, true)  // the shell itself reads
	write(peer, "x\x1b[6n")       // a prompt that asks where the cursor is
	answered(true)                // …is answered
	write(peer, "C")              // a command starts
	set(link.InputWaiting, false) // a program of it reads
	write(peer, "\x1b[6n")        //
	answered(true)                // answered
	set(link.InputGone, false)    // the program has exited
	write(peer, "\x1b[6n")        //
	answered(false)               // dropped
	set(link.InputWaiting, true)  // the shell is back in front, its prompt not drawn yet
	write(peer, "\x1b[6n")        //
	answered(false)               // dropped: it would be typed at the next prompt
	write(peer, "\x1b[6nB")       // the same, in the chunk that draws the prompt
	answered(false)               //
	write(peer, "B\x1b[6n")       // a query after the prompt is the shell's own
	answered(true)                //
	write(peer, "C")              // another command
	set(link.InputBusy, false)    // its program asks, then works
	write(peer, "\x1b[6n")        //
	set(link.InputWaiting, false) // …then reads
	answered(true)                // the held answer goes out
	set(link.InputBusy, false)    // a program asks and exits:
	write(peer, "\x1b[6n")        // while it exits it is busy,
	set(link.InputGone, false)    // then gone
	answered(false)               // the held answer is dropped
	set(link.InputBusy, false)    // one that asks and works on
	write(peer, "\x1b[6n")        //
	answered(true)                // gets its answer after replyHold
	if n := s.Replies(); n != 5 {
		t.Errorf("Replies = %d, want 5 (the answers sent)", n)
	}
	write(peer, "B")
	if !testutil.Poll(5*time.Second, func() bool { return s.Shell().AtPrompt() }) {
		st := s.Shell()
		t.Errorf("ShellState %+v: not at its prompt", st)
	}
}
