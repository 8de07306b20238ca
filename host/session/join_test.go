package session

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// A session opened with DetectOnUse has no dialect plugin until
// JoinDialect: then the plugin is primed with the output the session
// holds (its emissions dropped), joins the chain's end and sees what
// comes next. Listings and plugin checks read the chain meanwhile.
func TestJoinDialect(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	var mu sync.Mutex
	var seen []string
	dia := &fake{name: "dialect", data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Inbound {
			mu.Lock()
			seen = append(seen, string(p))
			mu.Unlock()
			s.Emit(abi.Event, []byte(`{"type":"prompt","source":"dialect","dialect":"x","prompt":"R1#"}`))
		}
		return abi.Continue, nil
	}}
	ours, peer := net.Pipe()
	pl := &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}
	attach := func(name string, _ abi.Kind, _ []byte) (Binding, error) {
		if name == "dialect" {
			return dia, nil
		}
		return nil, errors.New("no such plugin")
	}
	s, err := r.Open(context.Background(), attach, Spec{Kind: "pipe", Dialect: DetectOnUse,
		Dial: func(context.Context) (link.Link, error) { return pl, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); peer.Close() })
	write(peer, "Banner\r\nR1#")
	readUntil(t, s, "R1#")
	if s.HasPlugin(DialectPlugin) || dia.calls.Load() != 0 {
		t.Fatalf("the dialect plugin is in the chain before JoinDialect (%d calls)", dia.calls.Load())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			s.Info()
			s.HasPlugin(DialectPlugin)
		}
	}()
	if err := s.JoinDialect(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := s.JoinDialect(context.Background()); err != nil || dia.calls.Load() != 1 {
		t.Fatalf("a second JoinDialect: %v, %d calls (want the one priming call)", err, dia.calls.Load())
	}
	if !s.HasPlugin(DialectPlugin) {
		t.Fatal("no dialect plugin after JoinDialect")
	}
	for _, e := range s.Events(0) {
		if e.Type == abi.TypePrompt {
			t.Fatalf("the priming call's event was recorded: %+v", e)
		}
	}
	write(peer, "\r\nR1#")
	readUntil(t, s, "\r\nR1#")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "Banner\r\nR1#" || seen[1] != "\r\nR1#" {
		t.Fatalf("the dialect plugin saw %q; want the held output, then what came next", seen)
	}
	eventually(t, "the joined plugin's prompt event", func() bool {
		for _, e := range s.Events(0) {
			if p, ok := e.Body.(*abi.Prompt); ok && p.Prompt == "R1#" {
				return true
			}
		}
		return false
	})
}

// JoinDialect leaves a session opened without DetectOnUse as it is.
func TestJoinDialectOnlyOnUse(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	write(peer, "x")
	readUntil(t, s, "x")
	if err := s.JoinDialect(context.Background()); err != nil || s.HasPlugin(DialectPlugin) {
		t.Fatalf("JoinDialect on a plain session: %v, has dialect %v", err, s.HasPlugin(DialectPlugin))
	}
}
