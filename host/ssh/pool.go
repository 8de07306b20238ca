package ssh

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
)

// Limits of SPEC SSH-1 (seeds 001/002: MAX_COMMANDS_PER_SESSION,
// SESSION_TIMEOUT, SSH_CONNECTION_TIMEOUT).
type Limits struct {
	MaxCommands int // commands per persistent session, then a fresh one (5)
	// IdleTimeout closes a persistent session, or a warm ephemeral
	// connection, idle this long (5 min).
	IdleTimeout    time.Duration
	PerCredential  int           // persistent sessions per credential (3)
	PerOwner       int           // SSH connections per MCP session (5)
	ConnectTimeout time.Duration // dial, handshake and authentication (10 s)
	// NoWarm closes an ephemeral call's connection after its command
	// instead of keeping it warm for the next call on the credential.
	NoWarm bool
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
	if l.ConnectTimeout <= 0 {
		l.ConnectTimeout = 10 * time.Second
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
	// credOpening counts the persistent sessions being opened, by
	// credential: the per-credential check and the open are one step.
	credOpening map[string]int
	// warm holds the idle connection kept for the next ephemeral call of
	// an owner on a credential (seed 001 §4.2).
	warm map[warmKey]*warmConn
	// idle is the connections that do not count against an owner's
	// limit: warm ones waiting, and ones being closed.
	idle map[string]bool
	done chan struct{}
	wg   sync.WaitGroup
}

type warmKey struct{ owner, cred string }

// warmConn is an authenticated connection between ephemeral calls.
type warmConn struct {
	c     *conn
	print [32]byte // the credential it was authenticated with
	since time.Time
}

// NewPool starts a pool (and its idle reaper) over a Dialer.
func NewPool(d *Dialer, l Limits) *Pool {
	l.defaults()
	if d.ConnectTimeout <= 0 {
		d.ConnectTimeout = l.ConnectTimeout
	}
	p := &Pool{d: d, limits: l, sessions: map[string]*persistent{}, opening: map[string]int{},
		credOpening: map[string]int{}, warm: map[warmKey]*warmConn{}, idle: map[string]bool{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.reaper()
	return p
}

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
	for k, w := range p.warm {
		ids = append(ids, w.c.s.ID)
		delete(p.warm, k)
	}
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
	for k, w := range p.warm {
		switch {
		case w.c.s.Alive() && !p.d.Sessions.Owns(k.owner, w.c.s.ID):
			delete(p.warm, k) // handed over: another MCP session's now
			delete(p.idle, w.c.s.ID)
		case !w.c.s.Alive() || now.Sub(w.since) > p.limits.IdleTimeout:
			delete(p.warm, k)
			gone = append(gone, w.c.s.ID) // stays in idle until closed
		}
	}
	p.mu.Unlock()
	p.closeAll(gone)
}

// closeAll closes sessions and forgets them as idle.
func (p *Pool) closeAll(ids []string) {
	for _, id := range ids {
		p.d.Sessions.Remove(id)
		p.mu.Lock()
		delete(p.idle, id)
		p.mu.Unlock()
	}
}

// ownerConnsLocked counts the SSH sessions of an owner (shells included)
// plus those being opened and not yet in the registry (see dial); a warm
// connection waiting for the next call, or one being closed, does not
// count. Caller holds mu.
func (p *Pool) ownerConnsLocked(owner string) int {
	n := p.opening[owner]
	for _, s := range p.d.Sessions.Owned(owner, session.KindSSH) {
		if s.Alive() && !p.idle[s.ID] {
			n++
		}
	}
	return n
}

// roomLocked checks that owner may open one more connection. At the
// limit it closes the owner's warm connections first (they are returned,
// to close after mu is released). Caller holds mu.
func (p *Pool) roomLocked(owner string) ([]string, error) {
	n := p.ownerConnsLocked(owner)
	warm := 0
	for k := range p.warm {
		if k.owner == owner {
			warm++
		}
	}
	var evict []string
	for k, w := range p.warm {
		if n+warm+1 <= p.limits.PerOwner {
			break
		}
		if k.owner == owner && !p.d.Sessions.Owns(owner, w.c.s.ID) {
			delete(p.warm, k) // handed over: not ours to close
			delete(p.idle, w.c.s.ID)
			warm--
			n = p.ownerConnsLocked(owner)
			continue
		}
		if k.owner == owner {
			delete(p.warm, k) // stays in idle until closed
			evict = append(evict, w.c.s.ID)
			warm--
		}
	}
	if n >= p.limits.PerOwner {
		return evict, &SessionError{fmt.Errorf("%w: this MCP session has %d SSH connections open (at most %d); close one (stop_app with its session id) or wait for an idle persistent session to be closed",
			session.ErrLimit, n, p.limits.PerOwner)}
	}
	return evict, nil
}

// releaseLocked gives back a slot taken by roomLocked's caller. Caller
// holds mu.
func (p *Pool) releaseLocked(owner string) {
	p.opening[owner]--
	if p.opening[owner] <= 0 {
		delete(p.opening, owner)
	}
}

// reserveConn takes one of the owner's connection slots (for dial), or
// fails with the limit.
func (p *Pool) reserveConn(owner string) error {
	p.mu.Lock()
	evict, err := p.roomLocked(owner)
	if err == nil {
		p.opening[owner]++
	}
	p.mu.Unlock()
	p.closeAll(evict)
	return err
}

// Shell opens an interactive shell (ssh_shell), within the owner's limit.
func (p *Pool) Shell(ctx context.Context, credID string, o ShellOptions) (*session.Session, error) {
	if _, err := p.d.Creds.Get(credID); err != nil {
		return nil, &CredentialError{err}
	}
	if err := p.reserveConn(o.Owner); err != nil {
		return nil, err
	}
	c, err := p.dial(ctx, credID, o.Owner, &o)
	if err != nil {
		return nil, err
	}
	return c.s, nil
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
	c, print, warm, err := p.ephemeralConn(ctx, r, false)
	if err != nil {
		return ExecResult{}, err
	}
	o := ExecOptions{Command: r.Command, MaxBytes: r.MaxBytes, Timeout: r.Timeout}
	res, sent, err := c.execStarted(ctx, o)
	if err != nil && warm && !sent {
		// The warm connection failed before the exec request could leave
		// (it had ended unnoticed): once more on a fresh one. Never after
		// it may have left: the command may have run, even with no answer.
		p.putBack(r, c, print, false)
		if c, print, _, err = p.ephemeralConn(ctx, r, true); err != nil {
			return ExecResult{}, err
		}
		res, err = c.exec(ctx, o)
	}
	// A command given up on may still run (the server may not have
	// stopped it): its connection is never used again.
	p.putBack(r, c, print, err == nil && !res.TimedOut && !res.Cancelled)
	return ExecResult{Result: res}, err
}

// ephemeralConn is a connection for an ephemeral call: the warm one of
// the owner and credential when it is still good, else a new one. Either
// counts against the owner's limit while the call runs.
func (p *Pool) ephemeralConn(ctx context.Context, r ExecRequest, fresh bool) (*conn, [32]byte, bool, error) {
	cred, err := p.d.Creds.Get(r.CredID)
	if err != nil {
		return nil, [32]byte{}, false, &CredentialError{err}
	}
	print := credPrint(cred)
	key := warmKey{r.Owner, r.CredID}
	var w *warmConn
	if !fresh {
		p.mu.Lock()
		w = p.warm[key]
		delete(p.warm, key) // still idle (not counted) until taken below
		p.mu.Unlock()
	}
	if w != nil && !p.usable(w, r.Owner, print) {
		p.forget(w, r.Owner)
		w = nil
	}
	p.mu.Lock()
	evict, err := p.roomLocked(r.Owner)
	if err == nil {
		if w != nil {
			delete(p.idle, w.c.s.ID) // it counts from now on
		} else {
			p.opening[r.Owner]++
		}
	} else if w != nil {
		if p.warm[key] == nil {
			p.warm[key] = w
		} else {
			evict = append(evict, w.c.s.ID)
		}
	}
	p.mu.Unlock()
	p.closeAll(evict)
	if err != nil {
		return nil, print, false, err
	}
	if w != nil {
		return w.c, print, true, nil
	}
	c, err := p.dial(ctx, r.CredID, r.Owner, nil)
	return c, print, false, err
}

// forget drops a warm connection that may not serve owner's calls: it is
// closed, unless it was handed over to another MCP session (claim_session),
// whose it now is.
func (p *Pool) forget(w *warmConn, owner string) {
	if w.c.s.Alive() && !p.d.Sessions.Owns(owner, w.c.s.ID) {
		p.mu.Lock()
		delete(p.idle, w.c.s.ID)
		p.mu.Unlock()
		return
	}
	p.closeAll([]string{w.c.s.ID})
}

// maxWarm bounds the warm connections of all MCP sessions together: each
// is one of the server's live sessions (--max-sessions), which idle warmth
// must not use up.
const maxWarm = 8

// dial opens a connection for owner (a shell with shell, else exec-only)
// on the slot the caller took (opening), and gives the slot back as soon
// as the session is in the registry: from then on the session counts
// against the owner's limit itself, so a connection in its handshake is
// not counted twice (or when the dial fails). When the server is at its
// session limit, the warm connections give way and it tries once more.
func (p *Pool) dial(ctx context.Context, credID, owner string, shell *ShellOptions) (*conn, error) {
	var once sync.Once
	release := func() {
		once.Do(func() {
			p.mu.Lock()
			p.releaseLocked(owner)
			p.mu.Unlock()
		})
	}
	defer release()
	c, err := p.d.open(ctx, credID, owner, shell, release)
	if err != nil && errors.Is(err, session.ErrLimit) && p.dropWarm(nil) > 0 {
		c, err = p.d.open(ctx, credID, owner, shell, release)
	}
	return c, err
}

// dropWarm closes the warm connections (those for which drop says so, or
// all) and says how many.
func (p *Pool) dropWarm(drop func(warmKey, *warmConn) bool) int {
	var ids []string
	p.mu.Lock()
	for k, w := range p.warm {
		if drop == nil || drop(k, w) {
			delete(p.warm, k) // stays in idle until closed
			ids = append(ids, w.c.s.ID)
		}
	}
	p.mu.Unlock()
	p.closeAll(ids)
	return len(ids)
}

// usable reports whether a warm connection may serve the owner's next
// call: alive, still the owner's (not handed over), authenticated with
// the credential as it is now, and its server's key still accepted by
// known_hosts as it is now.
func (p *Pool) usable(w *warmConn, owner string, print [32]byte) bool {
	if !w.c.s.Alive() || !p.d.Sessions.Owns(owner, w.c.s.ID) || w.print != print {
		return false
	}
	w.c.mu.Lock()
	key := w.c.hostKey
	w.c.mu.Unlock()
	if key == nil {
		return false
	}
	hostport := w.c.hostport()
	return p.d.HostKeys.Check(hostport, remoteAddr(hostport), key) == nil
}

// putBack keeps an ephemeral call's connection warm for the owner's next
// call on the credential, or closes it.
func (p *Pool) putBack(r ExecRequest, c *conn, print [32]byte, ok bool) {
	id := c.s.ID
	if ok && !p.limits.NoWarm && c.s.Alive() {
		key := warmKey{r.Owner, r.CredID}
		p.mu.Lock()
		select {
		case <-p.done:
		default:
			if p.warm[key] == nil {
				var evict []string
				if len(p.warm) >= maxWarm { // the longest unused gives way
					var oldest warmKey
					var at time.Time
					for k, w := range p.warm {
						if at.IsZero() || w.since.Before(at) {
							oldest, at = k, w.since
						}
					}
					evict = append(evict, p.warm[oldest].c.s.ID)
					delete(p.warm, oldest)
				}
				p.warm[key] = &warmConn{c: c, print: print, since: time.Now()}
				p.idle[id] = true
				p.mu.Unlock()
				p.closeAll(evict)
				return
			}
		}
		p.mu.Unlock()
	}
	p.d.Sessions.Remove(id)
}

// credPrint identifies a credential as it authenticates: its fields, its
// secrets and its key file's identity, hashed (a warm connection is
// reused only by the credential it was authenticated with).
func credPrint(c secrets.Credential) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, s := range []string{c.ID, c.Host, fmt.Sprint(c.Port), c.Username, c.AuthType, c.PrivateKeyPath, strings.Join(c.Kinds, ",")} {
		field([]byte(s))
	}
	for _, f := range []string{"password", "passphrase"} {
		v, _ := c.Secret(f)
		field(v)
		clear(v)
	}
	if c.PrivateKeyPath != "" {
		if fi, err := os.Stat(c.PrivateKeyPath); err == nil {
			field([]byte(fmt.Sprint(fi.Size(), fi.ModTime().UnixNano(), fi.Mode())))
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
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
		// place, in the same directory, and its slot.
		<-ps.busy
		fresh, err := p.open(ctx, r, ps)
		if err != nil {
			return nil, "", err
		}
		return fresh, ps.c.s.ID, nil
	}
	fresh, err := p.open(ctx, r, nil)
	return fresh, "", err
}

// open makes a new persistent session, marked busy; with old, it takes
// old's place (old is closed) and starts in its directory. The
// per-credential and per-owner checks and the slot they allow are one
// step under mu, so concurrent calls cannot all pass the check.
func (p *Pool) open(ctx context.Context, r ExecRequest, old *persistent) (*persistent, error) {
	cwd := ""
	p.mu.Lock()
	if old != nil {
		cwd = old.cwd
		if p.sessions[old.c.s.ID] == old {
			delete(p.sessions, old.c.s.ID)
			p.idle[old.c.s.ID] = true // closed below; no longer counts
		}
	}
	n := p.credOpening[r.CredID]
	for _, s := range p.sessions {
		if s.credID == r.CredID {
			n++
		}
	}
	var evict []string
	var err error
	if n >= p.limits.PerCredential {
		err = &SessionError{fmt.Errorf("%w: %d persistent SSH sessions use credential %q (at most %d); wait until one is free or idle for %s",
			session.ErrLimit, n, r.CredID, p.limits.PerCredential, p.limits.IdleTimeout)}
	} else if evict, err = p.roomLocked(r.Owner); err == nil {
		p.opening[r.Owner]++
		p.credOpening[r.CredID]++
	}
	p.mu.Unlock()
	if old != nil {
		evict = append(evict, old.c.s.ID)
	}
	p.closeAll(evict)
	if err != nil {
		return nil, err
	}
	c, err := p.dial(ctx, r.CredID, r.Owner, nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.credOpening[r.CredID]--; p.credOpening[r.CredID] <= 0 {
		delete(p.credOpening, r.CredID)
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ps := &persistent{c: c, credID: r.CredID, created: now, lastUsed: now, cwd: cwd, busy: make(chan struct{}, 1)}
	ps.busy <- struct{}{}
	p.sessions[c.s.ID] = ps
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
