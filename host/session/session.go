// Package session is termhost's one session model: the registry of every
// session (telnet, ssh, pty), its life cycle, the pump that carries each
// received chunk through the session's plugin chain into the raw buffer,
// the screen and the event stream, the writer that talks to the peer with
// deadlines, and event-driven waits and reads.
//
// A kind of session is a link (host/link: how bytes reach the peer), a
// plugin chain and a policy; Registry.Open does the rest the same way for
// every kind. One chunk's trip: link.Read → chain[0] → … → chain[n-1] →
// ring buffer (staged, then committed with its events) → screen → waiters
// woken. Bytes a plugin sends toward the peer travel back down the chain to
// the writer, which writes them with a deadline, so a peer that stops
// reading never blocks the pump or a tool call past its deadline.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/ringbuf"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// Kind of session.
type Kind string

const (
	KindTelnet Kind = "telnet"
	KindSSH    Kind = "ssh"
	KindPTY    Kind = "pty"
)

// State of a session's life cycle (SPEC SES-3).
type State string

const (
	StateInitializing State = "initializing"
	StateActive       State = "active"
	StateIdle         State = "idle"
	StateTerminating  State = "terminating"
	StateTerminated   State = "terminated"
)

// Errors a caller can tell apart (host/mcp maps them to each tool group's
// codes and words).
var (
	ErrNotFound     = errors.New("Session not found")
	ErrDisconnected = errors.New("Session disconnected")
	ErrExpired      = errors.New("Session expired")
	ErrLimit        = errors.New("limit reached")
	ErrNameTaken    = errors.New("session name already in use")
	// ErrOwnerGone: an open finished after its owner's MCP session was
	// deleted (CloseOwned); the session is not kept.
	ErrOwnerGone   = errors.New("the MCP session that asked for this session has ended")
	ErrInvalidName = errors.New("invalid session name")
	// ErrScreenSize: cols×rows over MaxScreenCells.
	ErrScreenSize = errors.New("screen too large")
	// ErrPeerStalled: the peer does not read what is written to it.
	ErrPeerStalled = errors.New("the peer stopped reading")
	// ErrBusy: the session could not be served within the deadline (a
	// plugin call that does not return holds it).
	ErrBusy = errors.New("session busy")
	// ErrUnsupported: the session's kind cannot do what was asked.
	ErrUnsupported = errors.New("not supported by this session")
)

// Binding is one plugin attached to one session (host/plugin.Binding
// implements it). Emissions reach the Sink while a call runs.
type Binding interface {
	Data(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error)
	Control(req []byte, s wasmhost.Sink) error
	// OnAsync sets where output the plugin makes outside a call goes
	// (on_open's, on_tick's).
	OnAsync(f func([]abi.Emission))
	Close()
	Plugin() (name, version string)
}

// Attacher opens a session of a kind on the current version of a named
// plugin, with JSON options. An error that wraps ErrBadPlugin is the
// caller's: no such plugin, or options the plugin refused.
type Attacher func(name string, kind abi.Kind, opts []byte) (Binding, error)

// ErrBadPlugin: a session asked for a plugin that does not exist, or with
// options the plugin refused (an unknown dialect).
var ErrBadPlugin = errors.New("bad plugin or plugin options")

// Config holds per-session limits.
type Config struct {
	BufferSize   int           // raw buffer bytes, default 1 MiB
	WriteTimeout time.Duration // a write to the peer fails after this, default 10s
	WriteQueue   int           // bytes waiting for the writer before sends fail fast, default 1 MiB
	MaxWait      time.Duration // ceiling for any wait, default 5 min
	IdleAfter    time.Duration // reported state turns idle after this quiet time, default 60s
	// CallGrace bounds how long closing a session waits for a plugin call
	// in progress (one that never returns is abandoned). Default 5s.
	CallGrace time.Duration
	// UTF8Hold is how long a read holds back an incomplete last UTF-8
	// character while the peer is quiet (default 2s).
	UTF8Hold time.Duration
	Logger   *slog.Logger
	// Secrets are the secrets masked in every session (the Registry's;
	// NewRegistry makes one when nil).
	Secrets *SecretSet
	// Plugins names the screen, shell and dialect plugins sessions get.
	Plugins Plugins
	// Record starts a session's recording (record.go; nil: none can be
	// recorded); RecordAll records every session from its start.
	Record    RecordFunc
	RecordAll bool
}

