package session

import (
	"bytes"
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// promptBinding passes data through and marks a prompt after every "$ ".
type promptBinding struct{ closed bool }

func (b *promptBinding) Data(dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error) {
	if dir == abi.Outbound || !bytes.Contains(p, []byte("$ ")) {
		return abi.Continue, nil, nil
	}
	var ems []abi.Emission
	for len(p) > 0 {
		i := bytes.Index(p, []byte("$ "))
		if i < 0 {
			ems = append(ems, abi.Emission{Stream: abi.ToUser, Data: p})
			break
		}
		ems = append(ems,
			abi.Emission{Stream: abi.ToUser, Data: p[:i+2]},
			abi.Emission{Stream: abi.Event, Data: []byte(`{"type":"prompt","mark":"test"}`)})
		p = p[i+2:]
	}
	return abi.Consumed, ems, nil
}

func (b *promptBinding) Control(req []byte) ([]abi.Emission, error) {
	if strings.Contains(string(req), "interrupt") {
		return []abi.Emission{{Stream: abi.ToPeer, Data: []byte{0xff, 0xf4}}}, nil
	}
	return nil, errors.New("unsupported")
}
func (b *promptBinding) Close()                         { b.closed = true }
func (b *promptBinding) Plugin() (name, version string) { return "prompt", "test" }

// pair starts a session over one end of a TCP loopback connection and
// returns the other end as the peer.
func pair(t *testing.T, cfg Config) (*Session, net.Conn, *promptBinding) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); acc <- c }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-acc
	b := &promptBinding{}
	s := newSession(cfg, KindTelnet, c.(*net.TCPConn), []Binding{b})
	s.ID = "test"
	s.start()
	t.Cleanup(func() { s.Close(); peer.Close() })
	return s, peer, b
}

