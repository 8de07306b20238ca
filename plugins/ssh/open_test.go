package main

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// neverOpens is a client whose channel opens are never answered, as
// x/crypto/ssh leaves one sent just as its connection's read loop ended.
type neverOpens struct{ block chan struct{} }

func (n neverOpens) NewSession() (*ssh.Session, error) {
	<-n.block
	return nil, nil
}

// TestOpenFailsWhenTheSessionEnds: a channel whose open is never
// answered fails once the session ends, instead of waiting for ever.
func TestOpenFailsWhenTheSessionEnds(t *testing.T) {
	s := &session{chans: make(map[int]*channel), gone: make(chan struct{})}
	n := neverOpens{block: make(chan struct{})}
	defer close(n.block)
	errc := make(chan error, 1)
	go func() {
		_, err := s.openSession(n)
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("the open returned before the session ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(s.gone) // what end does
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "connection ended") {
			t.Fatalf("error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the open still waits after the session ended")
	}
}
