package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// TestNewKindUsesEverySharedPath: a session kind that exists only in this
// test (an in-memory pipe link that can resize, signal and report an exit
// status) goes through Open, the pump, the chain, the screen, the writer,
// waits, reads, control, interrupt, resize and the end of a session without
// any code of its own in the package.
func TestNewKindUsesEverySharedPath(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	var fedMu sync.Mutex
	var fed []byte
	screen := &fake{name: "screen",
		data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
			fedMu.Lock()
			fed = append(fed, p...)
			fedMu.Unlock()
			if bytes.Contains(p, []byte("\x1b[6n")) { // a cursor position query
				s.Emit(abi.ToPeer, []byte("\x1b[1;1R"))
				s.Emit(abi.Event, []byte(`{"type":"query","what":"cpr"}`))
			}
			return abi.Consumed, nil
		},
		control: func(req []byte, s wasmhost.Sink) error {
			s.Emit(abi.Reply, []byte(`{"ok":true}`))
			return nil
		},
	}
	marker := promptMarker()
	s, peer, pl := testKind(t, r, Spec{Kind: "pipe", Name: "box", Peer: Peer{Command: "box --test"}}, []*fake{marker}, screen)
	if s.Info().Command != "box --test" || s.Kind != "pipe" {
		t.Fatalf("info: %+v", s.Info())
	}

	// Output reaches the buffer, the prompt event the waiter.
	write(peer, "hello\r\n$ ")
	res := read(t, s, WaitSpec{Prompt: true, Timeout: 5 * time.Second})
	if res.Reason != ReasonPrompt || string(res.Data) != "hello\r\n$ " || len(res.Events) != 1 || res.Events[0].Type != "prompt" {
		t.Fatalf("prompt read: %q %q %+v", res.Reason, res.Data, res.Events)
	}

	// The screen's answer to a query travels through the chain to the peer,
	// and its event reaches the reader.
	write(peer, "\x1b[6n")
	if got := readN(t, peer, 6); string(got) != "\x1b[1;1R" {
		t.Fatalf("query answer %q", got)
	}
	res = read(t, s, WaitSpec{Until: MustCompilePattern(`.`), Timeout: 5 * time.Second})
	if len(res.Events) != 1 || res.Events[0].Type != "query" {
		t.Fatalf("screen event: %+v", res.Events)
	}

	// Input, through the chain and the writer.
	go func() { s.Send(ctxTimeout(t, 5*time.Second), []byte("ls\r\n")) }()
	if got := readN(t, peer, 4); string(got) != "ls\r\n" {
		t.Fatalf("peer got %q", got)
	}

	// Resize: the link's window and every plugin, the screen included.
	if err := s.Resize(ctxTimeout(t, 5*time.Second), 120, 40); err != nil {
		t.Fatal(err)
	}
	if c, rw := s.Size(); c != 120 || rw != 40 || pl.size != [2]int{120, 40} {
		t.Fatalf("size %dx%d, link %v", c, rw, pl.size)
	}

	// Interrupt: the chain's plugin answers it.
	go func() { s.Interrupt(ctxTimeout(t, 5*time.Second), "interrupt") }()
	if got := readN(t, peer, 2); !bytes.Equal(got, []byte{0xff, 0xf4}) {
		t.Fatalf("interrupt: peer got % x", got)
	}

	// Output a plugin makes outside a chunk reaches the peer at once.
	marker.emitAsync(abi.Emission{Stream: abi.ToPeer, Data: []byte("keepalive")})
	if got := readN(t, peer, 9); string(got) != "keepalive" {
		t.Fatalf("async output: peer got %q", got)
	}

	// The screen saw exactly what the buffer holds, in order.
	all, _, _ := s.buf.Read(0, 0)
	fedMu.Lock()
	if !bytes.Equal(fed, all) {
		t.Fatalf("screen fed %q, buffer holds %q", fed, all)
	}
	fedMu.Unlock()

	// The process exits: the session ends, releases its link and plugins
	// at once, and stays readable with its exit status.
	write(peer, "bye\r\n")
	read(t, s, WaitSpec{Until: MustCompilePattern(`bye`), Timeout: 5 * time.Second})
	pl.exit <- link.ExitStatus{Code: 3}
	peer.Close()
	res = read(t, s, WaitSpec{Exit: true, Timeout: 5 * time.Second})
	if res.Reason != ReasonExit || res.Alive {
		t.Fatalf("exit read: %q alive=%v", res.Reason, res.Alive)
	}
	eventually(t, "release", func() bool { return marker.closed.Load() })
	eventually(t, "exit status", func() bool { st, ok := s.ExitStatus(); return ok && st.Code == 3 })
	if err := s.Send(context.Background(), []byte("x")); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("send after exit: %v", err)
	}
	if got, err := r.Get("", "box"); err != nil || got != s {
		t.Fatalf("ended session not readable by name: %v", err)
	}
	// The final screen stays readable until the session is discarded.
	if screen.closed.Load() {
		t.Fatal("the screen was released with the link")
	}
	if reply, err := s.Screen(context.Background(), []byte(`{"op":"screen"}`)); err != nil || string(reply) != `{"ok":true}` {
		t.Fatalf("final screen: %q, %v", reply, err)
	}
	r.Remove(s.ID)
	if !screen.closed.Load() {
		t.Fatal("screen still open after the session was removed")
	}
	if _, err := s.Screen(context.Background(), []byte(`{"op":"screen"}`)); !errors.Is(err, ErrExpired) {
		t.Fatalf("screen after remove: %v", err)
	}
}

