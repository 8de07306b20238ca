package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// The filters a session's traffic passes through besides its chain are
// stages its Spec names: an InputFunc refuses a send before anything of it
// is written, an EventFunc consumes events before they are recorded, and
// the masking Open adds runs for every session all the same.
func TestSpecStages(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{UTF8Hold: 50 * time.Millisecond})
	refused := errors.New("refused by the stage")
	var seen []string
	ev := &fake{name: "ev", data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Inbound && strings.Contains(string(p), "!") {
			s.Emit(abi.Event, []byte(`{"type":"hidden"}`))
			s.Emit(abi.Event, []byte(`{"type":"shown"}`))
		}
		return abi.Continue, nil
	}}
	s, peer, _ := testKind(t, r, Spec{Stages: []Stage{
		InputFunc(func(p []byte) error {
			if strings.Contains(string(p), "reboot") {
				return refused
			}
			return nil
		}),
		EventFunc(func(e *Event) bool {
			seen = append(seen, string(e.Type))
			return e.Type == "hidden"
		}),
	}}, []*fake{ev}, nil)
	if err := s.Send(context.Background(), []byte("reboot\r")); !errors.Is(err, refused) {
		t.Fatalf("a send the input stage refuses: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 16)
		peer.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := peer.Read(buf)
		got <- string(buf[:n])
	}()
	if err := s.Send(context.Background(), []byte("ok\r")); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != "ok\r" {
		t.Fatalf("the peer got %q, want only the send the stage let through", g)
	}
	peer.SetReadDeadline(time.Time{})
	r.Secrets().Add([]byte("hunter22"))
	write(peer, "pw hunter22!")
	out := readUntil(t, s, "!")
	if strings.Contains(out, "hunter22") {
		t.Errorf("the masking stage did not run with the spec's own: %q", out)
	}
	evs := s.Events(0)
	if len(evs) != 1 || evs[0].Type != "shown" || len(seen) != 2 {
		t.Errorf("events %+v (the event stage saw %q); want only the one it did not consume", evs, seen)
	}
}

// A stage that filters nothing a session has, and a second line check,
// are refused before anything is attached or dialed.
func TestSpecStagesRefused(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	dial := func(context.Context) (link.Link, error) {
		t.Fatal("dialed with a bad stage")
		return nil, nil
	}
	for _, tc := range []struct {
		stages []Stage
		want   string
	}{
		{[]Stage{nothing{}}, `stage "nothing" filters nothing`},
		{[]Stage{&LineCheck{}, &LineCheck{}}, "a second line check"},
	} {
		_, err := r.Open(context.Background(), nil, Spec{Kind: "pipe", Stages: tc.stages, Dial: dial})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("stages %v: %v, want %q", tc.stages, err, tc.want)
		}
	}
}

type nothing struct{}

func (nothing) StageName() string { return "nothing" }
