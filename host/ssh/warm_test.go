package ssh

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/sshtest"
)

// count says how many times the server received an exec of cmd.
func (f *fixture) count(cmd string) int {
	n := 0
	for _, c := range f.srv.Commands() {
		if c == cmd {
			n++
		}
	}
	return n
}

// TestWarmRetryNeverRunsTwice: a warm connection whose exec fails once its
// request may have reached the server (here the server runs the command,
// then closes the channel or the whole connection without answering, as
// when an answer is lost) is not retried on a fresh connection: the
// command may have run, and must not run twice. The call fails instead.
// It failed before (the channel case): the pool took "no answer" for
// "nothing ran" and ran the command again.
func TestWarmRetryNeverRunsTwice(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply sshtest.ExecReply
	}{{"channel closed", sshtest.ChannelClosed}, {"connection closed", sshtest.ConnectionClosed}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Limits{})
			f.exec(t, ExecRequest{Owner: "o1", CredID: "pw", Command: "true"})
			f.srv.SetExecReply(c.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := f.pool.Execute(ctx, ExecRequest{Owner: "o1", CredID: "pw", Command: "echo once"})
			var ce *ConnectError
			if !errors.As(err, &ce) {
				t.Fatalf("an exec whose answer never came: %v, want a ConnectError", err)
			}
			if n := f.count("echo once"); n != 1 {
				t.Fatalf("the server received the command %d times (%v); want once: %v", n, f.srv.Commands(), err)
			}
		})
	}
}

// TestWarmConnectionClosedByServer: a warm connection the server closed
// (as an idle timeout on the server does) does not fail the next call,
// even one that comes before termhost has seen the close: the warm
// connection failed before its exec request could leave (the server
// confirmed no channel), and the call runs once on a fresh connection.
// Before session.InboundWalks told that case apart, such a call either
// went to a fresh connection on a guess or, guessing safe, failed.
func TestWarmConnectionClosedByServer(t *testing.T) {
	f := newFixture(t, Limits{})
	for i := range 10 {
		f.exec(t, ExecRequest{Owner: "o1", CredID: "pw", Command: "true"})
		f.srv.DropConnections()
		cmd := fmt.Sprintf("echo %d", i)
		if r := f.exec(t, ExecRequest{Owner: "o1", CredID: "pw", Command: cmd}); r.Stdout != cmd[5:]+"\n" || f.count(cmd) != 1 {
			t.Fatalf("%s: %+v, received %d times", cmd, r.Result, f.count(cmd))
		}
	}
}
