package sshpool

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/termhost/termhost/host/session"
)

// Limits of SPEC SSH-1.
type Limits struct {
	MaxCommands   int           // commands per persistent session, then a fresh one (5)
	IdleTimeout   time.Duration // a persistent session idle this long is closed (5 min)
	PerCredential int           // persistent sessions per credential (3)
	PerOwner      int           // SSH connections per MCP session (5)
}

func (l *Limits) defaults() {
	if l.MaxCommands <= 0 {
		l.MaxCommands = 5
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 5 * time.Minute
	}
	if l.PerCredential <= 0 {
		l.PerCredential = 3
	}
	if l.PerOwner <= 0 {
		l.PerOwner = 5
	}
}

// Mode of ssh_execute.
const (
	Ephemeral  = "ephemeral"
	Persistent = "persistent"
)

// persistent is one persistent session of ssh_execute. Who may use it is
// the registry's to say (session.Registry.Owns): a handover
// (claim_session) moves it like any session.
type persistent struct {
	c        *conn
	credID   string
	created  time.Time
	lastUsed time.Time
	count    int
	cwd      string
	busy     chan struct{} // one command at a time
}

// Pool runs ssh_execute and keeps its persistent sessions.
type Pool struct {
	d      *Dialer
	limits Limits

	mu       sync.Mutex
	sessions map[string]*persistent // by session id
	opening  map[string]int         // connections being opened, by owner
	done     chan struct{}
	wg       sync.WaitGroup
}

// NewPool starts a pool (and its idle reaper) over a Dialer.
func NewPool(d *Dialer, l Limits) *Pool {
	l.defaults()
	p := &Pool{d: d, limits: l, sessions: map[string]*persistent{}, opening: map[string]int{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.reaper()
	return p
}

// Dialer is the pool's dialer (ssh_shell uses it directly).
func (p *Pool) Dialer() *Dialer { return p.d }

// Close stops the reaper and closes every persistent session.
func (p *Pool) Close() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	ids := make([]string, 0, len(p.sessions))
	for id := range p.sessions {
		ids = append(ids, id)
	}
	p.sessions = map[string]*persistent{}
	p.mu.Unlock()
	for _, id := range ids {
		p.d.Sessions.Remove(id)
	}
}

func (p *Pool) reaper() {
	defer p.wg.Done()
	every := min(p.limits.IdleTimeout/4, 30*time.Second)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.reap()
		}
	}
}

// reap closes persistent sessions idle too long or already ended.
func (p *Pool) reap() {
	now := time.Now()
	var gone []string
	p.mu.Lock()
	for id, ps := range p.sessions {
		select {
		case ps.busy <- struct{}{}:
			<-ps.busy
		default:
			continue // running a command
		}
		if !ps.c.s.Alive() || now.Sub(ps.lastUsed) > p.limits.IdleTimeout {
			delete(p.sessions, id)
			gone = append(gone, id)
		}
	}
	p.mu.Unlock()
	for _, id := range gone {
		p.d.Sessions.Remove(id)
	}
}

// ownerConns counts the SSH sessions of an owner (shells included) plus
// those being opened. Caller holds mu.
func (p *Pool) ownerConnsLocked(owner string) int {
	n := p.opening[owner]
	for _, s := range p.d.Sessions.Owned(owner, session.KindSSH) {
		if s.Alive() {
			n++
		}
	}
	return n
}

// reserveConn takes one of the owner's connection slots, or fails with
// the limit.
func (p *Pool) reserveConn(owner string) (func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.ownerConnsLocked(owner); n >= p.limits.PerOwner {
		return nil, &SessionError{fmt.Errorf("%w: this MCP session has %d SSH connections open (at most %d); close one (stop_app with its session id) or wait for an idle persistent session to be closed",
			session.ErrLimit, n, p.limits.PerOwner)}
	}
	p.opening[owner]++
	return func() {
		p.mu.Lock()
		p.opening[owner]--
		if p.opening[owner] == 0 {
			delete(p.opening, owner)
		}
		p.mu.Unlock()
	}, nil
}

