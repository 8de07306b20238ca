package session

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"runtime/debug"
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
	// Ended sessions stay readable (buffer, events, exit status) until
	// closed or reaped, but only this many, holding at most this many
	// buffered bytes in all; beyond that the oldest are discarded, and
	// using one afterwards is ErrExpired. Defaults 100 and 64 MiB.
	MaxEnded      int
	MaxEndedBytes int
	// A process's graceful stop (SPEC PTY-3) when its owner goes away:
	// a running command gets StopGrace, SIGTERM gets StopTerm before
	// SIGKILL. Defaults 3 s and 3 s. When the whole server stops, every
	// session stops at once with ShutdownGrace and ShutdownTerm (defaults
	// 0.5 s and 1 s), so it fits in the 2 s a client waits between
	// closing the server's input and SIGTERM (CLIENTS.md).
	StopGrace, StopTerm         time.Duration
	ShutdownGrace, ShutdownTerm time.Duration
	// OrphanIdleTimeout reaps, gracefully, the sessions of an MCP session
	// that went away over HTTP (Orphan) once nobody has used them this
	// long (SPEC SES-4). Default 5 min.
	OrphanIdleTimeout time.Duration
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
	if l.MaxEnded <= 0 {
		l.MaxEnded = 100
	}
	if l.MaxEndedBytes <= 0 {
		l.MaxEndedBytes = 64 << 20
	}
	if l.StopGrace <= 0 {
		l.StopGrace = 3 * time.Second
	}
	if l.StopTerm <= 0 {
		l.StopTerm = 3 * time.Second
	}
	if l.ShutdownGrace <= 0 {
		l.ShutdownGrace = 500 * time.Millisecond
	}
	if l.ShutdownTerm <= 0 {
		l.ShutdownTerm = time.Second
	}
	if l.OrphanIdleTimeout <= 0 {
		l.OrphanIdleTimeout = 5 * time.Minute
	}
}

// maxTombstones bounds how many discarded sessions are remembered, so that
// using one says "expired" rather than "not found".
const maxTombstones = 4096

type tombstone struct {
	id, name, owner string
	ended           time.Time
}

// Registry holds every session of every kind. Ids are ULIDs; a session can
// also be found by its optional name, unique among its owner's sessions.
// Every lookup and listing for a client names the owner asking (see
// owner.go): another owner's session is not there for it.
type Registry struct {
	limits Limits
	cfg    Config
	log    *slog.Logger

	mu       sync.Mutex
	byID     map[string]*Session
	byName   map[string]*Session // by nameKey(owner, name)
	pending  int                 // slots reserved by opens in progress
	entropy  *ulid.MonotonicEntropy
	tombs    map[string]*tombstone // by id and by nameKey
	tombList []*tombstone          // oldest first
	// shares are the handover codes not yet claimed (Share, Claim);
	// reopening, the owners of sessions being restarted, by id.
	shares    map[string]*share
	reopening map[string]string
	// orphans are the sessions whose owner went away (Orphan), by id: the
	// time of the orphaning or of the last lookup since, whichever is later.
	orphans map[string]time.Time
	// gone are the owners that went away (Orphan, CloseOwned), with when
	// and whether they were deleted: a session whose open was still
	// running then is orphaned or refused as it is added (add), not left
	// to the plain idle timeout. Bounded: goneKeep, maxGone.
	gone     map[string]goneOwner
	stopping sync.WaitGroup // graceful stops the reaper started
	stopReap chan struct{}
	reapDone chan struct{}
	closed   bool
	freeing  bool // a giveBack is scheduled
}

// NewRegistry makes an empty registry and starts its reaper.
func NewRegistry(limits Limits, cfg Config) *Registry {
	limits.defaults()
	if cfg.Secrets == nil {
		// The caller did not share its set with the rest of the server:
		// the sessions' log is masked here.
		cfg.Secrets = NewSecretSet(0)
		if cfg.Logger != nil {
			cfg.Logger = slog.New(cfg.Secrets.Handler(cfg.Logger.Handler()))
		}
	}
	cfg.defaults()
	r := &Registry{
		limits:    limits,
		cfg:       cfg,
		log:       cfg.Logger,
		byID:      make(map[string]*Session),
		byName:    make(map[string]*Session),
		entropy:   ulid.Monotonic(rand.Reader, 0),
		tombs:     make(map[string]*tombstone),
		orphans:   make(map[string]time.Time),
		gone:      make(map[string]goneOwner),
		shares:    make(map[string]*share),
		reopening: make(map[string]string),
		stopReap:  make(chan struct{}),
		reapDone:  make(chan struct{}),
	}
	go r.reaper()
	return r
}

