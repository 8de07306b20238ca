package session

import (
	"context"
	"time"
)

// Readers. Every place a client has in a session's output lives here, in
// one object per owner (the owner notion of owner.go): where its reads
// left off (telnet_read, read_pty), where its waits and keys left off
// (wait_for, send_keys) and what it was last shown of the screen
// (view_screen's changes). A reader is made on first use and goes with the
// session: nothing outside the session keeps a copy that could be lost
// or outlive it. A handover (Claim) passes the read position on to the
// new owner and drops the previous owner's reader; an owner that went
// away for good takes its sessions, and so its readers, with it
// (Registry.CloseOwned, the orphan reaper).
//
// A session holds at most maxReaders readers. Beyond that the one used
// least recently is dropped, never the current owner's; a reader made
// after one was dropped starts at the end of the output, not at its start,
// and its first read says so (ReadResult.Lost): the session cannot tell
// a new owner from one whose reader it dropped, and an old prompt read
// again would satisfy a wait at once.

// maxReaders bounds the readers of one session.
const maxReaders = 16

// maxViewFormats bounds the screens a reader remembers (one per format).
const maxViewFormats = 4

// Reader is one owner's place in a session's output. Its fields are
// guarded by the session's mu.
type Reader struct {
	s     *Session
	owner string
	read  Cursor              // where the next read starts
	mark  Cursor              // where the next wait starts
	views map[string][]string // the rows last shown, per format
	used  uint64              // the session's readerClock at the last use
	lost  bool                // made after a reader was dropped: the next read says so
}

// Reader is owner's reader of the session, made on first use. An owner's
// first reader starts at the beginning of what the buffer holds (the
// first prompt of a shell just launched is usually there already).
func (s *Session) Reader(owner string) *Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readerLocked(owner)
}

func (s *Session) readerLocked(owner string) *Reader {
	s.readerClock++
	if r := s.readers[owner]; r != nil {
		r.used = s.readerClock
		return r
	}
	if s.readers == nil {
		s.readers = make(map[string]*Reader)
	}
	if len(s.readers) >= maxReaders {
		var victim *Reader
		for o, r := range s.readers {
			if o != s.owner && (victim == nil || r.used < victim.used) {
				victim = r
			}
		}
		delete(s.readers, victim.owner) // maxReaders > 1: a victim exists
		s.readersDropped = true
	}
	r := &Reader{s: s, owner: owner, used: s.readerClock}
	if s.readersDropped {
		end := s.markLocked()
		r.read, r.mark, r.lost = end, end, true
	}
	s.readers[owner] = r
	return r
}

// handOver gives the readers to a new owner (Claim): it reads on where
// the previous owner's reads left off, as from one stream, but its waits
// and views start afresh. Caller holds the registry's lock.
func (s *Session) handOver(to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.readers[s.owner]
	s.owner = to
	clear(s.readers)
	if prev != nil {
		r := s.readerLocked(to)
		r.read, r.lost = prev.read, prev.lost
	}
}

// privateReader is a reader no owner has, starting at c: the server's own
// watchers. It is not counted among the
// session's readers and goes when its user drops it.
func (s *Session) privateReader(c Cursor) *Reader {
	return &Reader{s: s, read: c, mark: c}
}

// Watcher is a private reader starting at the end of the output, for a
// watcher of the server's own (a resource subscription): its waits see
// only what comes after.
func (s *Session) Watcher() *Reader { return s.privateReader(s.Mark()) }

// Read reads what is new to the reader (Session.readFrom).
func (r *Reader) Read(ctx context.Context, opts ReadOptions) (ReadResult, error) {
	return r.s.readFrom(ctx, r, opts)
}

// Read reads for the session's current owner (its Reader).
func (s *Session) Read(ctx context.Context, opts ReadOptions) (ReadResult, error) {
	s.mu.Lock()
	r := s.readerLocked(s.owner)
	s.mu.Unlock()
	return r.Read(ctx, opts)
}

// Mark is where the reader's next wait starts: where its last wait or
// keys left off.
func (r *Reader) Mark() Cursor {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.mark
}

// SetMark makes the reader's next wait start at c (a Session.Mark taken
// before keys were sent, so the wait sees their effect).
func (r *Reader) SetMark(c Cursor) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.mark = c
}

// Wait waits per spec from the reader's mark (Session.Wait), and moves
// the mark to the end of the output once the wait ended without an
// error, so the next wait sees only what comes after. It returns the
// cursor it waited from, why it ended and the timeout it used.
func (r *Reader) Wait(ctx context.Context, spec WaitSpec, utf8 bool) (from Cursor, reason Reason, used time.Duration, err error) {
	from = r.Mark()
	reason, used, err = r.s.Wait(ctx, from, spec, utf8)
	if err == nil {
		r.s.mu.Lock()
		r.mark = r.s.markLocked()
		r.s.mu.Unlock()
	}
	return from, reason, used, err
}

// ViewChanges records rows as the reader's view of the screen in format
// and returns the indices of the rows that differ from its previous view
// in that format (all of them the first time).
func (r *Reader) ViewChanges(format string, rows []string) []int {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	prev, seen := r.views[format]
	if !seen && len(r.views) >= maxViewFormats {
		clear(r.views)
	}
	if r.views == nil {
		r.views = make(map[string][]string)
	}
	r.views[format] = append([]string(nil), rows...)
	changed := []int{}
	for i, row := range rows {
		if !seen || i >= len(prev) || prev[i] != row {
			changed = append(changed, i)
		}
	}
	return changed
}