// TestInterruptFallsBackToTheLink: with no plugin that takes an interrupt,
// a link that can signal gets it (a PTY's SIGINT).
func TestInterruptFallsBackToTheLink(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, _, pl := testKind(t, r, Spec{}, []*fake{{name: "plain"}}, nil)
	if err := s.Interrupt(ctxTimeout(t, 5*time.Second), "interrupt"); err != nil {
		t.Fatal(err)
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.signals) != 1 || pl.signals[0] != "interrupt" {
		t.Fatalf("signals %v", pl.signals)
	}
}

// TestEventAtTheCursorIsRead: events are numbered and every reader has an
// event cursor, so an event at the very offset a read ended at — Telnet
// negotiation before the first byte, a GA after prompt text already read —
// comes with the next read and satisfies a prompt wait.
func TestEventAtTheCursorIsRead(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	mark := &fake{name: "mark", data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
		switch string(p) {
		case "NEG":
			s.Emit(abi.Event, []byte(`{"type":"option","option":"ECHO"}`))
			return abi.Consumed, nil
		case "GA":
			s.Emit(abi.Event, []byte(`{"type":"prompt","mark":"GA"}`))
			return abi.Consumed, nil
		}
		return abi.Continue, nil
	}}
	s, peer, _ := testKind(t, r, Spec{}, []*fake{mark}, nil)
	peer.Write([]byte("NEG")) // an event before the first byte
	eventually(t, "the event", func() bool { return len(s.Events(0)) == 1 })
	res := read(t, s, WaitSpec{})
	if len(res.Events) != 1 || res.Events[0].Type != "option" || len(res.Data) != 0 {
		t.Fatalf("read after negotiation: %q %+v", res.Data, res.Events)
	}
	peer.Write([]byte("router> "))
	res = read(t, s, WaitSpec{Until: MustCompilePattern(`> $`), Timeout: 5 * time.Second})
	if string(res.Data) != "router> " {
		t.Fatalf("prompt text: %q", res.Data)
	}
	write(peer, "GA") // the mark comes after the text was read
	res = read(t, s, WaitSpec{Prompt: true, Timeout: 5 * time.Second})
	if res.Reason != ReasonPrompt || len(res.Events) != 1 || res.Events[0].Type != "prompt" {
		t.Fatalf("prompt wait: %q %+v", res.Reason, res.Events)
	}
	if res = read(t, s, WaitSpec{}); len(res.Events) != 0 {
		t.Fatalf("events given twice: %+v", res.Events)
	}
}