// Secrets is the set of secrets typed during the server's life, masked in
// every session (SPEC TRUST-2).
func (r *Registry) Secrets() *SecretSet { return r.cfg.Secrets }

// Config is the per-session configuration new sessions get.
func (r *Registry) Config() Config { return r.cfg }

// slot is a live-session slot reserved for an open in progress
// (reserve). add hands it to the session it registers, in the same step:
// from then on the session counts itself (it is live), so an open is
// never counted twice — reserved and registered — while its call has not
// returned (issue 33: 100 parallel opens right after 100 disconnects got
// RESOURCE_LIMIT). release gives back a slot no session took.
type slot struct {
	r    *Registry
	held bool // still counted in r.pending; guarded by r.mu
}

// release gives the slot back unless add handed it to a session. Safe to
// call more than once.
func (sl *slot) release() {
	sl.r.mu.Lock()
	sl.takeLocked()
	sl.r.mu.Unlock()
}

// takeLocked ends the reservation. Caller holds r.mu.
func (sl *slot) takeLocked() {
	if sl != nil && sl.held {
		sl.held = false
		sl.r.pending--
	}
}

// reserve takes a slot for a session being opened. Ended sessions do not
// count: they hold no socket or process. Nor do sessions being closed:
// Remove and Stop forget a session before they close it, so its slot is
// free before the call that closes it answers.
func (r *Registry) reserve(owner, name string) (*slot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("%w: the server is shutting down", ErrLimit)
	}
	live := 0
	for _, s := range r.byID {
		if s.Alive() {
			live++
		}
	}
	if live+r.pending >= r.limits.MaxSessions {
		return nil, fmt.Errorf("%w: %d sessions are open, the limit is %d; close one first",
			ErrLimit, live+r.pending, r.limits.MaxSessions)
	}
	if name != "" {
		if other := r.byName[nameKey(owner, name)]; other != nil && other.Alive() {
			return nil, fmt.Errorf("%w: %q names a live session of yours; pick another name", ErrNameTaken, name)
		}
	}
	r.pending++
	return &slot{r: r, held: true}, nil
}

// newID is a new session id (a ULID).
func (r *Registry) newID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.newIDLocked()
}

func (r *Registry) newIDLocked() string {
	return ulid.MustNew(ulid.Timestamp(time.Now()), r.entropy).String()
}

// add names and registers an opened session, which takes over the slot
// reserved for it (sl) in the same step.
func (r *Registry) add(s *Session, sl *slot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Name != "" {
		key := nameKey(s.owner, s.Name)
		if other := r.byName[key]; other != nil && other.Alive() {
			return fmt.Errorf("%w: %q names a live session of yours; pick another name", ErrNameTaken, s.Name)
		}
		r.byName[key] = s
		delete(r.tombs, key)
	}
	if s.ID == "" {
		s.ID = r.newIDLocked()
	} else if r.byID[s.ID] != nil {
		return fmt.Errorf("session id %s is in use", s.ID)
	}
	if g, ok := r.gone[s.owner]; ok && s.owner != "" {
		if g.deleted {
			if s.Name != "" && r.byName[nameKey(s.owner, s.Name)] == s {
				delete(r.byName, nameKey(s.owner, s.Name))
			}
			return fmt.Errorf("%w (deleted by its client while this session was being opened); it was closed", ErrOwnerGone)
		}
		r.orphans[s.ID] = time.Now()
	}
	s.onEnd = r.ended
	r.byID[s.ID] = s
	sl.takeLocked()
	return nil
}

// goneOwner is an owner that went away (Registry.gone).
type goneOwner struct {
	at      time.Time
	deleted bool
}

// How long and how many gone owners are remembered: longer than any call
// that opens a session runs (its wait ceilings are minutes).
const (
	goneKeep = time.Hour
	maxGone  = 4096
)

