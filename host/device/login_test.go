package device

import (
	"bufio"
	"context"
	"errors"
	"net"
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

// LoginAsking: a field the credential lacks (here the password) goes to
// ask, which types it itself, and the login continues; the time ask takes
// is not counted against the timeout. An ask that fails ends the login
// naming the field; without ask the login fails as before.
func TestLoginAsksForMissingField(t *testing.T) {
	dev := func(peer net.Conn) {
		in := bufio.NewReader(peer)
		line := func() string { l, _ := in.ReadString('\r'); return strings.TrimSpace(l) }
		write(peer, "\r\nlogin: ")
		if line() != "admin" {
			return
		}
		write(peer, "Password:")
		if line() != "from-the-person" {
			write(peer, "\r\nLogin incorrect\r\nlogin: ")
			return
		}
		write(peer, "\r\nadmin@r1>")
	}
	r := newRegistry(t, session.Config{})
	s, peer := testKind(t, r, session.Spec{}, nil)
	go dev(peer)
	var asked []string
	ask := func(ctx context.Context, field, prompt string) error {
		asked = append(asked, field+"|"+prompt)
		time.Sleep(700 * time.Millisecond) // longer than the login's timeout
		return SendSecret(ctx, s, []byte("from-the-person"), nil)
	}
	prompt, err := LoginAsking(ctxTimeout(t, 10*time.Second), s, "admin", nil, 500*time.Millisecond, nil, ask)
	if err != nil || prompt != "admin@r1>" || len(asked) != 1 || asked[0] != "password|Password:" {
		t.Fatalf("LoginAsking: %q, %v (asked %q)", prompt, err, asked)
	}

	s2, peer2 := testKind(t, r, session.Spec{}, nil)
	go dev(peer2)
	no := func(context.Context, string, string) error { return errors.New("the person declined") }
	if _, err := LoginAsking(ctxTimeout(t, 10*time.Second), s2, "admin", nil, 5*time.Second, nil, no); !errors.Is(err, ErrLogin) || !strings.Contains(err.Error(), "password") || !strings.Contains(err.Error(), "declined") {
		t.Fatalf("a declined ask: %v", err)
	}
	s3, peer3 := testKind(t, r, session.Spec{}, nil)
	go dev(peer3)
	if _, err := Login(ctxTimeout(t, 10*time.Second), s3, "admin", nil, 5*time.Second, nil); !errors.Is(err, ErrNoPassword) || !strings.Contains(err.Error(), "credential has none") {
		t.Fatalf("without ask: %v", err)
	}
}
