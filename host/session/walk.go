package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// Bounds of one walk: a chain whose plugins bounce output between them for
// ever (or amplify it) is stopped, reported, and the session goes on.
const (
	maxCalls      = 1024     // plugin calls per walk
	maxArena      = 64 << 20 // bytes in flight between plugins per walk
	keepArena     = 1 << 20  // scratch memory kept between walks
	screenScratch = 64 << 10 // screen feed scratch kept between walks
)

// step is one piece of work of a walk: bytes entering plugin i in
// direction dir, for 0 <= i < len(chain); past either end of the chain, or
// an event, i is one of the destinations below.
type step struct {
	i       int
	dir     abi.Dir
	data    []byte
	off     uint64 // event: its buffer offset, when known at emission time
	hasOff  bool
	channel bool
}

// Destinations of a step that are no plugin of the chain.
const (
	// toWriter: outbound past chain[0], the batch for the writer.
	toWriter = -1
	// toEvent: not bytes but an event (data is its JSON) or, with
	// channel, a channel emission (data is its header and bytes).
	toEvent = -2
)

// pastChain is the index past the last plugin: an inbound step there goes
// to the buffer, and as the plugin making a call it is the screen (which
// sits past the chain and answers through all of it).
func (s *Session) pastChain() int { return len(s.chain) }

// walker carries one chunk (or one send, control request, or plugin output
// made outside a chunk) through the chain: iteratively, depth-first, in the
// order the plugins emitted. It is the Sink every plugin call of the
// session emits into, and it is only used with the chain lock held.
//
// Copies: bytes a plugin emits toward the user are copied once, out of the
// plugin's memory: straight into the ring buffer (staged) when the plugin
// is the last of the chain, else into the walk's scratch arena for the
// next plugin. Bytes toward the peer from the first plugin go straight into
// the batch the writer will write. A chunk a plugin lets pass (Continue)
// is not copied at all until it reaches the buffer or the writer.
type walker struct {
	s *Session

	stack  []step
	arena  []byte
	calls  int
	events []Event
	out    []byte // for the writer
	reply  []byte // the first reply of a control request
	closeQ bool   // a plugin asked to close the session
	fatal  error  // a fail-closed plugin failed: the session ends

	// The call in progress.
	cur       int
	pend      []step // the call's emissions, kept until it returns
	markRing  uint64
	markOut   int
	markArena int

	screenOff uint64 // the buffer offset the screen has been fed up to
	fedFrom   uint64 // the offset of scratch[0] while the screen is fed
	replying  bool   // a held answer to a terminal query goes out now (replies.go)
	notText   bool   // bytes staged since screenOff are not all text (stageBuf)
	feedAll   bool   // this walk gives the screen everything held back (catchUpScreen)
	scratch   []byte
}

// reset prepares a walk.
func (w *walker) reset() {
	w.stack, w.events, w.pend = w.stack[:0], w.events[:0], w.pend[:0]
	if cap(w.arena) > keepArena {
		w.arena = nil
	}
	w.arena = w.arena[:0]
	w.out, w.reply, w.calls, w.closeQ, w.fatal, w.feedAll = nil, nil, 0, false, nil, false
}

// Emit is the Sink side: one emission of the plugin call in progress.
func (w *walker) Emit(stream abi.Stream, p []byte) {
	s := w.s
	last := len(s.chain) - 1
	switch stream {
	case abi.ToUser:
		switch {
		case w.cur == last:
			s.stage(p)
		case w.cur < last:
			w.pend = append(w.pend, step{i: w.cur + 1, dir: abi.Inbound, data: w.keep(p)})
		} // the screen's output toward the user goes nowhere
	case abi.ToPeer:
		if w.cur == s.pastChain() && !w.replying && !w.replyNow(p) {
			return // dropped (the program that asked is gone), or held until it is known
		}
		if w.cur == 0 {
			w.out = append(w.out, p...)
			return
		}
		// The screen (index pastChain) answers through the whole chain.
		w.pend = append(w.pend, step{i: w.cur - 1, dir: abi.Outbound, data: w.keep(p)})
	case abi.Event, abi.Channel:
		e := step{i: toEvent, data: w.keep(p), channel: stream == abi.Channel}
		if w.cur >= last {
			// The last plugin's (and the screen's) bytes are already in the
			// buffer: the event's place is known now.
			e.off, e.hasOff = s.buf.End(), true
		}
		w.pend = append(w.pend, e)
	case abi.Log:
		name, _ := w.plugin(w.cur).Plugin()
		s.log.Info("plugin log", "plugin", name, "line", string(p)) // the log masks secrets itself (SecretSet.Handler)
	case abi.Reply:
		if w.reply == nil {
			w.reply = append([]byte{}, p...)
		}
	}
}

