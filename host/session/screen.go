package session

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/termhost/termhost/host/link"

	"github.com/termhost/termhost/sdk/abi"
)

// MaxScreenCells bounds a session's cols×rows: the vt screen's bound on
// one session's memory (plugins/vt/core.MaxCells; see RATIONALE "One screen
// cannot exhaust the instance it shares"). 32768 cells is 256x128, 200x160
// or 1000x32.
const MaxScreenCells = 1 << 15

// CheckSize refuses a screen of more than MaxScreenCells cells, before any
// window or plugin is changed, naming the fields and the limit.
func CheckSize(cols, rows int) error {
	if cols*rows > MaxScreenCells {
		return fmt.Errorf("%w: cols×rows = %d×%d = %d cells; at most %d cells (e.g. 256x128, 200x160, 1000x32)",
			ErrScreenSize, cols, rows, cols*rows, MaxScreenCells)
	}
	return nil
}

// replySink keeps the reply of one control call and drops the rest: a
// screen query changes nothing and sends nothing.
type replySink struct{ reply []byte }

func (r *replySink) Emit(stream abi.Stream, p []byte) {
	if stream == abi.Reply && r.reply == nil {
		r.reply = append([]byte{}, p...)
	}
}

func (r *replySink) Discard() { r.reply = nil }

// HasScreen says whether the session has a screen plugin.
func (s *Session) HasScreen() bool { return s.screen != nil }

// Screen asks the session's screen plugin a question (a JSON control
// request such as {"op":"screen","format":"plain"}) and returns its answer.
// It works on an ended session too, until the session is discarded: the
// final screen stays readable with the buffer. Queries take turns with the
// chain's walks, so an answer reflects whole chunks.
func (s *Session) Screen(ctx context.Context, req []byte) ([]byte, error) {
	if s.screen == nil {
		return nil, fmt.Errorf("%w: this session has no screen", ErrUnsupported)
	}
	if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
		return nil, err
	}
	defer s.unlockChain()
	s.mu.Lock()
	gone, frozen := s.screenGone, s.frozen
	s.mu.Unlock()
	if gone {
		return nil, fmt.Errorf("%w: the session's screen was released", ErrExpired)
	}
	if frozen != nil {
		return s.askFrozen(frozen, req)
	}
	// The screen may have lost its state since its last use (its instance
	// failed under another session): rebuilt first, and once more if this
	// very question is what moved it to a new instance, so an answer never
	// comes from an empty screen.
	s.screenUp()
	for try := 0; ; try++ {
		reply, err := s.ask(s.screen, req)
		if !s.syncScreen() || try == 1 {
			return reply, err
		}
	}
}

// ask puts one question to screen binding b.
func (s *Session) ask(b Binding, req []byte) ([]byte, error) {
	var sink replySink
	if err := b.Control(req, &sink); err != nil {
		return nil, fmt.Errorf("screen: %w", err)
	}
	if sink.reply == nil {
		return nil, fmt.Errorf("screen: the %s plugin gave no answer", s.screenName())
	}
	return sink.reply, nil
}

// askFrozen brings an ended session's screen state back on an instance for
// one question. If the instance fails under the question, the binding is
// reopened without state: the state is imported again and the question
// asked once more.
func (s *Session) askFrozen(frozen, req []byte) ([]byte, error) {
	b, err := s.thaw(frozen)
	if err != nil {
		return nil, fmt.Errorf("screen of an ended session: %w", err)
	}
	defer b.Close()
	for try := 0; ; try++ {
		resets := screenResets(b)
		reply, err := s.ask(b, req)
		if screenResets(b) == resets || try == 1 {
			return reply, err
		}
		if err := importFrozen(b, frozen); err != nil {
			return nil, fmt.Errorf("screen of an ended session: %w", err)
		}
	}
}

func (s *Session) screenName() string {
	n, _ := s.screen.Plugin()
	return n
}

// stateful is a binding whose session state can be taken out and put
// back (host/plugin.Binding).
type stateful interface {
	ExportState() ([]byte, error)
	ImportState([]byte) error
}

// freezeScreen keeps an ended session's screen as its exported state and
// closes the binding, so ended sessions hold bytes, not plugin instances.
// A screen that cannot export stays attached until the session is
// discarded. Called from release, holding the chain.
func (s *Session) freezeScreen() {
	if sl, ok := s.screen.(*screenSlot); ok {
		if away := sl.state(); away != nil {
			// It left its instance while idle: that state is the frozen one.
			s.mu.Lock()
			s.frozen = away
			s.mu.Unlock()
			s.screen.Close()
			return
		}
	}
	st, ok := s.screen.(stateful)
	if !ok || s.reattachScreen == nil {
		return
	}
	var state []byte
	var err error
	for try := 0; try < 2; try++ {
		// An export that found the instance dead reopened the screen
		// empty: rebuilt from the buffer, exported again.
		s.syncScreen()
		if state, err = st.ExportState(); err != nil || !s.syncScreen() {
			break
		}
	}
	if err != nil {
		s.log.Warn("screen kept attached: its state could not be exported", "err", err)
		return
	}
	// A screen's state is mostly text: compressed it costs an ended
	// session a tenth of its size.
	frozen := deflateState(state)
	s.mu.Lock()
	s.frozen = frozen
	s.mu.Unlock()
	s.screen.Close()
}

// maxFrozen bounds a thawed screen state (the ABI's bound on state).
const maxFrozen = 16 << 20

