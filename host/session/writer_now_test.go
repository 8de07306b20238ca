package session

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"
)

// nowLink takes up to room bytes at once through WriteNow (or fails with
// nowErr), the rest through Write; it records the deadlines set.
type nowLink struct {
	mu        sync.Mutex
	room      int
	nowErr    error
	got       []byte
	deadlines []time.Time
}

func (l *nowLink) Read([]byte) (int, error) { return 0, io.EOF }
func (l *nowLink) Close() error             { return nil }

func (l *nowLink) WriteNow(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nowErr != nil {
		return 0, l.nowErr
	}
	n := min(l.room, len(p))
	l.got = append(l.got, p[:n]...)
	return n, nil
}

func (l *nowLink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, p...)
	return len(p), nil
}

func (l *nowLink) SetWriteDeadline(t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadlines = append(l.deadlines, t)
	return nil
}

// A batch the link takes at once is written with no deadline set; one
// it takes only part of gets the rest written in order under the
// batch's deadline; a link that fails at once is not written again.
func TestWriterWritesNowWhenTheLinkHasRoom(t *testing.T) {
	for _, tc := range []struct {
		name      string
		room      int
		nowErr    error
		deadlines int
		wantErr   bool
	}{
		{name: "room for all", room: 1 << 20, deadlines: 0},
		{name: "room for part", room: 3, deadlines: 1},
		{name: "no room", room: 0, deadlines: 1},
		{name: "fails", nowErr: io.ErrClosedPipe, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, how := range []string{"reserved", "pump", "queued"} {
				l := &nowLink{room: tc.room, nowErr: tc.nowErr}
				w := newWriter(l, 1<<20, time.Minute)
				go w.run()
				b := &batch{data: []byte("hello, peer"), deadline: time.Now().Add(time.Minute), done: make(chan struct{})}
				switch how {
				case "reserved":
					if inline, err := w.reserve(b); !inline || err != nil {
						t.Fatalf("reserve: %v, %v", inline, err)
					}
					w.writeReserved(context.Background(), b)
				case "pump":
					if inline, err := w.reserve(b); !inline || err != nil {
						t.Fatalf("reserve: %v, %v", inline, err)
					}
					w.writeFromPump(b)
				case "queued":
					if err := w.submit(b); err != nil {
						t.Fatal(err)
					}
				}
				<-b.done
				n, err := b.result()
				w.close(io.EOF)
				l.mu.Lock()
				got, deadlines := string(l.got), len(l.deadlines)
				l.mu.Unlock()
				if tc.wantErr {
					if err == nil || got != "" {
						t.Fatalf("%s: wrote %q, err %v; want nothing written and an error", how, got, err)
					}
					continue
				}
				if err != nil || n != len(b.data) || got != "hello, peer" {
					t.Fatalf("%s: wrote %d bytes (%q), err %v; want all of %q", how, n, got, err, b.data)
				}
				if deadlines != tc.deadlines {
					t.Fatalf("%s: %d write deadlines set, want %d", how, deadlines, tc.deadlines)
				}
			}
		})
	}
}
