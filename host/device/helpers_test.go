package device

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// fake is a plugin binding whose behaviour each test sets (as in
// host/session's tests). By default it lets everything pass (Continue).
type fake struct {
	name      string
	data      func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error)
	control   func(req []byte, s wasmhost.Sink) error
	untrusted bool // a drop-in neither first-party nor pinned (Trusted)

	mu    sync.Mutex
	async func([]abi.Emission)
}

// Trusted: fakes stand for first-party plugins unless a test says not.
func (f *fake) Trusted() bool { return !f.untrusted }

func (f *fake) Data(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
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

func (f *fake) Close()                         {}
func (f *fake) Plugin() (name, version string) { return f.name, "test" }

// pipeLink is the test-only kind's link: an in-memory pipe.
type pipeLink struct {
	net.Conn
	exit chan link.ExitStatus
}

func (l *pipeLink) Resize(cols, rows int) error { return nil }
func (l *pipeLink) Signal(name string) error    { return nil }
func (l *pipeLink) Exit() link.ExitStatus       { return <-l.exit }

func (l *pipeLink) Stop(ctx context.Context, grace, termWait time.Duration) link.ExitStatus {
	l.Conn.Close()
	st := link.ExitStatus{Code: -1, Signal: "SIGTERM"}
	select {
	case l.exit <- st:
	default:
	}
	return st
}

// testKind opens a session of the test-only kind "pipe" through the
// registry's Open with the given chain, and returns it with the peer's
// end of the pipe.
func testKind(t *testing.T, r *session.Registry, spec session.Spec, chain []*fake) (*session.Session, net.Conn) {
	t.Helper()
	ours, peer := net.Pipe()
	pl := &pipeLink{Conn: ours, exit: make(chan link.ExitStatus, 1)}
	byName := map[string]*fake{}
	for _, f := range chain {
		spec.Plugins = append(spec.Plugins, f.name)
		byName[f.name] = f
	}
	if spec.Kind == "" {
		spec.Kind = "pipe"
	}
	spec.Dial = func(context.Context) (link.Link, error) { return pl, nil }
	attach := func(name string, _ abi.Kind, _ []byte) (session.Binding, error) {
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
	return s, peer
}

// testPlugins are the plugins a test registry names: a test's fakes
// stand for them.
var testPlugins = session.Plugins{Screen: "screen", Dialect: "dialect"}

func newRegistry(t *testing.T, cfg session.Config) *session.Registry {
	if cfg.Plugins == (session.Plugins{}) {
		cfg.Plugins = testPlugins
	}
	r := session.NewRegistry(session.Limits{}, cfg)
	t.Cleanup(r.Close)
	return r
}

func read(t *testing.T, s *session.Session, w session.WaitSpec) session.ReadResult {
	t.Helper()
	r, err := s.Read(context.Background(), session.ReadOptions{Wait: w, UTF8: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
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