// thaw opens a screen binding restored from frozen state.
func (s *Session) thaw(frozen []byte) (Binding, error) {
	b, err := s.reattachScreen()
	if err != nil {
		return nil, err
	}
	if err := importFrozen(b, frozen); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// importFrozen puts a frozen screen state into binding b.
func importFrozen(b Binding, frozen []byte) error {
	st, ok := b.(stateful)
	if !ok {
		return fmt.Errorf("%w: the screen plugin cannot import state", ErrUnsupported)
	}
	state, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(frozen)), maxFrozen))
	if err != nil {
		return fmt.Errorf("frozen screen: %w", err)
	}
	return st.ImportState(state)
}

// releaseScreen lets go of the screen once the session is discarded
// (closed, reaped or expired); until then an ended session's final screen
// stays readable.
func (s *Session) releaseScreen() {
	if s.screen == nil {
		return
	}
	s.mu.Lock()
	gone, frozen := s.screenGone, s.frozen != nil
	s.screenGone, s.frozen = true, nil
	s.mu.Unlock()
	if gone || frozen {
		return
	}
	if err := s.lockChain(context.Background(), s.cfg.CallGrace); err != nil {
		s.log.Warn("screen released while a call in it does not return", "err", err)
	} else {
		defer s.unlockChain()
	}
	s.screen.Close()
}

// Mark is the position a reader starting now would have: the end of the
// buffer and the last event so far. Waits from a mark see only what comes
// after it.
func (s *Session) Mark() Cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.markLocked()
}

func (s *Session) markLocked() Cursor { return Cursor{Off: s.buf.Head(), Seq: s.nextSeq} }

// Raw returns up to maxBytes of the most recent output (the raw byte
// stream, escape sequences included), starting at a character boundary,
// without moving any reader's cursor, and whether older bytes were left
// out.
func (s *Session) Raw(maxBytes int) ([]byte, bool) {
	if maxBytes <= 0 {
		maxBytes = defaultMaxBytes
	}
	head, tail := s.buf.Head(), s.buf.Tail()
	from := tail
	if head-tail > uint64(maxBytes) {
		from = head - uint64(maxBytes)
	}
	p, _, _ := s.buf.Read(from, int(head-from))
	cut := 0
	for cut < len(p) && cut < utf8.UTFMax && !utf8.RuneStart(p[cut]) {
		cut++
	}
	return p[cut:], from > tail || cut > 0
}

// AwaitExit waits at most d for the process's exit status (it is
// collected just after the session ends).
func (s *Session) AwaitExit(ctx context.Context, d time.Duration) (link.ExitStatus, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		ex, ch := s.exit, s.watchLocked()
		s.mu.Unlock()
		if ex != nil {
			return *ex, true
		}
		if _, ok := s.link.(link.Exiter); !ok {
			return link.ExitStatus{}, false
		}
		select {
		case <-ch:
		case <-t.C:
			return link.ExitStatus{}, false
		case <-ctx.Done():
			return link.ExitStatus{}, false
		}
	}
}

// resetter is a binding that says when its session was reopened on another
// instance after a failure (host/plugin.Binding).
type resetter interface{ Resets() uint64 }

func screenResets(b Binding) uint64 {
	if r, ok := b.(resetter); ok {
		return r.Resets()
	}
	return 0
}

// dropSink takes a call's emissions and keeps none.
type dropSink struct{}

func (dropSink) Emit(abi.Stream, []byte) {}
func (dropSink) Discard()                {}

// syncScreen rebuilds the screen if it lost its state since it was last
// built: its binding was reopened on another instance (Resets changed)
// after a failure — its own or that of another session sharing the
// instance, noticed by whichever call (chunk, view, resize, export) came
// next. Every use of the screen passes here, so no use sees it empty. It
// reports whether it rebuilt. Called holding the chain.
func (s *Session) syncScreen() bool {
	if s.screen == nil {
		return false
	}
	if screenResets(s.screen) == s.screenBuilt {
		return false
	}
	s.rebuildScreen()
	// A replay that itself failed over is not replayed again: the buffer
	// may hold what makes the plugin fail, and each replay would take the
	// instance — and every session on it — down once more.
	s.screenBuilt = screenResets(s.screen)
	return true
}

// rebuildScreen gives a screen that lost its state (its instance failed and
// it keeps no checkpoints) the session's raw buffer again, at the session's
// size, after a reset (RIS): the buffer and the screen saw the same bytes
// (SPEC SES-5), so replaying them rebuilds the screen as far as the buffer
// reaches. Its answers to queries in the replayed bytes were sent long
// ago: dropped. Called holding the chain.
func (s *Session) rebuildScreen() {
	const chunk = 32 << 10
	s.mu.Lock()
	cols, rows := s.cols, s.rows
	s.mu.Unlock()
	// Reopened, the screen has the size the session was opened with.
	// The replay feeds everything the buffer holds: nothing is held back
	// any more, and the screen's rest is not known.
	s.w.screenOff, s.w.notText, s.screenRest = s.buf.End(), false, false
	resize, _ := json.Marshal(map[string]any{"op": "resize", "cols": cols, "rows": rows})
	s.screen.Control(resize, dropSink{})
	if _, err := s.screen.Data(abi.Inbound, []byte("\x1bc"), dropSink{}); err != nil {
		return
	}
	all := s.buf.ReadStaged(nil, s.buf.Tail())
	for p := all; len(p) > 0; {
		n := min(len(p), chunk)
		if _, err := s.screen.Data(abi.Inbound, p[:n], dropSink{}); err != nil {
			s.log.Warn("screen not rebuilt from the buffer", "err", err)
			return
		}
		p = p[n:]
	}
	s.log.Info("screen rebuilt from the buffer after its plugin failed", "bytes", len(all))
}