// Discard forgets what the call in progress emitted (the plugin failed
// during it; it is retried elsewhere or given up).
func (w *walker) Discard() {
	w.s.buf.DiscardTo(w.markRing)
	w.s.restoreStages()
	w.out = w.out[:w.markOut]
	w.arena = w.arena[:w.markArena]
	w.pend = w.pend[:0]
	w.reply = nil
}

// keep copies p into the walk's arena.
func (w *walker) keep(p []byte) []byte {
	start := len(w.arena)
	w.arena = append(w.arena, p...)
	return w.arena[start:len(w.arena):len(w.arena)]
}

func (w *walker) plugin(i int) Binding {
	if i == w.s.pastChain() {
		return w.s.screen
	}
	return w.s.chain[i]
}

// begin marks the start of a plugin call (what Discard goes back to).
func (w *walker) begin(i int) {
	w.cur = i
	w.pend = w.pend[:0]
	w.markRing, w.markOut, w.markArena = w.s.buf.End(), len(w.out), len(w.arena)
	w.s.saveStages()
}

// call runs one step: plugin i on data, then queues its emissions (and the
// data itself, if the plugin let it pass) in order.
func (w *walker) call(st step) {
	s := w.s
	w.calls++
	w.begin(st.i)
	b := w.plugin(st.i)
	a, err := b.Data(st.dir, st.data, w)
	if err != nil {
		var f interface{ Fatal() bool }
		if errors.As(err, &f) && f.Fatal() {
			w.fatal = err
			return
		}
		w.Discard()
		if !s.Alive() {
			return // the session is closing: its plugins are going away
		}
		name, ver := b.Plugin()
		s.log.Warn("plugin refused a chunk; passing it on unprocessed", "plugin", name, "version", ver, "dir", st.dir, "err", err)
		a = abi.Continue
	}
	w.queue(st, a == abi.Continue)
	if a == abi.Close {
		w.closeQ = true
	}
}

// queue pushes the call's pending emissions onto the stack so they are
// processed in the order they were emitted, followed by the call's input
// when the plugin let it pass.
func (w *walker) queue(st step, pass bool) {
	if pass {
		next := st.i + 1
		if st.dir == abi.Outbound {
			next = st.i - 1
		}
		w.stack = append(w.stack, step{i: next, dir: st.dir, data: st.data})
	}
	for k := len(w.pend) - 1; k >= 0; k-- {
		w.stack = append(w.stack, w.pend[k])
	}
	w.pend = w.pend[:0]
}

// run processes the stack, then feeds the screen what the buffer got and
// processes what that caused, until nothing is left or a bound is hit.
func (w *walker) run() {
	s := w.s
	for {
		for len(w.stack) > 0 && w.fatal == nil {
			st := w.stack[len(w.stack)-1]
			w.stack = w.stack[:len(w.stack)-1]
			switch {
			case st.i == toEvent:
				w.event(st)
			case st.i == toWriter:
				w.out = append(w.out, st.data...)
			case st.i >= s.pastChain() && st.dir == abi.Inbound:
				s.stage(st.data)
			case st.i >= s.pastChain():
				// Outbound from past the end cannot happen; ignore.
			case w.calls >= maxCalls || len(w.arena) > maxArena:
				w.overflow()
				return
			default:
				w.call(st)
			}
		}
		if w.fatal != nil || !w.feedScreen() {
			return
		}
	}
}

// feedScreen gives the screen the bytes the buffer got in this walk. It
// reports whether the screen emitted something to process.
func (w *walker) feedScreen() bool {
	s := w.s
	if s.screen == nil {
		return false
	}
	end := s.buf.End()
	if end <= w.screenOff {
		return false
	}
	if cap(w.scratch) > screenScratch {
		w.scratch = nil
	}
	if w.holdText(end) {
		return false
	}
	w.scratch = s.buf.ReadStaged(w.scratch[:0], w.screenOff)
	w.fedFrom = w.screenOff
	w.screenOff, w.notText = end, false
	w.calls++
	w.begin(s.pastChain())
	a, err := s.screen.Data(abi.Inbound, w.scratch, w)
	s.screenRest = err == nil && a == abi.Settled
	if err != nil {
		var f interface{ Fatal() bool }
		if errors.As(err, &f) && f.Fatal() {
			w.fatal = err
			return false
		}
		s.log.Warn("screen refused output", "err", err)
		w.Discard()
	}
	s.syncScreen()
	n := len(w.pend)
	w.queue(step{}, false)
	return n > 0
}

