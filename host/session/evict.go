package session

import (
	"bytes"
	"compress/flate"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// screenSlot is a session's screen binding, which an idle session lets go
// of: its state is exported, compressed and kept here, the binding closed
// (the vt instance frees its rows and an instance left without sessions
// is closed), and the next use of the screen — output, a view, a resize —
// opens a binding again and imports the state. A screen whose state could
// not come back (the plugin refused it, or the binding could not be
// opened while output went by) is rebuilt from the raw buffer, as after a
// failed instance: the binding's Resets count moves and syncScreen
// replays the buffer. Plugin calls run holding the session's chain; mu
// guards the fields against Close and OnAsync from elsewhere.
type screenSlot struct {
	s *Session

	mu     sync.Mutex
	b      Binding // nil while away or closed
	away   []byte  // the exported state, deflated, while away
	stale  bool    // output went by while the screen could not be opened
	closed bool
	async  func([]abi.Emission)
	resets uint64 // Resets of the bindings let go, plus one per rebuild forced

	plugin  atomic.Pointer[[2]string] // name and version, for messages while away
	trusted atomic.Bool               // the last binding's Trusted, while away
	used    atomic.Int64              // unix nanoseconds of the last use
}

func newScreenSlot(s *Session, b Binding) *screenSlot {
	sl := &screenSlot{s: s, b: b}
	sl.setPlugin(b)
	sl.used.Store(time.Now().UnixNano())
	return sl
}

func (sl *screenSlot) setPlugin(b Binding) {
	n, v := b.Plugin()
	sl.plugin.Store(&[2]string{n, v})
	t, ok := b.(trusted)
	sl.trusted.Store(ok && t.Trusted())
}

var errScreenClosed = errors.New("the screen was closed")

// get returns the binding, bringing the screen back first if it is away.
// Called holding the chain.
func (sl *screenSlot) get() (Binding, error) {
	sl.used.Store(time.Now().UnixNano())
	sl.mu.Lock()
	b, closed, away, stale := sl.b, sl.closed, sl.away, sl.stale
	sl.mu.Unlock()
	if b != nil {
		return b, nil
	}
	if closed || sl.s.reattachScreen == nil {
		return nil, errScreenClosed
	}
	b, err := sl.s.reattachScreen()
	if err != nil {
		sl.mu.Lock()
		sl.stale = true
		sl.mu.Unlock()
		return nil, err
	}
	restored := away != nil && !stale && importFrozen(b, away) == nil
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed {
		b.Close()
		return nil, errScreenClosed
	}
	if !restored {
		// Empty: syncScreen sees the count move and replays the buffer.
		sl.resets++
		sl.s.log.Warn("screen state not restored: rebuilt from the buffer")
	}
	sl.b, sl.away, sl.stale = b, nil, false
	sl.setPlugin(b)
	if sl.async != nil {
		b.OnAsync(sl.async)
	}
	return b, nil
}

// leave exports the screen's state and closes its binding. It reports
// whether the screen left. Called holding the chain, the screen in sync.
func (sl *screenSlot) leave() bool {
	sl.mu.Lock()
	b := sl.b
	sl.mu.Unlock()
	st, ok := b.(stateful)
	if b == nil || !ok {
		return false
	}
	resets := screenResets(b)
	state, err := st.ExportState()
	if err != nil || screenResets(b) != resets {
		return false // its instance failed under the export: it stays, to be rebuilt on its next use
	}
	z := deflateState(state)
	sl.mu.Lock()
	if sl.closed || sl.b != b {
		sl.mu.Unlock()
		return false
	}
	sl.b, sl.away = nil, z
	sl.resets += resets
	sl.mu.Unlock()
	b.Close()
	return true
}

// state is the deflated state of a screen that is away (nil otherwise).
func (sl *screenSlot) state() []byte {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.stale {
		return nil
	}
	return sl.away
}

// isAway says whether the screen has left its instance.
func (sl *screenSlot) isAway() bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.b == nil && !sl.closed
}

func (sl *screenSlot) Data(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
	b, err := sl.get()
	if err != nil {
		return abi.Continue, err
	}
	return b.Data(dir, p, s)
}

func (sl *screenSlot) Control(req []byte, s wasmhost.Sink) error {
	b, err := sl.get()
	if err != nil {
		return err
	}
	return b.Control(req, s)
}