func (c *Config) defaults() {
	if c.BufferSize <= 0 {
		c.BufferSize = 1 << 20
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.WriteQueue <= 0 {
		c.WriteQueue = 1 << 20
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 5 * time.Minute
	}
	if c.IdleAfter <= 0 {
		c.IdleAfter = time.Minute
	}
	if c.CallGrace <= 0 {
		c.CallGrace = 5 * time.Second
	}
	if c.UTF8Hold <= 0 {
		c.UTF8Hold = utf8Hold
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Event is something a plugin (or the session) reported: numbered in one
// sequence per session, placed at the buffer offset where it happened.
// Body is its typed content, decoded once by the walker (sdk/abi's event
// structs, by pointer: *abi.Prompt, *abi.Pager …, or *abi.Unknown for a
// type of a plugin's own); Type is Body's type.
type Event struct {
	Seq    uint64
	Offset uint64
	Type   abi.EventType
	At     time.Time
	Body   abi.Payload
}

// maxEvents bounds the events a session keeps.
const maxEvents = 256

// Peer is what a session talks to: host and port (telnet, ssh) or a
// command line (pty).
type Peer struct {
	Host    string
	Port    int
	Command string
}

func (p Peer) String() string {
	if p.Command != "" {
		return p.Command
	}
	return link.JoinHostPort(p.Host, p.Port)
}

// Session is one live or ended session. Its exported fields are fixed at
// open; everything else is behind methods.
type Session struct {
	ID      string
	Name    string
	Kind    Kind
	Peer    Peer
	Created time.Time

	// owner is who may see and use the session (Registry.Get); the
	// registry changes it on a handover (handOver), under its lock and
	// mu, so either lock is enough to read it.
	owner string

	cfg    Config
	log    *slog.Logger
	link   link.Link
	buf    *ringbuf.Buffer
	chain  []Binding
	screen Binding // optional: fed what the buffer gets (SPEC SES-5)
	// screenBuilt is the screen binding's Resets count its content was
	// built for (guarded by chainSem): when the binding says otherwise, the
	// screen lost its state and is rebuilt from the buffer (syncScreen).
	screenBuilt uint64
	// screenRest: the screen's last call returned abi.Settled, so text
	// that follows may be held back for it (walker.feedScreen). Guarded by
	// chainSem.
	screenRest bool

	chainSem chan struct{} // serializes every walk through the chain
	w        walker        // guarded by chainSem
	// inWalks counts the chunks from the peer given to the chain
	// (InboundWalks).
	inWalks atomic.Uint64

	readSem chan struct{} // serializes reads (of every reader)

	mu         sync.Mutex
	state      State
	changed    chan struct{} // closed on every change; nil when nobody waits
	lastRx     time.Time     // last byte committed to the buffer
	lastActive time.Time
	events     []Event
	nextSeq    uint64
	// shell: the shell integration's last prompt and command events
	// (ShellState), kept past the event ring.
	shell      ShellState
	endErr     error
	endedAt    time.Time
	exit       *link.ExitStatus
	cols, rows int
	screenGone bool // the screen's binding is closed (the session was discarded)
	// frozen is an ended session's screen state (state_export), kept in
	// place of its binding; reattachScreen opens a binding to read it.
	frozen         []byte
	reattachScreen func() (Binding, error)
	// joinDialect attaches the dialect plugin that joins the chain on
	// first use (Spec.Dialect DetectOnUse; JoinDialect); nil otherwise.
	joinDialect func() (Binding, error)
	stopping    bool // Stop is ending the session
	// human is the viewer holding the keyboard ("": the agent; human.go).
	human string
	// values: what a layer above the engine keeps about the session
	// (layer.go); guarded by mu.
	values map[any]any

	// reopen starts the same thing again under the same id (restart_app);
	// nil for kinds that cannot.
	reopen func(ctx context.Context, id string) (*Session, error)
	// The spec's stages (stage.go), by where they run: outputs on what
	// the chain passes toward the buffer (guarded by chainSem, as is
	// holdTimer, which passes on what they hold back); onEvent on events
	// before they are recorded; onInput on sends (guarded by chainSem);
	// lineCheck and line: the screen check of typed lines (linecheck.go).
	outputs   []OutputStage
	holdTimer *time.Timer
	onEvent   func(e *Event) bool
	onInput   func(p []byte) error
	lineCheck *LineCheck
	line      lineState

	asyncQ     []asyncOut // plugin output made outside a chunk, waiting for the chain
	asyncBytes int
	asyncBusy  bool

	waiting atomic.Int32 // waits in progress

	// replies counts the screen's answers to terminal queries sent to the
	// peer, repliesDropped those dropped because the program that asked
	// was gone (walker.replyWanted).
	replies, repliesDropped atomic.Uint64
	// sends counts the sends of input (Sends).
	sends atomic.Uint64
	// Answers to terminal queries held until the program that asked is
	// known to read them (replies.go); guarded by mu.
	held      [][]byte
	heldBytes int
	holding   bool

	// rec is the session's recorder (record.go), nil when not recorded;
	// recPath the path of its current or last recording (guarded by mu);
	// recScratch the walk's copy of what it staged (guarded by chainSem).
	rec        atomic.Pointer[recBox]
	recPath    string
	recScratch []byte

	// readers: each owner's place in the output (reader.go); guarded by mu.
	readers        map[string]*Reader
	readerClock    uint64 // counts uses of readers, for dropping the least recent
	readersDropped bool   // a reader was dropped to bound them

	wr        *writer
	pumpDone  chan struct{}
	onEnd     func(*Session) // the registry's bookkeeping
	endOnce   sync.Once
	closeOnce sync.Once
	released  chan struct{} // closed once link, writer and chain are released
}

// Cursor is a reader's position: the next byte offset it has not read,
// and the sequence number of the last event it was given.
type Cursor struct {
	Off uint64
	Seq uint64
}

func newSession(cfg Config, spec Spec, st stageSet, l link.Link, chain []Binding, screen Binding) *Session {
	cfg.defaults()
	now := time.Now()
	s := &Session{
		ID:         spec.ID,
		reopen:     spec.Reopen,
		outputs:    st.outputs,
		onInput:    st.onInput,
		onEvent:    st.onEvent,
		lineCheck:  st.lineCheck,
		Name:       spec.Name,
		Kind:       spec.Kind,
		Peer:       spec.Peer,
		owner:      spec.Owner,
		Created:    now,
		cfg:        cfg,
		log:        cfg.Logger,
		link:       l,
		buf:        ringbuf.New(cfg.BufferSize),
		chain:      chain,
		chainSem:   make(chan struct{}, 1),
		readSem:    make(chan struct{}, 1),
		state:      StateInitializing,
		lastActive: now,
		cols:       spec.Cols,
		rows:       spec.Rows,
		pumpDone:   make(chan struct{}),
		released:   make(chan struct{}),
	}
	s.w.s = s
	if screen != nil {
		s.screen = newScreenSlot(s, screen)
	}
	s.screenBuilt = screenResets(s.screen)
	s.wr = newWriter(l, cfg.WriteQueue, cfg.WriteTimeout)
	return s
}

// start launches the pump and the writer and routes the output plugins
// made while opening; the session becomes active.
func (s *Session) start() {
	s.log = s.cfg.Logger.With("session", s.ID, "kind", string(s.Kind))
	s.setState(StateActive)
	go s.wr.run()
	for i, b := range s.bindings() {
		b.OnAsync(func(ems []abi.Emission) { s.async(i, ems) })
	}
	go s.pump()
}

// bindings is the chain followed by the screen, if any: index len(chain)
// is the screen.
func (s *Session) bindings() []Binding {
	if s.screen == nil {
		return s.chain
	}
	return append(append([]Binding(nil), s.chain...), s.screen)
}

// Info is a snapshot for listings.
type Info struct {
	ID         string           `json:"sessionId"`
	Name       string           `json:"name,omitempty"`
	Kind       Kind             `json:"kind"`
	State      State            `json:"state"`
	Host       string           `json:"host,omitempty"`
	Port       int              `json:"port,omitempty"`
	Command    string           `json:"command,omitempty"`
	Plugins    []string         `json:"plugins"`
	Created    time.Time        `json:"connectedAt"`
	LastActive time.Time        `json:"lastActive"`
	Cols       int              `json:"cols"`
	Rows       int              `json:"rows"`
	Buffered   int              `json:"bufferedBytes"`
	Unread     uint64           `json:"unreadBytes"`
	Waiting    int              `json:"waiting,omitempty"` // reads waiting right now
	Error      string           `json:"error,omitempty"`
	Exit       *link.ExitStatus `json:"exit,omitempty"`
	Recording  string           `json:"recording,omitempty"`
}

// Info returns a snapshot of the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	st := s.state
	if st == StateActive && time.Since(s.lastActive) > s.cfg.IdleAfter {
		st = StateIdle
	}
	in := Info{
		ID: s.ID, Name: s.Name, Kind: s.Kind, State: st, Host: s.Peer.Host, Port: s.Peer.Port,
		Command: s.Peer.Command, Created: s.Created, LastActive: s.lastActive,
		Cols: s.cols, Rows: s.rows, Waiting: int(s.waiting.Load()), Exit: s.exit, Recording: s.recPath,
	}
	if s.endErr != nil {
		in.Error = s.endErr.Error()
	}
	var cur uint64 // the owner's reader, or the start when it has none
	if r := s.readers[s.owner]; r != nil {
		cur = r.read.Off
	}
	s.mu.Unlock()
	in.Buffered = s.buf.Len()
	// Unread counts what is still held: evicted bytes cannot be read.
	if h, t := s.buf.Head(), s.buf.Tail(); h > max(cur, t) {
		in.Unread = h - max(cur, t)
	}
	s.mu.Lock()
	chain := s.chain
	s.mu.Unlock()
	for _, b := range chain {
		n, v := b.Plugin()
		in.Plugins = append(in.Plugins, n+"@"+v)
	}
	return in
}

// State is the current life-cycle state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Alive says whether the peer is still connected (or the process running).
func (s *Session) Alive() bool {
	st := s.State()
	return st == StateActive || st == StateIdle || st == StateInitializing
}

// Ended is when the session ended (zero while it lives).
func (s *Session) Ended() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endedAt
}

// ExitStatus is how the peer process ended, when the link knows (pty).
func (s *Session) ExitStatus() (link.ExitStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exit == nil {
		return link.ExitStatus{}, false
	}
	return *s.exit, true
}

// Size is the session's screen size.
func (s *Session) Size() (cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cols, s.rows
}

// LastActive is the time of the last input or output.
func (s *Session) LastActive() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastActive
}