// goneLocked remembers that owner went away. Caller holds mu.
func (r *Registry) goneLocked(owner string, deleted bool) {
	if owner == "" {
		return
	}
	now := time.Now()
	if len(r.gone) >= maxGone {
		oldest, at := "", now
		for o, g := range r.gone {
			if now.Sub(g.at) > goneKeep {
				delete(r.gone, o)
			} else if g.at.Before(at) {
				oldest, at = o, g.at
			}
		}
		if len(r.gone) >= maxGone {
			delete(r.gone, oldest)
		}
	}
	r.gone[owner] = goneOwner{at: now, deleted: deleted}
}

// forgetLocked removes s from the maps. Caller holds mu.
func (r *Registry) forgetLocked(s *Session) {
	delete(r.byID, s.ID)
	delete(r.orphans, s.ID)
	if key := nameKey(s.owner, s.Name); s.Name != "" && r.byName[key] == s {
		delete(r.byName, key)
	}
}

// Remove closes and forgets the session with this id at once (a process
// is killed). It reports whether one was there, so a second call changes
// nothing. Callers find the session for a client with Get first.
func (r *Registry) Remove(id string) bool {
	return r.remove(id, nil)
}

// Stop stops the session with this id gracefully (SPEC PTY-3: a process
// gets the grace and SIGTERM before SIGKILL) and forgets it.
func (r *Registry) Stop(ctx context.Context, id string) bool {
	return r.remove(id, func(s *Session) { s.Stop(ctx, r.limits.StopGrace, r.limits.StopTerm) })
}

func (r *Registry) remove(id string, stop func(*Session)) bool {
	r.mu.Lock()
	s := r.byID[id]
	if s != nil {
		r.forgetLocked(s)
	}
	r.mu.Unlock()
	if s == nil {
		return false
	}
	if stop != nil {
		stop(s)
	} else {
		s.Close()
	}
	return true
}

// ended is told when a session has ended and released its resources: it
// keeps ended sessions within MaxEnded and MaxEndedBytes, discarding the
// oldest.
func (r *Registry) ended(*Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ended []*Session
	total := 0
	for _, s := range r.byID {
		if !s.Alive() && !s.Ended().IsZero() {
			ended = append(ended, s)
			total += s.BufferedBytes()
		}
	}
	if len(ended) <= r.limits.MaxEnded && total <= r.limits.MaxEndedBytes {
		return
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].Ended().Before(ended[j].Ended()) })
	defer r.giveBack()
	for _, s := range ended {
		if len(ended) <= r.limits.MaxEnded && total <= r.limits.MaxEndedBytes {
			break
		}
		r.forgetLocked(s)
		r.tombstoneLocked(s)
		go s.releaseScreen()
		total -= s.BufferedBytes()
		ended = ended[1:]
		r.log.Info("ended session discarded to bound memory", "session", s.ID)
	}
}

// FreezeIdle compresses the raw buffer of every session, live or ended,
// that has been idle for longer than quiet (see Session.freezeBuffer),
// lets the screen of every such live session leave its shared instance
// (Session.trimIdle: it comes back on its next use), and returns about
// how many bytes of buffer storage that released: they go back to the
// operating system with the next debug.FreeOSMemory.
func (r *Registry) FreezeIdle(quiet time.Duration) (released int) {
	for _, s := range r.List("") {
		released += s.freezeBuffer(quiet)
		s.trimIdle(quiet)
	}
	return released
}

// giveBack returns the memory of discarded sessions to the operating
// system soon (at most twice a second): a burst of sessions that
// each received a megabyte and ended would otherwise leave the process's
// resident memory at its peak until the runtime's background scavenger
// gets to it.
func (r *Registry) giveBack() {
	if r.freeing {
		return
	}
	r.freeing = true
	time.AfterFunc(500*time.Millisecond, func() {
		debug.FreeOSMemory()
		r.mu.Lock()
		r.freeing = false
		r.mu.Unlock()
	})
}

func (r *Registry) tombstoneLocked(s *Session) {
	t := &tombstone{id: s.ID, name: s.Name, owner: s.owner, ended: s.Ended()}
	r.tombs[t.id] = t
	if key := nameKey(t.owner, t.name); t.name != "" && r.byName[key] == nil {
		r.tombs[key] = t
	}
	r.tombList = append(r.tombList, t)
	if len(r.tombList) > maxTombstones {
		old := r.tombList[0]
		r.tombList = r.tombList[1:]
		if r.tombs[old.id] == old {
			delete(r.tombs, old.id)
		}
		if key := nameKey(old.owner, old.name); old.name != "" && r.tombs[key] == old {
			delete(r.tombs, key)
		}
	}
}