// maxHeldText bounds the text held back for a screen at rest: far inside
// the smallest raw buffer that holds it, so it is still there to feed.
const maxHeldText = 16 << 10

// holdText says whether the screen's bytes up to end may wait: the screen
// said it is at rest (abi.Settled), everything staged since its last call
// is text (abi.IsText, noted as it is staged) and fits in maxHeldText, and
// no one asked for it all.
// Such text changes what the screen shows but makes it answer or emit
// nothing, so it is given to the screen later, with the first chunk that
// is not text, or before the screen is next used (catchUpScreen). A
// session that only sends and reads spares the screen's call per chunk
// (issue 19).
func (w *walker) holdText(end uint64) bool {
	s := w.s
	if !s.screenRest || w.feedAll || w.notText {
		return false
	}
	held := end - w.screenOff
	return held <= maxHeldText && held <= uint64(s.buf.Max()/4)
}

// catchUpScreen gives the screen what was held back for it (holdText).
// Every use of the screen but a chunk comes here first (screenUp, Control,
// freezeScreen): a question, a resize or an export sees every byte the
// buffer has. Called holding the chain, outside a walk.
func (s *Session) catchUpScreen() {
	w := &s.w
	if s.screen == nil || s.buf.End() <= w.screenOff {
		return
	}
	w.reset()
	w.feedAll = true
	w.run()
	s.submit(w.commit(false))
}

// event decodes a plugin event (or channel emission) once into its typed
// body, offers it to the session's hook, and records it at the buffer
// offset it was emitted at.
func (w *walker) event(st step) {
	off := w.s.buf.End()
	if st.hasOff {
		off = st.off
	}
	var body abi.Payload
	if st.channel {
		d, err := abi.DecodeChannel(st.data)
		if err != nil {
			w.s.log.Warn("plugin emitted a malformed channel emission", "err", err)
			return
		}
		body = &d
	} else {
		var err error
		if body, err = abi.Decode(st.data); err != nil {
			w.s.log.Warn("plugin emitted an event that does not decode", "err", err)
			return
		}
	}
	e := Event{Offset: off, Type: body.EventType(), At: time.Now(), Body: body}
	if w.s.onEvent != nil && w.s.onEvent(&e) {
		return
	}
	if _, ok := body.(*abi.ChannelData); ok {
		// Bulk output nobody reads (a channel given up on): never an event.
		return
	}
	// A plugin saw the peer's bytes before they were masked: its events'
	// text (a prompt, an error line, a title) is masked here.
	if w.s.cfg.Secrets.load() != nil {
		w.s.cfg.Secrets.maskEvent(body)
	}
	if f, ok := body.(*abi.PluginFailed); ok {
		w.s.log.Error("plugin failed", "plugin", f.Plugin, "version", f.Version, "error", f.Error, "outcome", f.Outcome)
	}
	w.events = append(w.events, e)
}

// overflow stops a walk that exceeded its bounds.
func (w *walker) overflow() {
	err := fmt.Errorf("the plugin chain made more than %d calls or %d MiB of output for one chunk; the rest of it was dropped",
		maxCalls, maxArena>>20)
	w.s.log.Error("plugin chain overflow", "err", err)
	w.stack = w.stack[:0]
	w.events = append(w.events, Event{Offset: w.s.buf.End(), Type: abi.TypeChainOverflow, At: time.Now(),
		Body: &abi.ChainOverflow{Error: err.Error()}})
}

