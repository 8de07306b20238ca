package session

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

const testSecret = "hunter2-Secret"

// readAll collects a session's output until it holds want (or fails).
func readUntil(t *testing.T, s *Session, want string) string {
	t.Helper()
	var got strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(got.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("never read %q; got %q", want, got.String())
		}
		r := read(t, s, WaitSpec{Timeout: 200 * time.Millisecond, Idle: 50 * time.Millisecond})
		got.Write(r.Data)
	}
	return got.String()
}

// A secret typed once is masked in every session for the registry's life:
// echoed back long after, split anywhere, in a session opened later; the
// mask has no expiry.
func TestSecretMaskedForServerLife(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{UTF8Hold: 150 * time.Millisecond})
	a, peerA, _ := testKind(t, r, Spec{}, nil, nil)
	go func() {
		line, _ := bufio.NewReader(peerA).ReadString('\r')
		peerA.Write([]byte("got " + strings.TrimSpace(line) + "\r\n"))
	}()
	if err := a.SendCredential(ctxTimeout(t, 5*time.Second), []byte(testSecret), true); err != nil {
		t.Fatal(err)
	}
	stars := strings.Repeat("*", len(testSecret))
	if got := readUntil(t, a, "\r\n"); got != "got "+stars+"\r\n" {
		t.Fatalf("echo: %q", got)
	}
	// Every cut of a copy into two writes, one a while after the other.
	for cut := 1; cut < len(testSecret); cut++ {
		write(peerA, "<"+testSecret[:cut])
		time.Sleep(20 * time.Millisecond)
		write(peerA, testSecret[cut:]+">")
		if got := readUntil(t, a, ">"); got != "<"+stars+">" {
			t.Fatalf("cut at %d: %q", cut, got)
		}
	}
	// A session opened later.
	b, peerB, _ := testKind(t, r, Spec{}, nil, nil)
	write(peerB, "later "+testSecret+" done")
	if got := readUntil(t, b, "done"); got != "later "+stars+" done" {
		t.Fatalf("second session: %q", got)
	}
	if r.Secrets().Len() != 1 {
		t.Errorf("the set holds %d secrets", r.Secrets().Len())
	}
}

// A possible start of a secret is held back only for the hold time; the
// rest of the secret arriving after it was released is still masked, so
// the whole secret never shows in the clear.
func TestSecretMaskContinuesAfterRelease(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{UTF8Hold: 100 * time.Millisecond})
	r.Secrets().Add([]byte(testSecret))
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	write(peer, "x "+testSecret[:5])
	start := time.Now()
	if got := readUntil(t, s, testSecret[:5]); got != "x "+testSecret[:5] {
		t.Fatalf("released: %q", got)
	}
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Errorf("the possible start was released after %v, before the hold time", took)
	}
	write(peer, testSecret[5:]+" y")
	if got := readUntil(t, s, " y"); got != strings.Repeat("*", len(testSecret)-5)+" y" {
		t.Fatalf("continuation: %q", got)
	}
	// Something else that starts like the secret is released as it is.
	write(peer, "hunting")
	if got := readUntil(t, s, "hunting"); got != "hunting" {
		t.Fatalf("not a secret: %q", got)
	}
}

// Plugin events' text and the session's log are masked too.
func TestSecretMaskedInEventsAndLog(t *testing.T) {
	var logs bytes.Buffer
	r := newRegistry(t, Limits{}, Config{Logger: slog.New(slog.NewTextHandler(&lockedBuf{b: &logs}, nil))})
	r.Secrets().Add([]byte(testSecret))
	ev := &fake{name: "ev", data: func(dir abi.Dir, p []byte, sk wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Inbound {
			sk.Emit(abi.Event, fmt.Appendf(nil, `{"type":"error","text":%q}`, string(p)))
			sk.Emit(abi.Event, fmt.Appendf(nil, `{"type":"custom","list":[%q]}`, string(p)))
			sk.Emit(abi.Log, p)
		}
		return abi.Continue, nil
	}}
	s, peer, _ := testKind(t, r, Spec{}, []*fake{ev}, nil)
	write(peer, "bad "+testSecret+"!")
	readUntil(t, s, "!")
	var evs []Event
	eventually(t, "the events", func() bool { evs = s.Events(0); return len(evs) > 1 })
	for _, e := range evs {
		if txt := string(abi.FieldsJSON(e.Body)); strings.Contains(txt, testSecret) || !strings.Contains(txt, "bad ****") {
			t.Errorf("%s event: %s", e.Type, txt)
		}
	}
	s.log.Info("a line", "err", fmt.Errorf("wrapped %s", testSecret), "s", testSecret)
	if l := logs.String(); strings.Contains(l, testSecret) || !strings.Contains(l, "****") {
		t.Errorf("log: %s", l)
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// BenchmarkStage: what masking costs a 32 KiB chunk of output, with no
// secret typed (the fast path), one, and the set full.
func BenchmarkStage(b *testing.B) {
	chunk := bytes.Repeat([]byte("interface GigabitEthernet0/1 is up, line protocol is up\r\n"), 32<<10/58)
	for _, n := range []int{0, 1, DefaultMaxSecrets} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			set := NewSecretSet(0)
			for i := range n {
				set.Add(fmt.Appendf(nil, "Secret-%04d-pass", i))
			}
			s := newSession(Config{Secrets: set, BufferSize: 1 << 20}, Spec{}, stageSet{outputs: []OutputStage{MaskStage(set)}}, nil, nil, nil)
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			for b.Loop() {
				s.stage(chunk)
				s.buf.Commit()
			}
		})
	}
}
