package session

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

// stagedRecorder is a fakeRecorder that takes output from the session's
// buffer itself (StagedRecorder).
type stagedRecorder struct {
	fakeRecorder
	short bool // a read gave more than the n told
}

func (f *stagedRecorder) OutputStaged(src StagedSource, from uint64, n int) {
	p := src.ReadStaged(nil, from)
	if len(p) > n {
		f.short = true
	}
	f.add("s:" + string(p))
}

// A StagedRecorder is given a walk's output straight from the buffer
// (what the buffer got: a secret the peer echoes masked) when the walk
// recorded no event; a walk with events goes through Output, each event
// after the output before it. A chunk larger than the buffer gives what
// the buffer still holds.
func TestRecorderStaged(t *testing.T) {
	rec := &stagedRecorder{fakeRecorder: fakeRecorder{ended: make(chan string, 1)}}
	r := newRegistry(t, Limits{}, Config{UTF8Hold: 150 * time.Millisecond, BufferSize: 4096,
		Record: func(RecordInfo) (Recorder, error) { return rec, nil }})
	s, peer, _ := testKind(t, r, Spec{Record: true}, []*fake{promptMarker()}, nil)
	write(peer, "hello $ more")
	readUntil(t, s, "more")
	go func() {
		line, _ := bufio.NewReader(peer).ReadString('\r')
		peer.Write([]byte("got " + strings.TrimSpace(line) + " text"))
	}()
	if err := s.SendCredential(ctxTimeout(t, 5*time.Second), []byte(testSecret), true); err != nil {
		t.Fatal(err)
	}
	readUntil(t, s, "text")
	big := strings.Repeat("x", 6000) + "END"
	write(peer, big)
	readUntil(t, s, "END")
	s.Close()
	select {
	case <-rec.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the recording was not ended")
	}
	stars := strings.Repeat("*", len(testSecret))
	got := rec.text()
	want := "o:hello $ |e:prompt|o:more|i:" + stars + "\r|s:got " + stars + " text|s:"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "END|end") {
		t.Errorf("recorded:\n%.200q\nwant it to start with:\n%q", got, want)
	}
	if strings.Contains(got, testSecret) || rec.short {
		t.Errorf("the secret reached the recorder, or a read gave more than told (%v)", rec.short)
	}
}
