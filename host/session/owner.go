package session

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Ownership (SPEC TRUST-5). Every session has an owner: an opaque string
// the MCP layer derives from the client (the bearer token, and within it
// the MCP session of a 2025-era HTTP client; "" for the one stdio
// client). A client's lookups and listings name it, and another owner's
// session is simply not there: Get answers as for an id nobody used, and
// names are unique per owner, so a name another owner took is free. The
// only way a session changes hands is an explicit handover: its owner
// makes a one-time code (Share) that another owner redeems (Claim).

// ErrShareCode is a handover code that is unknown, used or expired.
var ErrShareCode = errors.New("no handover with this code")

// ShareTTL is how long a handover code stays valid.
const ShareTTL = 10 * time.Minute

// Bounds of the handover codes waiting to be claimed: per owner, and in
// all.
const (
	maxSharesPerOwner = 16
	maxShares         = 1024
)

type share struct {
	id, from string
	expires  time.Time
}

// nameKey is the key of a name in byName and tombs: names are per owner.
// A NUL never appears in an owner or a valid name.
func nameKey(owner, name string) string { return owner + "\x00" + name }

// Get finds one of owner's sessions by id or name. Another owner's
// session is not found, with the same error as an id nobody used.
// Finding an orphaned session restarts its orphan idle time.
func (r *Registry) Get(owner, ref string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.byID[ref]
	if s != nil && s.owner != owner {
		s = nil
	}
	if s == nil {
		s = r.byName[nameKey(owner, ref)]
	}
	if s != nil {
		if _, ok := r.orphans[s.ID]; ok {
			r.orphans[s.ID] = time.Now()
		}
		return s, nil
	}
	t := r.tombs[ref]
	if t == nil || t.owner != owner {
		t = r.tombs[nameKey(owner, ref)]
	}
	if t != nil {
		return nil, fmt.Errorf("%w: session %q ended at %s and was discarded to bound memory (at most %d ended sessions, %d MiB, are kept)",
			ErrExpired, ref, t.ended.UTC().Format(time.RFC3339), r.limits.MaxEnded, r.limits.MaxEndedBytes>>20)
	}
	return nil, fmt.Errorf("%w: no session has id or name %q", ErrNotFound, ref)
}

// Owns reports whether the session with this id belongs to owner.
func (r *Registry) Owns(owner, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.byID[id]
	return s != nil && s.owner == owner
}

// Owned returns owner's sessions of the given kind ("" for all), oldest
// first.
func (r *Registry) Owned(owner string, kind Kind) []*Session {
	r.mu.Lock()
	var out []*Session
	for _, s := range r.byID {
		if s.owner == owner && (kind == "" || s.Kind == kind) {
			out = append(out, s)
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Share makes a one-time code that hands the session s, owner's, to
// whoever claims it within ShareTTL.
func (r *Registry) Share(owner string, s *Session) (code string, expires time.Time, err error) {
	var b [18]byte // 144 bits
	rand.Read(b[:])
	code = base64.RawURLEncoding.EncodeToString(b[:])
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[s.ID] != s || s.owner != owner {
		return "", time.Time{}, fmt.Errorf("%w: no session has id or name %q", ErrNotFound, s.ID)
	}
	now := time.Now()
	mine := 0
	for c, sh := range r.shares {
		switch {
		case now.After(sh.expires):
			delete(r.shares, c)
		case sh.from == owner:
			mine++
		}
	}
	if mine >= maxSharesPerOwner || len(r.shares) >= maxShares {
		return "", time.Time{}, fmt.Errorf("%w: %d handover codes of yours are waiting to be claimed (at most %d, %d in all); they expire %s after they are made",
			ErrLimit, mine, maxSharesPerOwner, maxShares, ShareTTL)
	}
	expires = now.Add(ShareTTL)
	r.shares[code] = &share{id: s.ID, from: owner, expires: expires}
	return code, expires, nil
}

// Claim redeems a handover code: the session becomes owner's, under the
// same id and name, and its previous owner no longer sees it. A code
// works once; every other code for the session is void afterwards. When
// owner already has a live session of that name, nothing changes and the
// code stays valid.
func (r *Registry) Claim(owner, code string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sh := r.shares[code]
	if sh == nil || time.Now().After(sh.expires) {
		delete(r.shares, code)
		return nil, fmt.Errorf("%w (codes from share_session work once, within %s)", ErrShareCode, ShareTTL)
	}
	s := r.byID[sh.id]
	if s == nil || s.owner != sh.from {
		delete(r.shares, code)
		return nil, fmt.Errorf("%w: the session it handed over is gone or already changed hands", ErrShareCode)
	}
	if s.Name != "" {
		if other := r.byName[nameKey(owner, s.Name)]; other != nil && other != s && other.Alive() {
			return nil, fmt.Errorf("%w: %q names a live session of yours; stop it, then claim again", ErrNameTaken, s.Name)
		}
	}
	for c, o := range r.shares {
		if o.id == s.ID {
			delete(r.shares, c)
		}
	}
	if s.Name != "" {
		if key := nameKey(s.owner, s.Name); r.byName[key] == s {
			delete(r.byName, key)
		}
		r.byName[nameKey(owner, s.Name)] = s
	}
	s.handOver(owner)
	delete(r.orphans, s.ID)
	return s, nil
}