// LastRx is when the newest byte of output arrived.
func (s *Session) LastRx() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastRx
}

// BufferedBytes is the memory the session's buffer (and an ended
// session's frozen screen) holds.
func (s *Session) BufferedBytes() int {
	s.mu.Lock()
	n := len(s.frozen)
	s.mu.Unlock()
	return s.buf.Cap() + n
}

// freezeBuffer compresses the session's raw buffer (ringbuf.Freeze) if it
// has been idle — no input, output or read — for longer than quiet, and
// returns about how many bytes of storage that released. Reads leave the
// buffer compressed; the next output thaws it.
func (s *Session) freezeBuffer(quiet time.Duration) int {
	if time.Since(s.LastActive()) <= quiet {
		return 0
	}
	before := s.buf.Cap()
	if !s.buf.Freeze() {
		return 0
	}
	return max(before-s.buf.Cap(), 0)
}

func (s *Session) setState(st State) {
	s.mu.Lock()
	s.state = st
	s.notifyLocked()
	s.mu.Unlock()
}

// touchAt marks the session active at t, a time the caller read already
// (send's start: a clock read less per send); an earlier time than the
// last never moves the session's activity back.
func (s *Session) touchAt(t time.Time) {
	s.mu.Lock()
	s.touchLocked(t)
	s.mu.Unlock()
}

