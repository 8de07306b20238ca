package device

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
)

const testSecret = "hunter2-Secret"

// Each field is typed once per login: a device that asks for the password
// again ends the login at once.
func TestLoginTypesThePasswordOnce(t *testing.T) {
	r := newRegistry(t, session.Config{})
	s, peer := testKind(t, r, session.Spec{}, nil)
	typed := make(chan int, 1)
	go func() {
		in := bufio.NewReader(peer)
		write(peer, "login: ")
		in.ReadString('\r')
		n := 0
		for range 5 {
			write(peer, "\r\nPassword: ")
			peer.SetReadDeadline(time.Now().Add(time.Second))
			l, err := in.ReadString('\r')
			if err != nil {
				break
			}
			if strings.Contains(l, "pw-once") {
				n++
			}
		}
		typed <- n
	}()
	start := time.Now()
	_, err := Login(ctxTimeout(t, 10*time.Second), s, "admin", []byte("pw-once"), 5*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "the device asked for the password again (wrong password?)") {
		t.Fatalf("Login: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	if n := <-typed; n != 1 {
		t.Errorf("typed %d times", n)
	}
}

// A gate that refuses: nothing is typed, nothing added to the set.
func TestSendSecretGateRefuses(t *testing.T) {
	r := newRegistry(t, session.Config{})
	s, _ := testKind(t, r, session.Spec{Peer: session.Peer{Host: "10.0.0.9", Port: 23}}, nil)
	var seen session.Destination
	err := SendSecret(context.Background(), s, []byte(testSecret), func(d session.Destination) error {
		seen = d
		return fmt.Errorf("no")
	})
	if err == nil || seen.Host != "10.0.0.9" || seen.Port != 23 {
		t.Fatalf("gate: %v, %+v", err, seen)
	}
	if r.Secrets().Len() != 0 {
		t.Error("a refused secret was added to the set")
	}
}

// No secret, and no login, goes through a session whose chain holds a
// plugin that is neither first-party nor pinned: it would see the secret
// on its way out. Nothing is written to the peer.
func TestSecretsRefusedThroughUntrustedPlugin(t *testing.T) {
	r := newRegistry(t, session.Config{})
	s, peer := testKind(t, r, session.Spec{}, []*fake{{name: "telnet"}, {name: "upper", untrusted: true}})
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := peer.Read(b)
		got <- b[:n]
	}()
	err := SendSecret(ctxTimeout(t, 2*time.Second), s, []byte(testSecret), nil)
	if !errors.Is(err, session.ErrUntrustedPlugin) || !strings.Contains(err.Error(), `plugin "upper"`) {
		t.Fatalf("SendSecret through an unpinned plugin: %v", err)
	}
	if _, err := Login(ctxTimeout(t, 2*time.Second), s, "admin", []byte(testSecret), time.Second, nil); !errors.Is(err, session.ErrUntrustedPlugin) {
		t.Fatalf("Login through an unpinned plugin: %v", err)
	}
	select {
	case b := <-got:
		t.Fatalf("the peer got %q", b)
	case <-time.After(200 * time.Millisecond):
	}
}

// echoLink is the pipe kind's link on a terminal that echoes what is
// typed (a PTY whose ECHO flag is on).
type echoLink struct{ *pipeLink }

func (echoLink) Echoes() (bool, error) { return true, nil }

// A password prompt on a terminal that would show the password: nothing
// is typed, and the login stops at once saying why (it went on before,
// as if the password had been sent, and waited out its timeout).
func TestLoginStopsWhereThePasswordWouldShow(t *testing.T) {
	r := newRegistry(t, session.Config{})
	ours, peer := net.Pipe()
	pl := &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}
	s, err := r.Open(context.Background(), nil, session.Spec{Kind: "pipe",
		Dial: func(context.Context) (link.Link, error) { return echoLink{pl}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); peer.Close() })
	typed := make(chan string, 1)
	go func() {
		write(peer, "Password: ")
		peer.SetReadDeadline(time.Now().Add(time.Second))
		b := make([]byte, 64)
		n, _ := peer.Read(b)
		typed <- string(b[:n])
	}()
	_, err = Login(ctxTimeout(t, 10*time.Second), s, "admin", []byte(testSecret), 5*time.Second, nil)
	if !errors.Is(err, session.ErrEchoOn) {
		t.Fatalf("Login: %v, want ErrEchoOn", err)
	}
	if got := <-typed; strings.Contains(got, testSecret) {
		t.Fatalf("the password was typed into an echoing terminal: %q", got)
	}
}