// TestSendToAPeerThatStopsReading: every send answers within the write
// deadline, says how much was written, and a full queue fails at once.
func TestSendToAPeerThatStopsReading(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{WriteTimeout: 200 * time.Millisecond, WriteQueue: 4096})
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	_ = peer // never reads
	var wg sync.WaitGroup
	errs := make([]error, 3)
	took := make([]time.Duration, 3)
	for i := range 3 {
		wg.Go(func() {
			start := time.Now()
			errs[i] = s.Send(context.Background(), bytes.Repeat([]byte{'a' + byte(i)}, 3000))
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	full := 0
	for i, err := range errs {
		if !errors.Is(err, ErrPeerStalled) {
			t.Errorf("send %d: %v, want ErrPeerStalled", i, err)
		}
		if took[i] > 2*time.Second {
			t.Errorf("send %d answered after %v", i, took[i])
		}
		if err != nil && strings.Contains(err.Error(), "waiting to be written") {
			full++
		}
	}
	if full == 0 {
		t.Errorf("no send was refused at once by the full queue: %v", errs)
	}
	// A peer that reads part of a send: the error says how much.
	go func() {
		buf := make([]byte, 1000)
		peer.Read(buf)
	}()
	err := s.Send(context.Background(), bytes.Repeat([]byte("z"), 5000))
	if err == nil || !strings.Contains(err.Error(), "of 5000 bytes written") {
		t.Fatalf("partial send: %v", err)
	}
}

// TestSendRacingClose: a send racing a close always gets an answer.
func TestSendRacingClose(t *testing.T) {
	for range 20 {
		r := newRegistry(t, Limits{}, Config{WriteTimeout: 300 * time.Millisecond})
		s, peer, _ := testKind(t, r, Spec{}, []*fake{{name: "pass"}}, nil)
		go func() {
			buf := make([]byte, 1<<16)
			for {
				if _, err := peer.Read(buf); err != nil {
					return
				}
			}
		}()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				done := make(chan error, 1)
				go func() { done <- s.Send(context.Background(), []byte("data\r\n")) }()
				select {
				case err := <-done:
					if err != nil && !errors.Is(err, ErrDisconnected) && !errors.Is(err, ErrPeerStalled) {
						t.Errorf("send: %v", err)
					}
				case <-time.After(3 * time.Second):
					t.Error("a send racing a close got no answer")
				}
			})
		}
		s.Close()
		wg.Wait()
	}
}

// TestCloseWithAStuckPluginIsBounded: a plugin call that never returns (an
// unguarded loop) does not make closing the session or the registry hang.
func TestCloseWithAStuckPluginIsBounded(t *testing.T) {
	r := NewRegistry(Limits{}, Config{CallGrace: 200 * time.Millisecond})
	block := make(chan struct{})
	defer close(block)
	stuck := &fake{name: "stuck", data: func(abi.Dir, []byte, wasmhost.Sink) (abi.Action, error) {
		<-block
		return abi.Continue, nil
	}}
	s, peer, _ := testKind(t, r, Spec{}, []*fake{stuck}, nil)
	write(peer, "x")
	eventually(t, "the stuck call", func() bool { return stuck.calls.Load() == 1 })
	start := time.Now()
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("closing the registry hangs on a stuck plugin call")
	}
	if s.State() != StateTerminated {
		t.Fatalf("state %s after %v", s.State(), time.Since(start))
	}
	if err := s.Send(ctxTimeout(t, time.Second), []byte("x")); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("send to the closed session: %v", err)
	}
}

// TestFailClosedPluginEndsTheSession: a fail-closed plugin's failure ends
// the session with its error; nothing passes through unprocessed.
func TestFailClosedPluginEndsTheSession(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	cipher := &fake{name: "ssh", data: func(abi.Dir, []byte, wasmhost.Sink) (abi.Action, error) {
		return abi.Continue, fatalErr{}
	}}
	s, peer, _ := testKind(t, r, Spec{}, []*fake{cipher}, nil)
	write(peer, "ciphertext")
	res := read(t, s, WaitSpec{Exit: true, Timeout: 5 * time.Second})
	if res.Reason != ReasonExit || len(res.Data) != 0 {
		t.Fatalf("read: %q %q", res.Reason, res.Data)
	}
	if err := s.Send(context.Background(), []byte("x")); err == nil || !strings.Contains(err.Error(), "fails closed") {
		t.Fatalf("send after the failure: %v", err)
	}
}

