package session

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// TestOwnersDoNotSeeEachOther: another owner's session is not found by id
// or name, with the error of an id nobody used, is in no listing of
// theirs, and its name is free for them; its tombstone (a discarded
// ended session) is not theirs either.
func TestOwnersDoNotSeeEachOther(t *testing.T) {
	r := newRegistry(t, Limits{MaxEnded: 1}, Config{})
	a, _, _ := testKind(t, r, Spec{Owner: "A", Name: "box"}, nil, nil)
	for _, ref := range []string{a.ID, "box"} {
		_, err := r.Get("B", ref)
		_, want := r.Get("B", "nobody-used-this")
		if !errors.Is(err, ErrNotFound) || strings.ReplaceAll(err.Error(), ref, "X") != strings.ReplaceAll(want.Error(), "nobody-used-this", "X") {
			t.Errorf("B's Get(%q): %v", ref, err)
		}
		if got, err := r.Get("A", ref); err != nil || got != a {
			t.Errorf("A's Get(%q): %v", ref, err)
		}
	}
	if r.Owns("B", a.ID) || !r.Owns("A", a.ID) {
		t.Error("Owns")
	}
	if len(r.Owned("B", "")) != 0 || len(r.Owned("A", "")) != 1 || len(r.Owned("A", KindTelnet)) != 0 {
		t.Error("Owned")
	}
	b, _, _ := testKind(t, r, Spec{Owner: "B", Name: "box"}, nil, nil)
	if got, _ := r.Get("B", "box"); got != b {
		t.Fatal("B's own box")
	}
	if got, _ := r.Get("A", "box"); got != a {
		t.Fatal("A's box after B took the name")
	}
	if _, err := r.Open(context.Background(), nil, Spec{Owner: "A", Name: "box", Dial: func(context.Context) (link.Link, error) { return nil, nil }}); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("A's second box: %v", err)
	}
	// Ended and discarded (MaxEnded 1): A gets "expired", B "not found".
	a.Close()
	c, _, _ := testKind(t, r, Spec{Owner: "A"}, nil, nil)
	c.Close()
	eventually(t, "A's box discarded", func() bool { _, err := r.Get("A", a.ID); return errors.Is(err, ErrExpired) })
	if _, err := r.Get("B", a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B's lookup of A's discarded session: %v", err)
	}
}

// TestShareClaim: a code hands a session over once; the previous owner
// loses it; a used, made-up, expired or foreign code does nothing; a
// restart keeps the new owner.
func TestShareClaim(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	a, _, _ := testKind(t, r, Spec{Owner: "A", Name: "box"}, nil, nil)
	if _, _, err := r.Share("B", a); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B shares A's session: %v", err)
	}
	code, exp, err := r.Share("A", a)
	if err != nil || len(code) < 22 || time.Until(exp) > ShareTTL || time.Until(exp) < ShareTTL-time.Minute {
		t.Fatalf("Share: %q %v %v", code, exp, err)
	}
	other, _, _ := testKind(t, r, Spec{Owner: "B", Name: "box"}, nil, nil)
	if _, err := r.Claim("B", code); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("claim into a taken name: %v", err)
	}
	other.Close()
	r.Remove(other.ID)
	got, err := r.Claim("B", code)
	if err != nil || got != a {
		t.Fatalf("Claim: %v", err)
	}
	if _, err := r.Get("A", "box"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("A after the handover: %v", err)
	}
	if s, err := r.Get("B", "box"); err != nil || s != a {
		t.Fatalf("B after the handover: %v", err)
	}
	for _, c := range []string{code, "made-up"} {
		if _, err := r.Claim("C", c); !errors.Is(err, ErrShareCode) {
			t.Fatalf("Claim(%q): %v", c, err)
		}
	}
	// An expired code.
	code, _, _ = r.Share("B", a)
	r.mu.Lock()
	r.shares[code].expires = time.Now().Add(-time.Second)
	r.mu.Unlock()
	if _, err := r.Claim("C", code); !errors.Is(err, ErrShareCode) {
		t.Fatalf("expired code: %v", err)
	}
	// Codes per owner are bounded.
	for i := range maxSharesPerOwner + 1 {
		if _, _, err := r.Share("B", a); (err != nil) != (i == maxSharesPerOwner) {
			t.Fatalf("share %d: %v", i, err)
		}
	}
}

// TestRestartKeepsTheOwner: a session restarted after a handover stays
// with its new owner.
func TestRestartKeepsTheOwner(t *testing.T) {
	r := newRegistry(t, Limits{StopGrace: time.Millisecond, StopTerm: time.Millisecond}, Config{})
	var open func(ctx context.Context, id string) (*Session, error)
	open = func(ctx context.Context, id string) (*Session, error) {
		ours, peer := net.Pipe()
		t.Cleanup(func() { peer.Close() })
		pl := &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}
		return r.Open(ctx, func(string, abi.Kind, []byte) (Binding, error) { return nil, errors.New("none") }, Spec{
			ID: id, Kind: "pipe", Owner: "A", Name: "box", Reopen: open,
			Dial: func(context.Context) (link.Link, error) { return pl, nil },
		})
	}
	s, err := open(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	code, _, _ := r.Share("A", s)
	if _, err := r.Claim("B", code); err != nil {
		t.Fatal(err)
	}
	ns, err := r.Restart(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	if got, err := r.Get("B", "box"); err != nil || got != ns || ns.ID != s.ID {
		t.Fatalf("B after the restart: %v", err)
	}
	if _, err := r.Get("A", s.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("A after the restart: %v", err)
	}
}
