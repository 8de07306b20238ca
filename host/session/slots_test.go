package session

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// stallStart is a binding that holds its session's Open inside start
// (OnAsync is called there), after the session is registered and before
// the Open returns, until proceed is closed.
type stallStart struct {
	*fake
	entered, proceed chan struct{}
}

func (b *stallStart) OnAsync(fn func([]abi.Emission)) {
	close(b.entered)
	<-b.proceed
	b.fake.OnAsync(fn)
}

// openPipe opens a session of the test kind with the given chain and
// returns it (or the error) and the peer's end.
func openPipe(r *Registry, chain ...Binding) (*Session, net.Conn, error) {
	ours, peer := net.Pipe()
	spec := Spec{Kind: "pipe", Dial: func(context.Context) (link.Link, error) {
		return &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}, nil
	}}
	byName := map[string]Binding{}
	for _, b := range chain {
		name, _ := b.Plugin()
		spec.Plugins = append(spec.Plugins, name)
		byName[name] = b
	}
	attach := func(name string, _ abi.Kind, _ []byte) (Binding, error) { return byName[name], nil }
	s, err := r.Open(context.Background(), attach, spec)
	if err != nil {
		ours.Close()
		peer.Close()
	}
	return s, peer, err
}

// TestOpenCountsOnce (issue 33 item 7): a session whose Open has
// registered it but not yet returned uses one slot of the live limit, not
// two (its reservation and itself): with a limit of 2 and such an open
// under way, a second session opens; a third is refused.
func TestOpenCountsOnce(t *testing.T) {
	r := newRegistry(t, Limits{MaxSessions: 2}, Config{})
	stall := &stallStart{fake: &fake{name: "stall"}, entered: make(chan struct{}), proceed: make(chan struct{})}
	type opened struct {
		s    *Session
		peer net.Conn
		err  error
	}
	first := make(chan opened, 1)
	go func() {
		s, peer, err := openPipe(r, stall)
		first <- opened{s, peer, err}
	}()
	select {
	case <-stall.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first open never reached its start")
	}
	second, peer2, err := openPipe(r)
	if err != nil {
		close(stall.proceed)
		<-first
		t.Fatalf("with a limit of 2 and one session registered whose open has not returned, a second open: %v; want it to open (the first is counted twice)", err)
	}
	defer func() { second.Close(); peer2.Close() }()
	close(stall.proceed)
	o := <-first
	if o.err != nil {
		t.Fatalf("the first open: %v", o.err)
	}
	defer func() { o.s.Close(); o.peer.Close() }()
	if _, _, err := openPipe(r); !errors.Is(err, ErrLimit) {
		t.Fatalf("a third open with a limit of 2: %v; want ErrLimit", err)
	}
	// A slot is free as soon as Remove returns.
	r.Remove(second.ID)
	third, peer3, err := openPipe(r)
	if err != nil {
		t.Fatalf("an open right after Remove returned: %v", err)
	}
	// And as soon as Stop returns.
	r.Stop(context.Background(), third.ID)
	fourth, peer4, err := openPipe(r)
	if err != nil {
		t.Fatalf("an open right after Stop returned: %v", err)
	}
	fourth.Close()
	peer3.Close()
	peer4.Close()
}