type fatalErr struct{}

func (fatalErr) Error() string { return "plugin ssh failed: trap; fails closed" }
func (fatalErr) Fatal() bool   { return true }

// TestChainWalkIsBounded: two plugins that bounce output between them for
// ever are stopped; the session goes on.
func TestChainWalkIsBounded(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	lower := &fake{name: "lower", data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Outbound {
			s.Emit(abi.ToUser, p) // reflect input back up
			return abi.Consumed, nil
		}
		return abi.Continue, nil
	}}
	upper := &fake{name: "upper", data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Inbound {
			s.Emit(abi.ToPeer, p) // and down again
			return abi.Consumed, nil
		}
		return abi.Continue, nil
	}}
	s, peer, _ := testKind(t, r, Spec{}, []*fake{lower, upper}, nil)
	if err := s.Send(ctxTimeout(t, 5*time.Second), []byte("ping")); err != nil {
		t.Fatal(err)
	}
	evs := s.Events(0)
	if len(evs) != 1 || evs[0].Type != "chain_overflow" {
		t.Fatalf("events %+v", evs)
	}
	// The session goes on: the next chunk is walked (and stopped) too.
	write(peer, "still here")
	eventually(t, "the next walk", func() bool { return len(s.Events(0)) == 2 })
	if !s.Alive() {
		t.Fatal("the session ended")
	}
}

// TestReadsMakeProgress: an incomplete last character is held back only
// while the peer is active; maxBytes never splits a character and never
// returns nothing when a character is there; a read never spins.
func TestReadsMakeProgress(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	peer.Write([]byte("abc\xc3"))
	res := read(t, s, WaitSpec{Idle: 20 * time.Millisecond, Timeout: 5 * time.Second})
	if string(res.Data) != "abc" || !res.HasMore {
		t.Fatalf("first read %q hasMore=%v", res.Data, res.HasMore)
	}
	start := time.Now()
	res = read(t, s, WaitSpec{Idle: 20 * time.Millisecond, Timeout: 5 * time.Second})
	if string(res.Data) != "\xc3" || res.Reason != ReasonIdle {
		t.Fatalf("dangling byte: %q %q after %v", res.Data, res.Reason, time.Since(start))
	}
	if took := time.Since(start); took < utf8Hold/2 {
		t.Fatalf("the dangling byte came after %v, before the peer was quiet", took)
	}

	peer.Write([]byte("é"))
	eventually(t, "é", func() bool { return s.buf.Head() == 6 })
	r1, _ := s.Read(context.Background(), ReadOptions{MaxBytes: 1, UTF8: true})
	if string(r1.Data) != "é" {
		t.Fatalf("maxBytes 1 on é: %q", r1.Data)
	}
	peer.Write([]byte("ab€"))
	eventually(t, "ab€", func() bool { return s.buf.Head() == 11 })
	r1, _ = s.Read(context.Background(), ReadOptions{MaxBytes: 3, UTF8: true})
	if string(r1.Data) != "ab€" {
		t.Fatalf("maxBytes 3 on ab€: %q", r1.Data)
	}
}