func read(t *testing.T, s *Session, w WaitSpec) ReadResult {
	t.Helper()
	r, err := s.Read(context.Background(), ReadOptions{Wait: w, UTF8: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadWaits(t *testing.T) {
	s, peer, _ := pair(t, Config{})
	peer.Write([]byte("banner\r\nlogin: "))
	r := read(t, s, WaitSpec{Until: regexp.MustCompile(`login: $`), Timeout: 5 * time.Second})
	if r.Reason != ReasonMatched || string(r.Data) != "banner\r\nlogin: " {
		t.Fatalf("until: %q %q", r.Reason, r.Data)
	}
	if r = read(t, s, WaitSpec{}); r.Reason != ReasonImmediate || len(r.Data) != 0 {
		t.Fatalf("second read not empty: %q %q", r.Reason, r.Data)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		peer.Write([]byte("\x1b[32mok\x1b[0m\r\nuser@box:~$ "))
	}()
	r = read(t, s, WaitSpec{Prompt: true, Timeout: 5 * time.Second})
	if r.Reason != ReasonPrompt || !strings.HasSuffix(string(r.Data), "$ ") {
		t.Fatalf("prompt: %q %q", r.Reason, r.Data)
	}
	// until ignores escape sequences.
	peer.Write([]byte("\x1b[1mdo\x1b[0mne\r\n"))
	r = read(t, s, WaitSpec{Until: regexp.MustCompile(`done`), Timeout: 5 * time.Second})
	if r.Reason != ReasonMatched {
		t.Fatalf("until through ANSI: %q", r.Reason)
	}
	peer.Write([]byte("partial"))
	r = read(t, s, WaitSpec{Idle: 50 * time.Millisecond, Timeout: 5 * time.Second})
	if r.Reason != ReasonIdle || string(r.Data) != "partial" {
		t.Fatalf("idle: %q %q", r.Reason, r.Data)
	}
	r = read(t, s, WaitSpec{Until: regexp.MustCompile(`never`), Timeout: 30 * time.Millisecond})
	if r.Reason != ReasonTimeout || r.TimeoutMs != 30 {
		t.Fatalf("timeout: %q %d", r.Reason, r.TimeoutMs)
	}
	peer.Write([]byte("bye\r\n"))
	peer.Close()
	r = read(t, s, WaitSpec{Until: regexp.MustCompile(`never`), Timeout: 5 * time.Second})
	if r.Reason != ReasonEOF || string(r.Data) != "bye\r\n" {
		t.Fatalf("eof: %q %q", r.Reason, r.Data)
	}
	r = read(t, s, WaitSpec{Exit: true, Timeout: 5 * time.Second})
	if r.Reason != ReasonExit || r.Alive {
		t.Fatalf("exit: %q alive=%v", r.Reason, r.Alive)
	}
	if err := s.Send(context.Background(), []byte("x")); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("send after peer closed: %v", err)
	}
}

func TestCancelStopsWait(t *testing.T) {
	s, _, _ := pair(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := s.Read(ctx, ReadOptions{Wait: WaitSpec{Exit: true, Timeout: time.Minute}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestUTF8NeverSplit(t *testing.T) {
	s, peer, _ := pair(t, Config{})
	euro := []byte("€") // E2 82 AC
	peer.Write(append([]byte("a"), euro[:2]...))
	r := read(t, s, WaitSpec{Idle: 30 * time.Millisecond, Timeout: 5 * time.Second})
	if string(r.Data) != "a" {
		t.Fatalf("first read = %q, want the complete prefix only", r.Data)
	}
	peer.Write(euro[2:])
	r = read(t, s, WaitSpec{Until: regexp.MustCompile("€"), Timeout: 5 * time.Second})
	if string(r.Data) != "€" {
		t.Fatalf("second read = %q, want the whole character", r.Data)
	}
	// maxBytes never cuts a character either.
	peer.Write([]byte("ab€"))
	time.Sleep(30 * time.Millisecond)
	r2, _ := s.Read(context.Background(), ReadOptions{MaxBytes: 3, UTF8: true})
	if string(r2.Data) != "ab" || !r2.HasMore {
		t.Fatalf("maxBytes=3 read %q hasMore=%v", r2.Data, r2.HasMore)
	}
}

func TestEvictionReported(t *testing.T) {
	s, peer, _ := pair(t, Config{BufferSize: 1024})
	peer.Write(bytes.Repeat([]byte("x"), 3000))
	peer.Write([]byte("END"))
	r := read(t, s, WaitSpec{Until: regexp.MustCompile(`END`), Timeout: 5 * time.Second})
	if len(r.Data) != 1024 || r.Evicted != 3003-1024 {
		t.Fatalf("read %d bytes, evicted %d; want 1024 and %d", len(r.Data), r.Evicted, 3003-1024)
	}
}

func TestWriteDeadline(t *testing.T) {
	// The peer never reads: the kernel buffers fill, then the write times out.
	s, _, _ := pair(t, Config{WriteTimeout: 200 * time.Millisecond})
	big := bytes.Repeat([]byte("y"), 64<<20)
	err := s.Send(context.Background(), big)
	if err == nil || !strings.Contains(err.Error(), "stopped reading") {
		t.Fatalf("err = %v, want a write timeout", err)
	}
}

func TestInterruptReachesPeer(t *testing.T) {
	s, peer, _ := pair(t, Config{})
	if err := s.Interrupt(context.Background(), "interrupt"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(buf); err != nil || !bytes.Equal(buf, []byte{0xff, 0xf4}) {
		t.Fatalf("peer read %x, %v", buf, err)
	}
}

func TestCloseClosesChain(t *testing.T) {
	s, _, b := pair(t, Config{})
	s.Close()
	s.Close()
	if !b.closed || s.State() != StateTerminated {
		t.Fatalf("closed=%v state=%s", b.closed, s.State())
	}
}

func TestRegistryLimitAndNames(t *testing.T) {
	r := NewRegistry(Limits{MaxSessions: 1}, Config{})
	defer r.Close()
	port := holdingListener(t)
	attach := func(string, abi.Kind, []byte) (Binding, error) { return &promptBinding{}, nil }
	s1, err := r.OpenTelnet(context.Background(), attach, TelnetOptions{Host: "127.0.0.1", Port: port, Timeout: time.Second, Name: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get("r1"); err != nil || got != s1 {
		t.Fatalf("by name: %v", err)
	}
	_, err = r.OpenTelnet(context.Background(), attach, TelnetOptions{Host: "127.0.0.1", Port: port, Timeout: time.Second})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("second open: %v, want RESOURCE_LIMIT", err)
	}
	if !r.Remove(s1.ID) || r.Remove(s1.ID) {
		t.Fatal("Remove should report true once, then false")
	}
	if _, err := r.Get(s1.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get removed: %v", err)
	}
}

func TestIdleSessionsAreReaped(t *testing.T) {
	r := NewRegistry(Limits{IdleTimeout: 100 * time.Millisecond, ReapEvery: 20 * time.Millisecond}, Config{})
	defer r.Close()
	port := holdingListener(t)
	attach := func(string, abi.Kind, []byte) (Binding, error) { return &promptBinding{}, nil }
	s, err := r.OpenTelnet(context.Background(), attach, TelnetOptions{Host: "127.0.0.1", Port: port, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := r.Get(s.ID); errors.Is(err, ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle session not reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.State() != StateTerminated {
		t.Fatalf("reaped session state %s", s.State())
	}
}

// holdingListener accepts connections on loopback and keeps them open
// until the test ends; it returns the port.
func holdingListener(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
