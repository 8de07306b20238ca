package session

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Limits are the registry's bounds (SPEC SES-4).
type Limits struct {
	MaxSessions int           // live sessions in total, default 100
	IdleTimeout time.Duration // reap sessions idle this long, default 30 min
	ReapEvery   time.Duration // how often to look, default 30 s
}

func (l *Limits) defaults() {
	if l.MaxSessions <= 0 {
		l.MaxSessions = 100
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 30 * time.Minute
	}
	if l.ReapEvery <= 0 {
		l.ReapEvery = 30 * time.Second
	}
}

// Registry holds every session of every kind. Ids are ULIDs; a session can
// also be found by its optional unique name.
type Registry struct {
	limits Limits
	cfg    Config
	log    *slog.Logger

	mu       sync.Mutex
	byID     map[string]*Session
	byName   map[string]*Session
	pending  int // slots reserved by opens in progress
	entropy  *ulid.MonotonicEntropy
	stopReap chan struct{}
	reapDone chan struct{}
}

// NewRegistry makes an empty registry and starts its reaper.
func NewRegistry(limits Limits, cfg Config) *Registry {
	limits.defaults()
	cfg.defaults()
	r := &Registry{
		limits:   limits,
		cfg:      cfg,
		log:      cfg.Logger,
		byID:     make(map[string]*Session),
		byName:   make(map[string]*Session),
		entropy:  ulid.Monotonic(rand.Reader, 0),
		stopReap: make(chan struct{}),
		reapDone: make(chan struct{}),
	}
	go r.reaper()
	return r
}

// Config is the per-session configuration new sessions get.
func (r *Registry) Config() Config { return r.cfg }

func (r *Registry) newID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ulid.MustNew(ulid.Timestamp(time.Now()), r.entropy).String()
}

// reserve takes a slot for a session being opened.
func (r *Registry) reserve(name string) (release func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	live := 0
	for _, s := range r.byID {
		if s.Alive() {
			live++
		}
	}
	if live+r.pending >= r.limits.MaxSessions {
		return nil, fmt.Errorf("%w: %d sessions are open, the limit is %d; close one (e.g. telnet_disconnect) first",
			ErrLimit, live+r.pending, r.limits.MaxSessions)
	}
	if name != "" {
		if other := r.byName[name]; other != nil && other.Alive() {
			return nil, fmt.Errorf("%w: %q names a live session; pick another name", ErrNameTaken, name)
		}
	}
	r.pending++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.pending--
			r.mu.Unlock()
		})
	}, nil
}

// add registers an opened session.
func (r *Registry) add(s *Session) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Name != "" {
		if other := r.byName[s.Name]; other != nil && other.Alive() {
			return fmt.Errorf("%w: %q names a live session; pick another name", ErrNameTaken, s.Name)
		}
		r.byName[s.Name] = s
	}
	r.byID[s.ID] = s
	return nil
}

// Get finds a session by id or name.
func (r *Registry) Get(ref string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.byID[ref]; s != nil {
		return s, nil
	}
	if s := r.byName[ref]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("%w: no session has id or name %q", ErrNotFound, ref)
}

// Remove closes and forgets a session. It reports whether one was there, so
// a second call changes nothing.
func (r *Registry) Remove(ref string) bool {
	r.mu.Lock()
	s := r.byID[ref]
	if s == nil {
		s = r.byName[ref]
	}
	if s != nil {
		delete(r.byID, s.ID)
		if s.Name != "" && r.byName[s.Name] == s {
			delete(r.byName, s.Name)
		}
	}
	r.mu.Unlock()
	if s == nil {
		return false
	}
	s.Close()
	return true
}

// List returns every session of the given kind ("" for all), oldest first.
func (r *Registry) List(kind Kind) []*Session {
	r.mu.Lock()
	out := make([]*Session, 0, len(r.byID))
	for _, s := range r.byID {
		if kind == "" || s.Kind == kind {
			out = append(out, s)
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// CloseOwned removes every session owned by an MCP session.
func (r *Registry) CloseOwned(owner string) {
	for _, s := range r.List("") {
		if s.Owner == owner {
			r.Remove(s.ID)
		}
	}
}

// Close stops the reaper and removes every session.
func (r *Registry) Close() {
	select {
	case <-r.stopReap:
	default:
		close(r.stopReap)
		<-r.reapDone
	}
	var wg sync.WaitGroup
	for _, s := range r.List("") {
		wg.Add(1)
		go func() { defer wg.Done(); r.Remove(s.ID) }()
	}
	wg.Wait()
}

func (r *Registry) reaper() {
	defer close(r.reapDone)
	t := time.NewTicker(r.limits.ReapEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stopReap:
			return
		case <-t.C:
			for _, s := range r.List("") {
				if idle := time.Since(s.LastActive()); idle > r.limits.IdleTimeout {
					r.log.Info("reaping idle session", "session", s.ID, "idle", idle.Round(time.Second))
					r.Remove(s.ID)
				}
			}
		}
	}
}

// opened finishes an open: registers s and starts it.
func (r *Registry) opened(ctx context.Context, s *Session) error {
	s.ID = r.newID()
	if err := r.add(s); err != nil {
		return err
	}
	s.start()
	_ = ctx
	return nil
}