// TestConcurrentReadsAreSerialized: two reads waiting on one session each
// get their own match, with its text.
func TestConcurrentReadsAreSerialized(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	results := make(chan ReadResult, 2)
	for range 2 {
		go func() {
			res, err := s.Read(context.Background(), ReadOptions{UTF8: true, Wait: WaitSpec{Until: MustCompilePattern(`X`), Timeout: 5 * time.Second}})
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	eventually(t, "both waiting", func() bool { return s.waiting.Load() >= 1 })
	peer.Write([]byte("aX"))
	first := <-results
	peer.Write([]byte("bX"))
	second := <-results
	if first.Reason != ReasonMatched || string(first.Data) != "aX" || second.Reason != ReasonMatched || string(second.Data) != "bX" {
		t.Fatalf("reads: %q %q, %q %q", first.Reason, first.Data, second.Reason, second.Data)
	}
}

// TestUntil: patterns are capped, matched incrementally across windows,
// ignore escape sequences, and a costly one stops at the deadline.
func TestUntil(t *testing.T) {
	for _, bad := range []string{strings.Repeat("[a-z]", 30000) + "Q", "a{1000}", "(", strings.Repeat("x", MaxPatternLen+1)} {
		if _, err := CompilePattern(bad); err == nil {
			t.Errorf("pattern %.30q… accepted", bad)
		}
	}
	r := newRegistry(t, Limits{}, Config{})
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	go func() {
		for i := range 64 {
			peer.Write([]byte(strings.Repeat(fmt.Sprintf("line %03d ", i), 1000) + "\r\n"))
		}
		peer.Write([]byte("\x1b[1mdo\x1b[0mne\r\nrouter# "))
	}()
	res := read(t, s, WaitSpec{Until: MustCompilePattern(`(?m)^done\r?\n.*# $`), Timeout: 10 * time.Second})
	if res.Reason != ReasonMatched {
		t.Fatalf("until across windows: %q", res.Reason)
	}
	// A costly pattern against a lot of text gives up at the deadline.
	big := strings.Repeat("abcdefghij", 26<<10)
	go peer.Write([]byte(big))
	eventually(t, "256 KiB", func() bool {
		return s.buf.Head() >= s.w.screenOff+uint64(len(big)) || s.Info().Unread >= uint64(len(big))
	})
	costly := MustCompilePattern(`[a-z]{60}[a-z]{60}[a-z]{60}Q`)
	start := time.Now()
	res = read(t, s, WaitSpec{Until: costly, Timeout: 100 * time.Millisecond})
	if res.Reason != ReasonTimeout || time.Since(start) > 3*time.Second {
		t.Fatalf("costly pattern: %q after %v", res.Reason, time.Since(start))
	}
}

// TestEndedSessionsAreBounded: an ended session frees its link at once and
// does not count against the live limit; ended ones are kept up to a
// bound, the oldest discarded first, which then reads as expired.
func TestEndedSessionsAreBounded(t *testing.T) {
	r := newRegistry(t, Limits{MaxSessions: 2, MaxEnded: 2}, Config{})
	var ids []string
	for i := range 5 {
		s, peer, pl := testKind(t, r, Spec{Name: fmt.Sprintf("s%d", i)}, nil, nil)
		peer.Write([]byte("output"))
		peer.Close()
		eventually(t, "the end", func() bool { return !s.Alive() })
		eventually(t, "the link closed", func() bool {
			_, err := pl.Conn.Write([]byte("x"))
			return err != nil
		})
		ids = append(ids, s.ID)
	}
	eventually(t, "eviction", func() bool {
		_, err := r.Get("", ids[0])
		return errors.Is(err, ErrExpired)
	})
	if _, err := r.Get("", "s0"); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "Session expired") {
		t.Fatalf("by name: %v", err)
	}
	for _, id := range ids[3:] {
		s, err := r.Get("", id)
		if err != nil {
			t.Fatalf("recent ended session %s: %v", id, err)
		}
		if res := read(t, s, WaitSpec{}); string(res.Data) != "output" {
			t.Fatalf("ended session's output: %q", res.Data)
		}
	}
}

func TestNames(t *testing.T) {
	for _, bad := range []string{"a\x00b", "evil\u202egnp.exe", strings.Repeat("n", 65), "tab\tname", ""} {
		if ValidName(bad) == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	for _, good := range []string{"r1", "edge router 1", "路由器", strings.Repeat("n", 64)} {
		if err := ValidName(good); err != nil {
			t.Errorf("name %q: %v", good, err)
		}
	}
	r := newRegistry(t, Limits{}, Config{})
	_, err := r.Open(context.Background(), nil, Spec{Name: "x\x00", Dial: func(context.Context) (link.Link, error) { return nil, nil }})
	if !errors.Is(err, ErrInvalidName) {
		t.Fatalf("Open with a bad name: %v", err)
	}
}

func TestIdleSessionsAreReaped(t *testing.T) {
	r := newRegistry(t, Limits{IdleTimeout: 100 * time.Millisecond, ReapEvery: 20 * time.Millisecond}, Config{})
	s, _, _ := testKind(t, r, Spec{}, nil, nil)
	eventually(t, "reaping", func() bool {
		_, err := r.Get("", s.ID)
		return errors.Is(err, ErrNotFound)
	})
	if s.State() != StateTerminated {
		t.Fatalf("reaped session state %s", s.State())
	}
}

func TestCancelStopsWait(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	s, _, _ := testKind(t, r, Spec{}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s.waiting.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := s.Read(ctx, ReadOptions{Wait: WaitSpec{Exit: true, Timeout: time.Minute}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestEvictionReported(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{BufferSize: 1024})
	s, peer, _ := testKind(t, r, Spec{}, nil, nil)
	peer.Write(bytes.Repeat([]byte("x"), 3000))
	peer.Write([]byte("END"))
	res := read(t, s, WaitSpec{Until: MustCompilePattern(`END`), Timeout: 5 * time.Second})
	if len(res.Data) != 1024 || res.Evicted != 3003-1024 {
		t.Fatalf("read %d bytes, evicted %d; want 1024 and %d", len(res.Data), res.Evicted, 3003-1024)
	}
	if u := s.Info().Unread; u != 0 {
		t.Fatalf("unread after reading everything: %d", u)
	}
}

// TestPatternSizeEstimate: the size a pattern is capped by tracks the
// program Go's compiler really makes of it.
func TestPatternSizeEstimate(t *testing.T) {
	for _, e := range []string{`[#$] $`, `\nrt123x\r?\n.*[#$] $`, `a{1000}`, `[a-z]{200}Q`, `(?m)^done\r?\n.*# $`,
		`[a-z]{60}[a-z]{60}[a-z]{60}Q`, `((a{10}){10}){10}`, `(?i)password:\s*$`, `x{3,20}y+z*`} {
		parsed, _ := syntax.Parse(e, syntax.Perl)
		prog, _ := syntax.Compile(parsed.Simplify())
		est, real := progSize(parsed), len(prog.Inst)
		if est < real*3/4-2 || est > real*5/4+2 {
			t.Errorf("%q: estimated %d instructions, compiles to %d", e, est, real)
		}
	}
}

// TestStopIsGraceful: when its owner goes away a process session is
// stopped with the owner policy (grace, then SIGTERM, then SIGKILL: SPEC
// PTY-3), input is refused from the start, and the session ends saying it
// was stopped, with the exit status. Server shutdown uses the short policy.
func TestStopIsGraceful(t *testing.T) {
	r := newRegistry(t, Limits{StopGrace: 3 * time.Second, StopTerm: 2 * time.Second,
		ShutdownGrace: 100 * time.Millisecond, ShutdownTerm: 200 * time.Millisecond}, Config{})
	a, _, pa := testKind(t, r, Spec{Owner: "client-1"}, nil, nil)
	b, _, pb := testKind(t, r, Spec{Owner: "client-2"}, nil, nil)
	r.CloseOwned("client-1")
	if _, err := r.Get("client-1", a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("owned session still there: %v", err)
	}
	pa.mu.Lock()
	stops := pa.stops
	pa.mu.Unlock()
	if len(stops) != 1 || stops[0] != [2]time.Duration{3 * time.Second, 2 * time.Second} {
		t.Fatalf("owner's stop = %v", stops)
	}
	if a.Info().Error != "the session was stopped" {
		t.Fatalf("end reason %q", a.Info().Error)
	}
	if err := a.Send(context.Background(), []byte("x")); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("send after stop: %v", err)
	}
	if !b.Alive() {
		t.Fatal("another owner's session was stopped")
	}
	r.Close()
	pb.mu.Lock()
	stops = pb.stops
	pb.mu.Unlock()
	if len(stops) != 1 || stops[0] != [2]time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		t.Fatalf("shutdown stop = %v", stops)
	}
}

// TestScreenRebuiltAfterFailOver: a screen whose plugin failed and was
// reopened without state gets a reset and the whole raw buffer again, its
// answers to replayed queries dropped; then it goes on with new output.
func TestScreenRebuiltAfterFailOver(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	var mu sync.Mutex
	var fed []byte
	var answers int
	screen := &fake{name: "screen"}
	screen.data = func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
		mu.Lock()
		fed = append(fed, p...)
		mu.Unlock()
		if bytes.Contains(p, []byte("\x1b[6n")) {
			s.Emit(abi.ToPeer, []byte("R"))
			answers++
		}
		if bytes.Contains(p, []byte("FAIL")) {
			screen.resets.Add(1) // the instance died; this chunk was retried on a fresh one
		}
		return abi.Consumed, nil
	}
	s, peer, _ := testKind(t, r, Spec{}, nil, screen)
	write(peer, "one\x1b[6n")
	if got := readN(t, peer, 1); string(got) != "R" {
		t.Fatalf("answer: %q", got)
	}
	read(t, s, WaitSpec{Until: MustCompilePattern(`one`), Timeout: 5 * time.Second})
	write(peer, "two FAIL")
	read(t, s, WaitSpec{Until: MustCompilePattern(`FAIL`), Timeout: 5 * time.Second})
	write(peer, " three")
	read(t, s, WaitSpec{Until: MustCompilePattern(`three`), Timeout: 5 * time.Second})
	mu.Lock()
	got := string(fed)
	n := answers
	mu.Unlock()
	want := "one\x1b[6n" + "two FAIL" + "\x1bc" + "one\x1b[6ntwo FAIL" + " three"
	if got != want {
		t.Fatalf("screen fed %q\nwant         %q", got, want)
	}
	// The replayed query was answered by the screen, but nothing more
	// reached the peer.
	if n != 2 {
		t.Fatalf("answers computed %d", n)
	}
	peer.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if b, _ := io.ReadAll(peer); len(b) != 0 {
		t.Fatalf("the replay's answers reached the peer: %q", b)
	}
}

// TestOrphansAreReapedSooner: the sessions of an owner that went away are
// reaped (gracefully) after OrphanIdleTimeout, the others only after
// IdleTimeout; a lookup of an orphan restarts its idle time.
func TestOrphansAreReapedSooner(t *testing.T) {
	const orphanIdle = 300 * time.Millisecond
	r := newRegistry(t, Limits{IdleTimeout: time.Hour, OrphanIdleTimeout: orphanIdle, ReapEvery: 10 * time.Millisecond}, Config{})
	gone, _, _ := testKind(t, r, Spec{Owner: "mcp-1"}, nil, nil)
	kept, _, _ := testKind(t, r, Spec{Owner: "mcp-1"}, nil, nil)
	other, _, _ := testKind(t, r, Spec{Owner: "mcp-2"}, nil, nil)
	none, _, _ := testKind(t, r, Spec{}, nil, nil)
	if n := r.Orphan(""); n != 0 {
		t.Fatalf("Orphan(\"\") marked %d sessions", n)
	}
	start := time.Now()
	if n := r.Orphan("mcp-1"); n != 2 {
		t.Fatalf("Orphan marked %d sessions, want 2", n)
	}
	if !r.Orphaned(gone.ID) || r.Orphaned(other.ID) || r.Orphaned(none.ID) {
		t.Fatal("Orphaned reports the wrong sessions")
	}
	// Looked up by a client that came back: its clock restarts.
	stopLooking := make(chan struct{})
	lookedUp := make(chan struct{})
	go func() {
		defer close(lookedUp)
		for {
			select {
			case <-stopLooking:
				return
			case <-time.After(orphanIdle / 5):
				r.Get("mcp-1", kept.ID)
			}
		}
	}()
	// Looking with Get would keep an orphan alive: List does not.
	listed := func(s *Session) bool { return slices.Contains(r.List(""), s) }
	eventually(t, "reaping the orphan", func() bool { return !listed(gone) })
	if waited := time.Since(start); waited < orphanIdle {
		t.Fatalf("orphan reaped after %v, before its %v", waited, orphanIdle)
	}
	eventually(t, "the reaped orphan's end", func() bool { return gone.State() == StateTerminated })
	for _, s := range []*Session{kept, other, none} {
		if _, err := r.Get(s.owner, s.ID); err != nil {
			t.Fatalf("session of owner %q: %v", s.owner, err)
		}
	}
	close(stopLooking)
	<-lookedUp
	eventually(t, "reaping the orphan nobody uses any more", func() bool { return !listed(kept) })
	if _, err := r.Get("mcp-2", other.ID); err != nil {
		t.Fatalf("another owner's session: %v", err)
	}
}

// TestPumpRepliesToAPeerThatReadsLate: the plugins' replies, which the pump
// writes itself when nothing is queued, reach a peer that reads only after
// it has sent everything — whole and in order — and the pump kept reading
// meanwhile (a pump stuck on its write would deadlock with this peer).
func TestPumpRepliesToAPeerThatReadsLate(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{WriteTimeout: 10 * time.Second})
	replier := &fake{name: "replier", data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Inbound {
			s.Emit(abi.ToPeer, bytes.Repeat(p[:3], 16<<10/3))
		}
		return abi.Continue, nil
	}}
	s, peer, _ := testKind(t, r, Spec{}, []*fake{replier}, nil)
	var want bytes.Buffer
	for i := range 20 {
		chunk := fmt.Sprintf("c%02d", i)
		peer.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := peer.Write([]byte(chunk)); err != nil {
			t.Fatalf("the pump stopped reading at chunk %d: %v", i, err)
		}
		want.Write(bytes.Repeat([]byte(chunk), 16<<10/3))
	}
	got := readN(t, peer, want.Len())
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the replies arrived out of order or cut (%d bytes)", len(got))
	}
	if res := read(t, s, WaitSpec{}); !bytes.HasPrefix(res.Data, []byte("c00c01")) || !bytes.HasSuffix(res.Data, []byte("c19")) {
		t.Errorf("the session's output: %q", res.Data)
	}
}

