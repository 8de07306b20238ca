package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitPrompt waits at most d for a prompt new to r and says why it ended.
func waitPrompt(t *testing.T, r *Reader, d time.Duration) Reason {
	t.Helper()
	_, reason, _, err := r.Wait(context.Background(), WaitSpec{Prompt: true, Timeout: d}, true)
	if err != nil {
		t.Fatal(err)
	}
	return reason
}

func readNow(t *testing.T, r *Reader) ReadResult {
	t.Helper()
	res, err := r.Read(context.Background(), ReadOptions{UTF8: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A flood of owners cannot send a reader back to the start of the buffer:
// the session keeps at most maxReaders, never drops its owner's, and a
// reader it dropped starts again at the end and says so — an old prompt
// never satisfies a wait a second time (issue 18, item 3).
func TestReadersFloodKeepsPlaces(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{Owner: "A"}, []*fake{promptMarker()}, nil)
	write(peer, "one$ ")
	a, x := s.Reader("A"), s.Reader("X")
	for _, rd := range []*Reader{a, x} {
		if why := waitPrompt(t, rd, 5*time.Second); why != ReasonPrompt {
			t.Fatalf("%s's first wait: %s, want the prompt", rd.owner, why)
		}
		if got := readNow(t, rd); string(got.Data) != "one$ " || got.Lost {
			t.Fatalf("%s's first read: %q lost=%v", rd.owner, got.Data, got.Lost)
		}
	}
	for i := range 10 * maxReaders {
		readNow(t, s.Reader(fmt.Sprintf("flood-%d", i)))
	}
	s.mu.Lock()
	n := len(s.readers)
	s.mu.Unlock()
	if n > maxReaders {
		t.Fatalf("%d readers kept, want at most %d", n, maxReaders)
	}
	if s.Reader("A") != a {
		t.Fatal("the owner's reader was dropped by the flood")
	}
	if why := waitPrompt(t, a, 200*time.Millisecond); why != ReasonTimeout {
		t.Fatalf("the owner's wait after the flood: %s, want a timeout (its prompt was consumed)", why)
	}
	if got := readNow(t, a); len(got.Data) != 0 || got.Lost {
		t.Fatalf("the owner's read after the flood: %q lost=%v, want nothing", got.Data, got.Lost)
	}
	// X was not the owner and not used since: dropped. Its new reader is
	// at the end, not at the start.
	x2 := s.Reader("X")
	if x2 == x {
		t.Fatal("X's reader survived 10×maxReaders newer owners")
	}
	if why := waitPrompt(t, x2, 200*time.Millisecond); why != ReasonTimeout {
		t.Fatalf("a dropped reader's wait: %s, want a timeout (not the old prompt again)", why)
	}
	if got := readNow(t, x2); len(got.Data) != 0 || !got.Lost {
		t.Fatalf("a dropped reader's read: %q lost=%v, want nothing, and lost", got.Data, got.Lost)
	}
	write(peer, "two$ ")
	for _, rd := range []*Reader{a, x2} {
		if why := waitPrompt(t, rd, 5*time.Second); why != ReasonPrompt {
			t.Fatalf("%s's wait for the new prompt: %s", rd.owner, why)
		}
		if got := readNow(t, rd); string(got.Data) != "two$ " || got.Lost {
			t.Fatalf("%s's read of the new prompt: %q lost=%v", rd.owner, got.Data, got.Lost)
		}
	}
}

// A handover passes the read position on, as one stream: the new owner
// reads what the previous one had not; its waits and views start afresh,
// and the previous owner's reader is gone.
func TestReadersHandOver(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{Owner: "A"}, []*fake{promptMarker()}, nil)
	write(peer, "one$ ")
	a := s.Reader("A")
	waitPrompt(t, a, 5*time.Second)
	readNow(t, a)
	a.ViewChanges("plain", []string{"one$"})
	write(peer, "two")
	eventually(t, "two", func() bool { return s.Info().Unread == 3 })
	code, _, err := r.Share("A", s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Claim("B", code); err != nil {
		t.Fatal(err)
	}
	b := s.Reader("B")
	if got := readNow(t, b); string(got.Data) != "two" {
		t.Fatalf("B's first read: %q, want what A had not read", got.Data)
	}
	if why := waitPrompt(t, b, time.Second); why != ReasonPrompt {
		t.Fatalf("B's first wait: %s, want the prompt the buffer holds (as for a new client)", why)
	}
	if got := b.ViewChanges("plain", []string{"one$"}); !slices.Equal(got, []int{0}) {
		t.Fatalf("B's first view: changed %v, want every row", got)
	}
	s.mu.Lock()
	_, kept := s.readers["A"]
	s.mu.Unlock()
	if kept {
		t.Fatal("A's reader outlived the handover")
	}
}

// ViewChanges gives every row the first time, then the rows that differ,
// per format, and remembers at most maxViewFormats formats.
func TestReaderViewChanges(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, _, _ := testKind(t, r, Spec{Owner: "A"}, nil, nil)
	rd := s.Reader("A")
	for _, c := range []struct {
		format string
		rows   []string
		want   []int
	}{
		{"plain", []string{"a", "b", "c"}, []int{0, 1, 2}},
		{"plain", []string{"a", "B", "c"}, []int{1}},
		{"plain", []string{"a", "B", "c", "d"}, []int{3}},
		{"ansi", []string{"a"}, []int{0}},
		{"plain", []string{"a", "B", "c", "d"}, []int{}},
	} {
		if got := rd.ViewChanges(c.format, c.rows); !slices.Equal(got, c.want) {
			t.Fatalf("%s %v: changed %v, want %v", c.format, c.rows, got, c.want)
		}
	}
	for i := range 3 * maxViewFormats {
		rd.ViewChanges(strings.Repeat("f", i+1), []string{"x"})
	}
	s.mu.Lock()
	n := len(rd.views)
	s.mu.Unlock()
	if n > maxViewFormats {
		t.Fatalf("%d views kept, want at most %d", n, maxViewFormats)
	}
}