// List returns every session of the given kind ("" for all), oldest
// first, whoever owns it: for the server's own bookkeeping. A client's
// listing is Owned.
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

// Restart stops a session (gracefully) and starts the same program again
// under the same id, name and owner: restart_app.
func (r *Registry) Restart(ctx context.Context, s *Session) (*Session, error) {
	if s.reopen == nil {
		return nil, fmt.Errorf("%w: a %s session cannot be restarted (only a local program can)", ErrUnsupported, s.Kind)
	}
	r.mu.Lock()
	owner := s.owner
	r.reopening[s.ID] = owner
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.reopening, s.ID)
		r.mu.Unlock()
	}()
	r.Stop(ctx, s.ID)
	return s.reopen(ctx, s.ID)
}

// reopenOwner is the owner a session opened under id gets: the owner of
// the session it restarts (which may have been handed over since it was
// first opened), else owner.
func (r *Registry) reopenOwner(id, owner string) string {
	if id == "" {
		return owner
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.reopening[id]; ok {
		return o
	}
	return owner
}

// CloseOwned stops every session of an owner that went away (an HTTP
// client that ended its MCP session), all at once, each gracefully (SPEC
// PTY-3). It returns how many it stopped.
func (r *Registry) CloseOwned(owner string) int {
	r.mu.Lock()
	r.goneLocked(owner, true)
	r.mu.Unlock()
	var wg sync.WaitGroup
	list := r.Owned(owner, "")
	for _, s := range list {
		wg.Go(func() { r.Stop(context.Background(), s.ID) })
	}
	wg.Wait()
	return len(list)
}

// Orphan marks the sessions of an MCP session that went away without
// ending them (HTTP: its idle timeout; SPEC SES-4, MCP-2): they keep
// their owner, so no other client sees them, and the reaper stops them
// gracefully once none has been used for OrphanIdleTimeout (input,
// output, a lookup by its owner), rather than after IdleTimeout. A share
// code made before still hands one over (Claim), which ends its orphan
// time. It returns how many it marked.
func (r *Registry) Orphan(owner string) int {
	if owner == "" {
		return 0
	}
	now := time.Now()
	n := 0
	r.mu.Lock()
	defer r.mu.Unlock()
	r.goneLocked(owner, false)
	for id, s := range r.byID {
		if s.owner == owner {
			r.orphans[id] = now
			n++
		}
	}
	return n
}

// Orphaned reports whether the owner of a session went away (Orphan).
func (r *Registry) Orphaned(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.orphans[id]
	return ok
}

// Close stops the reaper and removes every session, all at once: each
// session's stop is bounded, so the whole takes as long as the slowest.
func (r *Registry) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stopReap)
	<-r.reapDone
	r.stopping.Wait()
	var wg sync.WaitGroup
	for _, s := range r.List("") {
		wg.Go(func() {
			r.remove(s.ID, func(s *Session) {
				s.Stop(context.Background(), r.limits.ShutdownGrace, r.limits.ShutdownTerm)
			})
		})
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
			r.reap()
		}
	}
}

// reap removes the sessions idle longer than IdleTimeout, and stops,
// gracefully, the orphans idle longer than OrphanIdleTimeout.
func (r *Registry) reap() {
	for _, s := range r.List("") {
		last := s.LastActive()
		r.mu.Lock()
		at, orphan := r.orphans[s.ID]
		r.mu.Unlock()
		if orphan {
			if at.After(last) {
				last = at
			}
			if idle := time.Since(last); idle > r.limits.OrphanIdleTimeout {
				r.log.Info("reaping a session whose MCP session went away", "session", s.ID, "idle", idle.Round(time.Second))
				r.mu.Lock()
				mine := r.byID[s.ID] == s
				if mine {
					r.forgetLocked(s)
				}
				r.mu.Unlock()
				if mine {
					r.stopping.Go(func() { s.Stop(context.Background(), r.limits.StopGrace, r.limits.StopTerm) })
				}
				continue
			}
		}
		if idle := time.Since(last); idle > r.limits.IdleTimeout {
			r.log.Info("reaping idle session", "session", s.ID, "idle", idle.Round(time.Second))
			r.Remove(s.ID)
		}
	}
}