// TestOwnerGoneBeforeOpenEnds: a session whose open finishes after its
// owner went away — a call still running when its MCP session timed out or
// was deleted — is not left outside both rules: after Orphan it starts as
// an orphan (reaped after OrphanIdleTimeout), after CloseOwned its open
// fails and nothing of it stays.
func TestOwnerGoneBeforeOpenEnds(t *testing.T) {
	r := newRegistry(t, Limits{IdleTimeout: time.Hour, OrphanIdleTimeout: 200 * time.Millisecond, ReapEvery: 10 * time.Millisecond}, Config{})
	if n := r.Orphan("mcp-timed-out"); n != 0 {
		t.Fatalf("Orphan marked %d sessions of an owner with none", n)
	}
	late, _, _ := testKind(t, r, Spec{Owner: "mcp-timed-out"}, nil, nil)
	if !r.Orphaned(late.ID) {
		t.Fatal("a session opened for an owner that went away is not an orphan")
	}
	eventually(t, "reaping the late orphan", func() bool { return late.State() == StateTerminated })
	other, _, _ := testKind(t, r, Spec{Owner: "mcp-alive"}, nil, nil)
	if r.Orphaned(other.ID) {
		t.Fatal("another owner's session is an orphan")
	}

	r.CloseOwned("mcp-deleted")
	ours, peer := net.Pipe()
	defer peer.Close()
	pl := &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}
	spec := Spec{Kind: "pipe", Owner: "mcp-deleted", Dial: func(context.Context) (link.Link, error) { return pl, nil }}
	noPlugins := func(string, abi.Kind, []byte) (Binding, error) { return nil, errors.New("no such plugin") }
	if _, err := r.Open(context.Background(), noPlugins, spec); !errors.Is(err, ErrOwnerGone) {
		t.Fatalf("open for a deleted owner: %v, want ErrOwnerGone", err)
	}
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err == nil {
		t.Fatal("the refused session's link is still open")
	}
	if n := len(r.Owned("mcp-deleted", "")); n != 0 {
		t.Fatalf("%d sessions of the deleted owner remain", n)
	}
}