// commit publishes a walk: the staged bytes and the events become visible
// together and waiters wake. What goes to the peer is returned as one
// batch (nil if none), with a done channel if ack.
func (w *walker) commit(ack bool) *batch {
	s := w.s
	now := time.Now()
	// The time of the newest byte is set before the bytes become visible:
	// a reader that saw them with the previous time would take a session
	// quiet for long and release an incomplete character at once.
	if s.buf.End() > s.buf.Head() {
		s.mu.Lock()
		s.lastRx, s.lastActive = now, now
		s.mu.Unlock()
	}
	if b := s.rec.Load(); b != nil {
		s.recordCommit(b.r, w.events)
	}
	from, to := s.buf.Commit()
	s.mu.Lock()
	if len(w.events) > 0 {
		s.addEventsLocked(w.events)
	}
	if to > from || len(w.events) > 0 {
		s.notifyLocked()
	}
	s.mu.Unlock()
	if w.closeQ {
		go s.Close()
	}
	if w.fatal != nil {
		go s.end(w.fatal)
	}
	if len(w.out) == 0 {
		return nil
	}
	b := &batch{data: w.out, deadline: now.Add(s.cfg.WriteTimeout)}
	w.out = nil // the batch owns those bytes now
	if ack {
		b.done = make(chan struct{})
	}
	return b
}

// submit hands a batch nobody waits for (replies the plugins made) to the
// writer.
func (s *Session) submit(b *batch) {
	if b == nil {
		return
	}
	if err := s.wr.submit(b); err != nil {
		s.log.Warn("output to the peer dropped", "bytes", len(b.data), "err", err)
	}
}

// lockChain takes the chain for one walk, waiting at most timeout, or
// until ctx ends.
func (s *Session) lockChain(ctx context.Context, timeout time.Duration) error {
	select {
	case s.chainSem <- struct{}{}:
		return nil
	default:
	}
	// Only now ask for ctx's Done channel: a cancel context makes it on
	// first use, an allocation per tool call when the lock is free.
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case s.chainSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return errors.New("cancelled while waiting for the session")
	case <-t.C:
		return fmt.Errorf("%w: a plugin call has not returned for %v", ErrBusy, timeout)
	}
}

func (s *Session) unlockChain() { <-s.chainSem }

// inbound walks one chunk from the peer. Called with the chain locked; it
// returns the replies the plugins made when their place in the order of
// writes is kept for the caller to write (writeFromPump) after unlocking.
func (s *Session) inbound(p []byte) *batch {
	w := &s.w
	w.reset()
	w.stack = append(w.stack, step{i: 0, dir: abi.Inbound, data: p})
	w.run()
	b := w.commit(false)
	if b == nil {
		return nil
	}
	inline, err := s.wr.reserve(b)
	if err != nil {
		s.log.Warn("output to the peer dropped", "bytes", len(b.data), "err", err)
	}
	if !inline {
		return nil // queued for the writer goroutine, or dropped
	}
	return b
}

// asyncOut is output plugin i made outside a chunk.
type asyncOut struct {
	i   int
	ems []abi.Emission
	// reply: the screen's held answers to terminal queries, let go
	// (replies.go).
	reply bool
}

// maxAsync bounds the bytes of such output waiting for the chain.
const maxAsync = 1 << 20

// async takes output a plugin made outside a chunk (on_open, on_tick: a
// keepalive, a dialect's opening command) and routes it through the chain
// at once, from a goroutine of its own so the plugin host never waits for a
// busy session.
func (s *Session) async(i int, ems []abi.Emission) { s.enqueue(asyncOut{i: i, ems: ems}) }

// enqueue queues output made outside a chunk for drainAsync.
func (s *Session) enqueue(o asyncOut) {
	n := 0
	for _, e := range o.ems {
		n += len(e.Data)
	}
	s.mu.Lock()
	if s.asyncBytes+n > maxAsync {
		s.mu.Unlock()
		s.log.Warn("plugin output made outside a chunk dropped: too much is waiting", "bytes", n)
		return
	}
	s.asyncQ = append(s.asyncQ, o)
	s.asyncBytes += n
	start := !s.asyncBusy
	s.asyncBusy = true
	s.mu.Unlock()
	if start {
		go s.drainAsync()
	}
}

func (s *Session) drainAsync() {
	for {
		s.mu.Lock()
		q := s.asyncQ
		s.asyncQ, s.asyncBytes = nil, 0
		if len(q) == 0 {
			s.asyncBusy = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case <-s.released:
			s.mu.Lock()
			s.asyncBusy = false
			s.mu.Unlock()
			return
		case s.chainSem <- struct{}{}:
		}
		w := &s.w
		w.reset()
		for _, o := range q {
			w.begin(o.i)
			w.replying = o.reply
			for _, e := range o.ems {
				w.Emit(e.Stream, e.Data)
			}
			w.replying = false
			w.queue(step{}, false)
			w.run()
		}
		s.submit(w.commit(false))
		s.unlockChain()
	}
}
