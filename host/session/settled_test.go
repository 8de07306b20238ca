package session

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// TestScreenAtRestGetsTextLate: a screen that says it is at rest
// (abi.Settled) is not called for chunks of plain text; the first chunk
// that is not text, a question to the screen, or a control request gives
// it everything held back, in order, in one call. A screen that never
// says so is called for every chunk.
func TestScreenAtRestGetsTextLate(t *testing.T) {
	var mu sync.Mutex
	var fed [][]byte
	settled := true
	screen := &fake{name: "screen",
		data: func(dir abi.Dir, p []byte, _ wasmhost.Sink) (abi.Action, error) {
			mu.Lock()
			defer mu.Unlock()
			fed = append(fed, append([]byte(nil), p...))
			if settled {
				return abi.Settled, nil
			}
			return abi.Consumed, nil
		},
		control: func(req []byte, s wasmhost.Sink) error {
			s.Emit(abi.Reply, []byte(`{}`))
			return nil
		},
	}
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{}, nil, screen)
	feeds := func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), fed...)
	}
	write := func(p string) {
		t.Helper()
		want := s.buf.End() + uint64(len(p))
		go peer.Write([]byte(p))
		eventually(t, "the chunk", func() bool { return s.buf.Head() == want })
	}

	write("\x1b[0m") // not text: fed at once; the screen is at rest after it
	if f := feeds(); len(f) != 1 || string(f[0]) != "\x1b[0m" {
		t.Fatalf("first chunk: screen fed %q", f)
	}
	write("echo hi\r\n")
	write("hi\r\n$ ")
	write("héllo\t\b")
	if f := feeds(); len(f) != 1 {
		t.Fatalf("text reached a screen at rest at once: %q", f)
	}
	write("\x1b[1mbold")
	f := feeds()
	if len(f) != 2 || string(f[1]) != "echo hi\r\nhi\r\n$ héllo\t\b\x1b[1mbold" {
		t.Fatalf("the chunk after the text: screen fed %q", f)
	}

	// A question to the screen comes after every byte.
	write("more text")
	if _, err := s.Screen(context.Background(), []byte(`{"op":"screen"}`)); err != nil {
		t.Fatal(err)
	}
	if f := feeds(); len(f) != 3 || string(f[2]) != "more text" {
		t.Fatalf("a question did not catch the screen up: %q", f)
	}
	// So does a control request (a resize).
	write("and more")
	if _, _, err := s.Control(context.Background(), []byte(`{"op":"resize","cols":100,"rows":30}`), true); err != nil {
		t.Fatal(err)
	}
	if f := feeds(); len(f) != 4 || string(f[3]) != "and more" {
		t.Fatalf("a control request did not catch the screen up: %q", f)
	}

	// Held text is bounded.
	big := bytes.Repeat([]byte("x"), maxHeldText+1)
	write(string(big))
	if f := feeds(); len(f) != 5 || len(f[4]) != len(big) {
		t.Fatalf("more than %d bytes of text were held back (%d feeds)", maxHeldText, len(f))
	}

	// A screen not at rest gets every chunk.
	mu.Lock()
	settled = false
	mu.Unlock()
	write("\x1b[0m")
	write("a")
	write("b")
	if f := feeds(); len(f) != 8 || string(f[6]) != "a" || string(f[7]) != "b" {
		t.Fatalf("a screen not at rest: %q", f[5:])
	}

	// An ended session's final screen has seen everything.
	mu.Lock()
	settled = true
	mu.Unlock()
	write("\x1b[0m")
	write("last words")
	peer.Close()
	eventually(t, "the release", func() bool {
		select {
		case <-s.Released():
			return true
		default:
			return false
		}
	})
	if f := feeds(); string(f[len(f)-1]) != "last words" {
		t.Fatalf("the held text did not reach the final screen: %q", f[len(f)-1])
	}
}