// Shell opens an interactive shell (ssh_shell), within the owner's limit.
func (p *Pool) Shell(ctx context.Context, credID string, o ShellOptions) (*session.Session, error) {
	if _, err := p.d.Creds.Get(credID); err != nil {
		return nil, &CredentialError{err}
	}
	release, err := p.reserveConn(o.Owner)
	if err != nil {
		return nil, err
	}
	defer release()
	return p.d.Shell(ctx, credID, o)
}

// ExecRequest is one ssh_execute call.
type ExecRequest struct {
	Owner     string
	CredID    string
	Command   string
	Mode      string // Ephemeral (default) or Persistent
	SessionID string // persistent: run in this session (optional)
	MaxBytes  int
	Timeout   time.Duration
}

// ExecResult is ssh_execute's answer.
type ExecResult struct {
	Result
	SessionID    string `json:"sessionId,omitempty"`
	CommandCount int    `json:"commandCount,omitempty"`
	MaxCommands  int    `json:"maxCommands,omitempty"`
	// Replaced is the persistent session this command's session took
	// over from (its command budget was used up; cwd carried over).
	Replaced string `json:"replacedSessionId,omitempty"`
}

// Execute runs a command after checking the rules (SPEC SSH-6: a blocked
// command never reaches the server).
func (p *Pool) Execute(ctx context.Context, r ExecRequest) (ExecResult, error) {
	if p.d.Rules != nil {
		if err := p.d.Rules.Check(r.Command); err != nil {
			return ExecResult{}, err
		}
	}
	if _, err := p.d.Creds.Get(r.CredID); err != nil {
		return ExecResult{}, &CredentialError{err}
	}
	if r.Mode == Persistent {
		return p.persistent(ctx, r)
	}
	release, err := p.reserveConn(r.Owner)
	if err != nil {
		return ExecResult{}, err
	}
	c, err := p.d.open(ctx, r.CredID, r.Owner, nil)
	release()
	if err != nil {
		return ExecResult{}, err
	}
	defer p.d.Sessions.Remove(c.s.ID)
	res, err := c.exec(ctx, ExecOptions{Command: r.Command, MaxBytes: r.MaxBytes, Timeout: r.Timeout})
	return ExecResult{Result: res}, err
}

// persistent runs a command in a persistent session: the one named, else
// this owner's least recently used one for the credential that is free,
// else a new one.
func (p *Pool) persistent(ctx context.Context, r ExecRequest) (ExecResult, error) {
	ps, replaced, err := p.pick(ctx, r)
	if err != nil {
		return ExecResult{}, err
	}
	defer func() { <-ps.busy }()
	res, err := ps.c.replExec(ctx, ExecOptions{Command: r.Command, MaxBytes: r.MaxBytes, Timeout: r.Timeout, Cwd: ps.cwd})
	p.mu.Lock()
	ps.count++
	ps.lastUsed = time.Now()
	if res.Cwd != "" {
		ps.cwd = res.Cwd
	}
	out := ExecResult{Result: res, SessionID: ps.c.s.ID, CommandCount: ps.count, MaxCommands: p.limits.MaxCommands, Replaced: replaced}
	out.Cwd = ps.cwd
	p.mu.Unlock()
	if err != nil && !ps.c.s.Alive() {
		p.drop(ps.c.s.ID)
	}
	return out, err
}