// touchLocked is touchAt with mu held.
func (s *Session) touchLocked(t time.Time) {
	if t.After(s.lastActive) {
		s.lastActive = t
	}
}

// notifyLocked wakes every waiter. Caller holds mu.
func (s *Session) notifyLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// watchLocked returns a channel closed at the next change. Caller holds mu.
func (s *Session) watchLocked() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// Events returns the events after sequence number seq.
func (s *Session) Events(seq uint64) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, e := range s.events {
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out
}

// addEventsLocked records events, numbering them. Caller holds mu.
func (s *Session) addEventsLocked(evs []Event) {
	for _, e := range evs {
		s.nextSeq++
		e.Seq = s.nextSeq
		if len(s.events) == maxEvents {
			copy(s.events, s.events[1:])
			s.events = s.events[:maxEvents-1]
		}
		s.events = append(s.events, e)
		s.shell.note(e)
	}
}

func (s *Session) disconnectedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endErr != nil {
		return fmt.Errorf("%w: %v", ErrDisconnected, s.endErr)
	}
	return ErrDisconnected
}

// MaxNameLen is the longest session name, in characters.
const MaxNameLen = 64

// ValidName checks a session name: 1 to 64 printable characters (no
// control or format characters such as NUL or a right-to-left override).
func ValidName(name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case n == 0:
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case n > MaxNameLen:
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalidName, n, MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidName)
	}
	for i, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: character %s at byte %d is not printable", ErrInvalidName, strconv.QuoteRune(r), i)
		}
	}
	return nil
}
