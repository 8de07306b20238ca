package mcp

import (
	"context"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallCtxIsAContext: a direct call's own context behaves as
// context.WithCancel(context.Background()) with the notifier as a value:
// Done closes on cancel (asked before or after), Err says Canceled, a
// context derived from it ends with it, and AfterFunc's stop works.
func TestCallCtxIsAContext(t *testing.T) {
	var early callCtx
	done := early.Done()
	if early.Err() != nil {
		t.Fatal("Err before the cancel")
	}
	select {
	case <-done:
		t.Fatal("Done closed before the cancel")
	default:
	}
	child, stopChild := context.WithTimeout(&early, time.Hour)
	defer stopChild()
	ran := make(chan struct{})
	early.AfterFunc(func() { close(ran) })
	stopped := early.AfterFunc(func() { t.Error("a stopped AfterFunc ran") })
	if !stopped() {
		t.Fatal("stop of a waiting AfterFunc said it was not waiting")
	}
	early.cancel()
	early.cancel() // twice is harmless
	<-done
	<-ran
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a derived context did not end with the call's")
	}
	if !errors.Is(early.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("Err %v, child %v", early.Err(), child.Err())
	}

	var late callCtx
	late.notify = func(context.Context, *sdk.ProgressNotificationParams) error { return nil }
	if late.Value(notifierKey{}) == nil || late.Value("other") != nil {
		t.Fatal("Value: the notifier, and nothing else")
	}
	late.cancel()
	select {
	case <-late.Done():
	default:
		t.Fatal("Done asked after the cancel is not closed")
	}
	after := make(chan struct{})
	if late.AfterFunc(func() { close(after) })() {
		t.Fatal("stop after the cancel said the function was waiting")
	}
	<-after
	if d, ok := late.Deadline(); ok || !d.IsZero() {
		t.Fatal("a deadline")
	}
}
