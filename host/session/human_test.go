package session

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHumanControl: while a person holds the keyboard the agent's input
// (Send, SendCredential, Interrupt) is refused with ErrHumanControl and
// nothing of it is written, the holder's keys (SendHuman) are, another
// viewer can neither take it nor type; a wait that ends meanwhile says
// "human", a Released wait ends at the hand-back, and both moments are
// HumanControl events.
func TestHumanControl(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{}, []*fake{{name: "plain"}}, nil)
	ctx := ctxTimeout(t, 10*time.Second)
	if err := s.TakeControl("view-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.TakeControl("view-b"); !errors.Is(err, ErrHumanControl) {
		t.Fatalf("a second viewer took the keyboard: %v", err)
	}
	for what, err := range map[string]error{
		"Send":                        s.Send(ctx, []byte("agent")),
		"SendCredential":              s.SendCredential(ctx, []byte("secret"), true),
		"Interrupt":                   s.Interrupt(ctx, "interrupt"),
		"SendHuman of another viewer": s.SendHuman(ctx, "view-b", []byte("b")),
	} {
		if err == nil || (what != "SendHuman of another viewer" && !errors.Is(err, ErrHumanControl)) {
			t.Fatalf("%s while a person holds the keyboard: %v", what, err)
		}
	}
	go func() {
		if err := s.SendHuman(context.Background(), "view-a", []byte("person")); err != nil {
			t.Error(err)
		}
	}()
	if got := string(readN(t, peer, 6)); got != "person" { // the agent's bytes were never written
		t.Fatalf("the peer got %q", got)
	}
	reason, _, err := s.Wait(ctx, s.Mark(), WaitSpec{Timeout: 20 * time.Millisecond}, false)
	if err != nil || reason != ReasonHuman {
		t.Fatalf("a wait that timed out while the person holds the keyboard: %q %v", reason, err)
	}
	released := make(chan Reason, 1)
	go func() {
		reason, _, _ := s.Wait(ctx, s.Mark(), WaitSpec{Released: true, Timeout: 5 * time.Second}, false)
		released <- reason
	}()
	if s.GiveBack("view-b") {
		t.Fatal("another viewer gave the keyboard back")
	}
	if !s.GiveBack("view-a") {
		t.Fatal("GiveBack by the holder")
	}
	if reason := <-released; reason != ReasonReleased {
		t.Fatalf("a Released wait: %q", reason)
	}
	go s.Send(ctx, []byte("agent"))
	if got := string(readN(t, peer, 5)); got != "agent" {
		t.Fatalf("after the hand-back the peer got %q", got)
	}
	var marks []bool
	for _, e := range s.Events(0) {
		if h, ok := e.Body.(*HumanControl); ok {
			marks = append(marks, h.Taken)
		}
	}
	if len(marks) != 2 || !marks[0] || marks[1] {
		t.Fatalf("HumanControl events %v, want taken, given back", marks)
	}
}