// pick returns a persistent session, marked busy, for the request.
func (p *Pool) pick(ctx context.Context, r ExecRequest) (*persistent, string, error) {
	p.mu.Lock()
	var ps *persistent
	if r.SessionID != "" {
		ps = p.sessions[r.SessionID]
		if ps == nil || !p.d.Sessions.Owns(r.Owner, r.SessionID) {
			p.mu.Unlock()
			return nil, "", &SessionError{fmt.Errorf("%w: no persistent SSH session %q of this MCP session (ssh_session_info lists them)", session.ErrNotFound, r.SessionID)}
		}
		if ps.credID != r.CredID {
			p.mu.Unlock()
			return nil, "", &SessionError{fmt.Errorf("persistent SSH session %q uses credential %q, not %q", r.SessionID, ps.credID, r.CredID)}
		}
	} else {
		var cands []*persistent
		for id, s := range p.sessions {
			if s.credID == r.CredID && s.c.s.Alive() && p.d.Sessions.Owns(r.Owner, id) {
				cands = append(cands, s)
			}
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i].lastUsed.Before(cands[j].lastUsed) })
		for _, s := range cands {
			select {
			case s.busy <- struct{}{}:
				<-s.busy
				ps = s
			default:
			}
			if ps != nil {
				break
			}
		}
	}
	p.mu.Unlock()
	if ps != nil {
		select {
		case ps.busy <- struct{}{}:
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
		if ps.count < p.limits.MaxCommands && ps.c.s.Alive() {
			return ps, "", nil
		}
		// Its budget is used up (or it ended): a fresh session takes its
		// place, in the same directory.
		<-ps.busy
		old := ps
		p.drop(old.c.s.ID)
		fresh, err := p.open(ctx, r, old.cwd)
		if err != nil {
			return nil, "", err
		}
		return fresh, old.c.s.ID, nil
	}
	fresh, err := p.open(ctx, r, "")
	return fresh, "", err
}

// open makes a new persistent session, marked busy.
func (p *Pool) open(ctx context.Context, r ExecRequest, cwd string) (*persistent, error) {
	p.mu.Lock()
	n := 0
	for _, s := range p.sessions {
		if s.credID == r.CredID {
			n++
		}
	}
	p.mu.Unlock()
	if n >= p.limits.PerCredential {
		return nil, &SessionError{fmt.Errorf("%w: %d persistent SSH sessions use credential %q (at most %d); wait until one is free or idle for %s",
			session.ErrLimit, n, r.CredID, p.limits.PerCredential, p.limits.IdleTimeout)}
	}
	release, err := p.reserveConn(r.Owner)
	if err != nil {
		return nil, err
	}
	c, err := p.d.open(ctx, r.CredID, r.Owner, nil)
	release()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ps := &persistent{c: c, credID: r.CredID, created: now, lastUsed: now, cwd: cwd, busy: make(chan struct{}, 1)}
	ps.busy <- struct{}{}
	p.mu.Lock()
	p.sessions[c.s.ID] = ps
	p.mu.Unlock()
	return ps, nil
}

// drop forgets a persistent session and closes it.
func (p *Pool) drop(id string) {
	p.mu.Lock()
	delete(p.sessions, id)
	p.mu.Unlock()
	p.d.Sessions.Remove(id)
}

// SessionInfo is one persistent session as ssh_session_info shows it.
type SessionInfo struct {
	ID           string    `json:"id"`
	CredentialID string    `json:"credentialId"`
	CreatedAt    time.Time `json:"createdAt"`
	LastUsedAt   time.Time `json:"lastUsedAt"`
	CommandCount int       `json:"commandCount"`
	MaxCommands  int       `json:"maxCommands"`
	Cwd          string    `json:"cwd,omitempty"`
	Host         string    `json:"host"`
	Alive        bool      `json:"alive"`
}

// Info lists an owner's persistent sessions (of one credential if given).
func (p *Pool) Info(owner, credID string) []SessionInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []SessionInfo
	for id, ps := range p.sessions {
		if !p.d.Sessions.Owns(owner, id) || (credID != "" && ps.credID != credID) {
			continue
		}
		out = append(out, SessionInfo{ID: id, CredentialID: ps.credID, CreatedAt: ps.created, LastUsedAt: ps.lastUsed,
			CommandCount: ps.count, MaxCommands: p.limits.MaxCommands, Cwd: ps.cwd, Host: ps.c.s.Peer.String(), Alive: ps.c.s.Alive()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
