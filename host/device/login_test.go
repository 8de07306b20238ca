package device

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/host/session"
)

// A prompt that arrives cut in two reads ("admin@r1>", and its blank a
// moment later): Login waits for the stream to settle, then matches the
// whole line, not just what came after the cut.
func TestLoginPromptCutByARead(t *testing.T) {
	r := newRegistry(t, session.Config{})
	s, peer := testKind(t, r, session.Spec{}, nil)
	go func() {
		in := bufio.NewReader(peer)
		line := func() string { l, _ := in.ReadString('\r'); return strings.TrimSpace(l) }
		write(peer, "\r\nr1 (ttyp0)\r\n\r\nlogin: ")
		if line() != "admin" {
			return
		}
		write(peer, "admin\r\nPassword:")
		if line() != "s3cret-pw" {
			return
		}
		write(peer, "\r\n--- an OS (a simulator)\r\nadmin@r1>")
		time.Sleep(loginSettle / 3) // within the settle time: more output, so not the prompt yet
		write(peer, " ")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prompt, err := Login(ctx, s, "admin", []byte("s3cret-pw"), 5*time.Second, nil)
	if err != nil || prompt != "admin@r1>" {
		t.Fatalf("Login: %q, %v", prompt, err)
	}
}
