// Package session is termhost's one session model: the registry of every
// session (telnet, ssh, pty), its life cycle, the pump that carries each
// received chunk through the session's plugin chain into the raw buffer and
// the event stream, the single writer that talks to the peer with
// deadlines, and event-driven waits.
//
// One chunk's trip: link.Read → chain[0].Data(inbound) → … → chain[n-1] →
// ring buffer (+ prompt marks and other events, at their byte offsets) →
// waiters woken. Bytes a plugin sends toward the peer travel back down the
// chain and are queued for the writer goroutine, so a peer that stops
// reading never blocks the pump or a tool call beyond its deadline.
package session

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/ringbuf"
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

// Errors a caller can tell apart.
var (
	ErrNotFound     = errors.New("Session not found")
	ErrDisconnected = errors.New("Session disconnected")
	ErrLimit        = errors.New("RESOURCE_LIMIT")
	ErrNameTaken    = errors.New("session name already in use")
)

// Binding is one plugin attached to one session (host/plugin.Binding
// implements it). Emissions returned by a call stay valid until the next
// call on the same Binding.
type Binding interface {
	Data(dir abi.Dir, p []byte) (abi.Action, []abi.Emission, error)
	Control(req []byte) ([]abi.Emission, error)
	Close()
	Plugin() (name, version string)
}

// Attacher opens a session on the current version of a named plugin.
type Attacher func(name string, kind abi.Kind, opts []byte) (Binding, error)

// Config holds per-session limits.
type Config struct {
	BufferSize   int           // raw buffer bytes, default 1 MiB
	WriteTimeout time.Duration // a write to the peer fails after this, default 10s
	MaxWait      time.Duration // ceiling for any wait, default 5 min
	IdleAfter    time.Duration // reported state turns idle after this quiet time, default 60s
	Logger       *slog.Logger
}

func (c *Config) defaults() {
	if c.BufferSize <= 0 {
		c.BufferSize = 1 << 20
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 5 * time.Minute
	}
	if c.IdleAfter <= 0 {
		c.IdleAfter = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Event is something a plugin reported, with the buffer offset where it
// happened.
type Event struct {
	Offset uint64         `json:"offset"`
	Type   string         `json:"type"`
	At     time.Time      `json:"at"`
	Fields map[string]any `json:"fields,omitempty"`
}

const maxEvents = 256

// Session is one live or ended session. Its exported fields are fixed at
// open; everything else is behind methods.
type Session struct {
	ID      string
	Name    string
	Kind    Kind
	Host    string
	Port    int
	Command string // pty: the command line
	Owner   string // owning MCP session id ("" for none)
	Created time.Time

	cfg   Config
	log   *slog.Logger
	link  link.Link
	buf   *ringbuf.Buffer
	chain []Binding

	chainMu sync.Mutex // serializes every call into the chain

	mu         sync.Mutex
	state      State
	changed    chan struct{} // closed on every change; nil when nobody waits
	lastRx     time.Time     // last byte delivered to the buffer
	lastActive time.Time
	cursor     uint64 // the default reader's position in the buffer
	events     []Event
	prompts    []uint64 // offsets of prompt marks, newest last (bounded)
	endErr     error
	endedAt    time.Time
	cols, rows int

	waiting atomic.Int32 // waits in progress

	wq        chan writeReq
	quit      chan struct{} // closed by Close: stops the writer
	pumpDone  chan struct{}
	closeOnce sync.Once
}

type writeReq struct {
	p   []byte
	ack chan error // nil: nobody waits (negotiation replies)
}

func newSession(cfg Config, kind Kind, l link.Link, chain []Binding) *Session {
	cfg.defaults()
	now := time.Now()
	s := &Session{
		Kind:       kind,
		Created:    now,
		cfg:        cfg,
		link:       l,
		buf:        ringbuf.New(cfg.BufferSize),
		chain:      chain,
		state:      StateInitializing,
		lastActive: now,
		wq:         make(chan writeReq, 64),
		quit:       make(chan struct{}),
		pumpDone:   make(chan struct{}),
		cols:       80,
		rows:       24,
	}
	return s
}

// start launches the pump and the writer; the session becomes active.
func (s *Session) start() {
	s.log = s.cfg.Logger.With("session", s.ID, "kind", string(s.Kind))
	s.setState(StateActive)
	go s.writer()
	go s.pump()
}

// Info is a snapshot for listings.
type Info struct {
	ID         string    `json:"sessionId"`
	Name       string    `json:"name,omitempty"`
	Kind       Kind      `json:"kind"`
	State      State     `json:"state"`
	Host       string    `json:"host,omitempty"`
	Port       int       `json:"port,omitempty"`
	Command    string    `json:"command,omitempty"`
	Plugins    []string  `json:"plugins"`
	Created    time.Time `json:"connectedAt"`
	LastActive time.Time `json:"lastActive"`
	Cols       int       `json:"cols"`
	Rows       int       `json:"rows"`
	Buffered   int       `json:"bufferedBytes"`
	Unread     uint64    `json:"unreadBytes"`
	Waiting    int       `json:"waiting,omitempty"` // reads waiting right now
	Error      string    `json:"error,omitempty"`
}

// Info returns a snapshot of the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	if st == StateActive && time.Since(s.lastActive) > s.cfg.IdleAfter {
		st = StateIdle
	}
	in := Info{
		ID: s.ID, Name: s.Name, Kind: s.Kind, State: st, Host: s.Host, Port: s.Port,
		Command: s.Command, Created: s.Created, LastActive: s.lastActive,
		Cols: s.cols, Rows: s.rows, Buffered: s.buf.Len(), Waiting: int(s.waiting.Load()),
	}
	if h := s.buf.Head(); h > s.cursor {
		in.Unread = h - s.cursor
	}
	for _, b := range s.chain {
		n, v := b.Plugin()
		in.Plugins = append(in.Plugins, n+"@"+v)
	}
	if s.endErr != nil {
		in.Error = s.endErr.Error()
	}
	return in
}

// Peer is host:port (telnet, ssh) or the command (pty).
func (s *Session) Peer() string {
	if s.Host != "" {
		return s.Host + ":" + strconv.Itoa(s.Port)
	}
	return s.Command
}

// State is the current life-cycle state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Alive says whether the peer is still connected.
func (s *Session) Alive() bool {
	st := s.State()
	return st == StateActive || st == StateIdle || st == StateInitializing
}

// LastActive is the time of the last input or output.
func (s *Session) LastActive() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastActive
}

func (s *Session) setState(st State) {
	s.mu.Lock()
	s.state = st
	s.notifyLocked()
	s.mu.Unlock()
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

// Events returns the events recorded at or after offset from.
func (s *Session) Events(from uint64) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, e := range s.events {
		if e.Offset >= from {
			out = append(out, e)
		}
	}
	return out
}

func (s *Session) disconnectedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endErr != nil {
		return fmt.Errorf("%w: %v", ErrDisconnected, s.endErr)
	}
	return ErrDisconnected
}
