package link

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestDialErrorsAreDistinct(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now

	ctx := context.Background()
	_, err = DialTCP(ctx, "127.0.0.1", port, time.Second)
	assertReason(t, err, "refused", "connection refused")

	_, err = DialTCP(ctx, "no-such-host.invalid", 23, time.Second)
	assertReason(t, err, "dns", "cannot resolve host")

	// A cancelled context stands in for a peer that never answers; the
	// machine has no route to a black-hole address we may use.
	cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	<-cctx.Done()
	_, err = DialTCP(cctx, "127.0.0.1", port, time.Second)
	assertReason(t, err, "timeout", "timed out")
}

func assertReason(t *testing.T, err error, reason, text string) {
	t.Helper()
	var de *DialError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a *DialError", err)
	}
	if de.Reason != reason || !strings.Contains(de.Error(), text) {
		t.Fatalf("reason %q, message %q; want %q containing %q", de.Reason, de.Error(), reason, text)
	}
}

// TestDialWithNoTimeLeft: a dial whose budget was spent before it began
// says so (it said "no answer within -62 ms").
func TestDialWithNoTimeLeft(t *testing.T) {
	for _, left := range []time.Duration{0, -62 * time.Millisecond} {
		_, err := DialTCP(context.Background(), "127.0.0.1", 22, left)
		assertReason(t, err, "timeout", "no time was left to connect")
		if strings.Contains(err.Error(), "-") && strings.Contains(err.Error(), " ms") {
			t.Fatalf("a negative duration in %q", err)
		}
	}
}
