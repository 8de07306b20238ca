package session

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
)

// fakeRecorder keeps what a session gives its recorder, as text.
type fakeRecorder struct {
	mu     sync.Mutex
	log    []string
	ended  chan string
	closed bool
}

func (f *fakeRecorder) add(s string) {
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
}
func (f *fakeRecorder) Output(p []byte)       { f.add("o:" + string(p)) }
func (f *fakeRecorder) Input(p []byte)        { f.add("i:" + string(p)) }
func (f *fakeRecorder) Resize(cols, rows int) { f.add("r") }
func (f *fakeRecorder) Event(e *Event)        { f.add("e:" + string(e.Type)) }
func (f *fakeRecorder) End(reason string, exit *link.ExitStatus) {
	f.add("end")
	f.ended <- reason
}
func (f *fakeRecorder) Close() error { f.closed = true; return nil }
func (f *fakeRecorder) Path() string { return "/rec/x.cast" }

func (f *fakeRecorder) text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.log, "|")
}

// A session recorded from its start gives its recorder the output as the
// buffer got it (a secret the peer echoes masked), each event after the
// output before it, the input with a typed secret as its mask, a resize,
// and its end; record_stop's StopRecording ends a recording of a session
// that goes on.
func TestRecorderFed(t *testing.T) {
	rec := &fakeRecorder{ended: make(chan string, 1)}
	r := newRegistry(t, Limits{}, Config{UTF8Hold: 150 * time.Millisecond,
		Record: func(RecordInfo) (Recorder, error) { return rec, nil }})
	s, peer, _ := testKind(t, r, Spec{Record: true}, []*fake{promptMarker()}, nil)
	if s.Recording() != "/rec/x.cast" {
		t.Fatalf("Recording: %q", s.Recording())
	}
	write(peer, "hello $ more")
	readUntil(t, s, "more")
	go func() {
		line, _ := bufio.NewReader(peer).ReadString('\r')
		peer.Write([]byte("got " + strings.TrimSpace(line) + "\r\n"))
	}()
	if err := s.SendCredential(ctxTimeout(t, 5*time.Second), []byte(testSecret), true); err != nil {
		t.Fatal(err)
	}
	readUntil(t, s, "\r\n")
	s.Resize(ctxTimeout(t, 5*time.Second), 90, 30) // the fake plugin takes no control requests: recorded all the same
	s.Close()
	select {
	case <-rec.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the recording was not ended")
	}
	stars := strings.Repeat("*", len(testSecret))
	want := "o:hello $ |e:prompt|o:more|i:" + stars + "\r|o:got " + stars + "\r\n|r|end"
	if got := rec.text(); got != want {
		t.Errorf("recorded:\n%q\nwant:\n%q", got, want)
	}
	if strings.Contains(rec.text(), testSecret) {
		t.Fatal("the secret reached the recorder")
	}
}

// StartRecording on a live session; StopRecording closes it; a second
// stop says it records nothing; a registry without Record refuses.
func TestRecordStartStopSession(t *testing.T) {
	rec := &fakeRecorder{ended: make(chan string, 1)}
	r := newRegistry(t, Limits{}, Config{Record: func(RecordInfo) (Recorder, error) { return rec, nil }})
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	write(peer, "before")
	readUntil(t, s, "before")
	if p, err := s.StartRecording(ctxTimeout(t, 5*time.Second)); err != nil || p != "/rec/x.cast" {
		t.Fatalf("StartRecording: %q %v", p, err)
	}
	write(peer, "after")
	readUntil(t, s, "after")
	if _, err := s.StopRecording(ctxTimeout(t, 5*time.Second)); err != nil || !rec.closed {
		t.Fatalf("StopRecording: %v", err)
	}
	if got := rec.text(); got != "o:after" {
		t.Errorf("recorded %q", got)
	}
	if _, err := s.StopRecording(ctxTimeout(t, 5*time.Second)); err == nil {
		t.Error("a second stop did not fail")
	}
	none := newRegistry(t, Limits{}, Config{})
	s2, _, _ := testKind(t, none, Spec{}, nil, nil)
	if _, err := s2.StartRecording(ctxTimeout(t, 5*time.Second)); err == nil {
		t.Error("a registry without recordings started one")
	}
}