func (sl *screenSlot) ExportState() ([]byte, error) {
	b, err := sl.get()
	if err != nil {
		return nil, err
	}
	st, ok := b.(stateful)
	if !ok {
		return nil, ErrUnsupported
	}
	return st.ExportState()
}

func (sl *screenSlot) ImportState(p []byte) error {
	b, err := sl.get()
	if err != nil {
		return err
	}
	st, ok := b.(stateful)
	if !ok {
		return ErrUnsupported
	}
	return st.ImportState(p)
}

// Resets counts the times the screen lost its state: its bindings'
// fail-overs and the restores that did not bring the state back.
func (sl *screenSlot) Resets() uint64 {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	n := sl.resets
	if sl.b != nil {
		n += screenResets(sl.b)
	}
	return n
}

func (sl *screenSlot) OnAsync(f func([]abi.Emission)) {
	sl.mu.Lock()
	sl.async = f
	b := sl.b
	sl.mu.Unlock()
	if b != nil {
		b.OnAsync(f)
	}
}

func (sl *screenSlot) Close() {
	sl.mu.Lock()
	b := sl.b
	sl.b, sl.away, sl.closed = nil, nil, true
	sl.mu.Unlock()
	if b != nil {
		b.Close()
	}
}

// Trusted is the binding's (host/plugin.Binding.Trusted); while away, the
// last binding's, as a binding not yet migrated reports the version it is
// on.
func (sl *screenSlot) Trusted() bool {
	sl.mu.Lock()
	b := sl.b
	sl.mu.Unlock()
	if b == nil {
		return sl.trusted.Load()
	}
	t, ok := b.(trusted)
	return ok && t.Trusted()
}

func (sl *screenSlot) Plugin() (name, version string) {
	p := sl.plugin.Load()
	return p[0], p[1]
}

// trimIdle lets go of what an idle live session holds only for its next
// walk or its screen: the walk's scratch memory (kept between walks up to
// keepArena and screenScratch) and its screen's place in the shared
// instance (screenSlot.leave), once the session and its screen have been
// quiet for quiet and nothing waits on it. It never waits for the chain:
// a busy session is not idle. It reports whether the screen left.
func (s *Session) trimIdle(quiet time.Duration) bool {
	if !s.Alive() || s.waiting.Load() > 0 {
		return false
	}
	now := time.Now()
	if now.Sub(s.LastActive()) < quiet {
		return false
	}
	select {
	case s.chainSem <- struct{}{}:
	default:
		return false
	}
	defer s.unlockChain()
	if !s.Alive() {
		return false // ended meanwhile: its release freezes the screen
	}
	// No walk runs while the chain is held: its slices are empty.
	s.w.arena, s.w.scratch, s.w.stack, s.w.pend, s.w.events = nil, nil, nil, nil, nil
	s.recScratch = nil
	sl, ok := s.screen.(*screenSlot)
	// Checked again holding the chain: a view or a wait may have come
	// between the first look and the lock.
	now = time.Now()
	if !ok || s.reattachScreen == nil || sl.isAway() || s.waiting.Load() > 0 ||
		now.Sub(s.LastActive()) < quiet || now.Sub(time.Unix(0, sl.used.Load())) < quiet {
		return false
	}
	s.syncScreen()
	return sl.leave()
}

// screenUp brings the screen back if it left its instance, then rebuilds
// it if it lost its state (syncScreen), so the next question is answered
// by the screen as it was. Called holding the chain.
func (s *Session) screenUp() {
	if sl, ok := s.screen.(*screenSlot); ok {
		sl.get() // an error shows in the question that follows
	}
	s.syncScreen()
	s.catchUpScreen()
}

// deflaters are flate writers for screen states: a writer's tables are
// several hundred KiB, and a sweep may send many screens away at once.
var deflaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// deflateState compresses an exported screen state (mostly text: a tenth
// of its size or less).
func deflateState(state []byte) []byte {
	var z bytes.Buffer
	zw := deflaters.Get().(*flate.Writer)
	zw.Reset(&z)
	zw.Write(state)
	zw.Close()
	zw.Reset(nil)
	deflaters.Put(zw)
	return bytes.Clone(z.Bytes())
}
