package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/internal/testutil"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// fake is a plugin binding whose behaviour each test sets. By default it
// lets everything pass (Continue).
type fake struct {
	name    string
	data    func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error)
	control func(req []byte, s wasmhost.Sink) error

	mu     sync.Mutex
	async  func([]abi.Emission)
	closed atomic.Bool
	calls  atomic.Int64
	resets atomic.Uint64 // bumped to play a fail-over that lost the state

	untrusted bool // a drop-in neither first-party nor pinned (Trusted)
}

// Trusted: fakes stand for first-party plugins unless a test says not.
func (f *fake) Trusted() bool { return !f.untrusted }

func (f *fake) Resets() uint64 { return f.resets.Load() }

func (f *fake) Data(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
	f.calls.Add(1)
	if f.data == nil {
		return abi.Continue, nil
	}
	return f.data(dir, p, s)
}

func (f *fake) Control(req []byte, s wasmhost.Sink) error {
	if f.control == nil {
		return errors.New("unsupported")
	}
	return f.control(req, s)
}

func (f *fake) OnAsync(fn func([]abi.Emission)) {
	f.mu.Lock()
	f.async = fn
	f.mu.Unlock()
}

// emitAsync makes output outside a chunk, as on_tick does.
func (f *fake) emitAsync(ems ...abi.Emission) {
	f.mu.Lock()
	fn := f.async
	f.mu.Unlock()
	if fn != nil {
		fn(ems)
	}
}

func (f *fake) Close()                         { f.closed.Store(true) }
func (f *fake) Plugin() (name, version string) { return f.name, "test" }

// promptMarker passes data through and marks a prompt after every "$ ";
// it answers {"op":"interrupt"} with 0xFF 0xF4 toward the peer.
func promptMarker() *fake {
	return &fake{
		name: "prompt",
		data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
			if dir == abi.Outbound || !bytes.Contains(p, []byte("$ ")) {
				return abi.Continue, nil
			}
			for len(p) > 0 {
				i := bytes.Index(p, []byte("$ "))
				if i < 0 {
					s.Emit(abi.ToUser, p)
					break
				}
				s.Emit(abi.ToUser, p[:i+2])
				s.Emit(abi.Event, []byte(`{"type":"prompt","mark":"test"}`))
				p = p[i+2:]
			}
			return abi.Consumed, nil
		},
		control: func(req []byte, s wasmhost.Sink) error {
			if strings.Contains(string(req), "interrupt") {
				s.Emit(abi.ToPeer, []byte{0xff, 0xf4})
				return nil
			}
			return errors.New("unsupported")
		},
	}
}

// pipeLink is the test-only kind's link: an in-memory pipe with what a PTY
// can do — a window size, signals, and an exit status.
type pipeLink struct {
	net.Conn
	mu      sync.Mutex
	size    [2]int
	signals []string
	stops   [][2]time.Duration
	exit    chan link.ExitStatus
	// awaiting is what Awaiting reports (a link.InputState; leader in
	// the next bit).
	awaiting atomic.Int32
}

// Awaiting reports the state a test set (link.InputWaiter).
func (l *pipeLink) Awaiting() link.Awaiting {
	v := l.awaiting.Load()
	return link.Awaiting{State: link.InputState(v & 0xff), Pgid: 1, Leader: v&0x100 != 0}
}

func (l *pipeLink) Resize(cols, rows int) error {
	l.mu.Lock()
	l.size = [2]int{cols, rows}
	l.mu.Unlock()
	return nil
}

func (l *pipeLink) Signal(name string) error {
	l.mu.Lock()
	l.signals = append(l.signals, name)
	l.mu.Unlock()
	return nil
}

func (l *pipeLink) Exit() link.ExitStatus { return <-l.exit }

// Stop records the graceful stop it was asked for, then ends the "process".
func (l *pipeLink) Stop(ctx context.Context, grace, termWait time.Duration) link.ExitStatus {
	l.mu.Lock()
	l.stops = append(l.stops, [2]time.Duration{grace, termWait})
	l.mu.Unlock()
	l.Conn.Close()
	st := link.ExitStatus{Code: -1, Signal: "SIGTERM"}
	select {
	case l.exit <- st:
	default:
	}
	return st
}

// testKind opens a session of the test-only kind "pipe" through the
// registry's one Open, with the given chain and screen, and returns it
// with the peer's end of the pipe.
func testKind(t *testing.T, r *Registry, spec Spec, chain []*fake, screen *fake) (*Session, net.Conn, *pipeLink) {
	t.Helper()
	ours, peer := net.Pipe()
	pl := &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}
	byName := map[string]*fake{}
	for _, f := range chain {
		spec.Plugins = append(spec.Plugins, f.name)
		byName[f.name] = f
	}
	if screen != nil {
		if r.cfg.Plugins.Screen == "" {
			t.Fatal("testKind: the registry names no screen plugin")
		}
		spec.Screen = true
		byName[r.cfg.Plugins.Screen] = screen
	}
	if spec.Kind == "" {
		spec.Kind = "pipe"
	}
	spec.Dial = func(context.Context) (link.Link, error) { return pl, nil }
	attach := func(name string, _ abi.Kind, _ []byte) (Binding, error) {
		f := byName[name]
		if f == nil {
			return nil, errors.New("no such plugin")
		}
		return f, nil
	}
	s, err := r.Open(context.Background(), attach, spec)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(); peer.Close() })
	return s, peer, pl
}

// testPlugins are the plugins a test registry names (newRegistry): a
// test's fakes stand for them.
var testPlugins = Plugins{Screen: "screen", Dialect: "dialect"}

func newRegistry(t *testing.T, limits Limits, cfg Config) *Registry {
	if cfg.Plugins == (Plugins{}) {
		cfg.Plugins = testPlugins
	}
	r := NewRegistry(limits, cfg)
	t.Cleanup(r.Close)
	return r
}

func read(t *testing.T, s *Session, w WaitSpec) ReadResult {
	t.Helper()
	r, err := s.Read(context.Background(), ReadOptions{Wait: w, UTF8: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readN reads exactly n bytes from c, with a bound.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("peer read %d bytes: %v (got %q)", n, err, buf)
	}
	return buf
}

// eventually waits for cond, with a bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, what, cond)
}

// write writes from the peer's side in the background (a net.Pipe write
// blocks until the session reads it).
func write(c net.Conn, p string) {
	go c.Write([]byte(p))
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
