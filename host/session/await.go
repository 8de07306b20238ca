package session

import (
	"context"

	"github.com/termhost/termhost/sdk/abi"
)

// What a kind's driver uses of a session besides reads and sends: wait for
// an event of its plugin, learn why the session ended, end it.

// EndReason explains a failed wait: the session's end error if it ended.
func (s *Session) EndReason(err error) string {
	if !s.Alive() {
		if e := s.disconnectedErr(); e != nil {
			return e.Error()
		}
	}
	return err.Error()
}

// lastSeq is the sequence number of the newest event.
func (s *Session) lastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextSeq
}

// awaitEvent waits for the first event after seq of one of the types, or
// for the session's end (an error), or ctx.
func (s *Session) awaitEvent(ctx context.Context, seq uint64, types ...abi.EventType) (Event, error) {
	for {
		s.mu.Lock()
		for _, e := range s.events {
			if e.Seq <= seq {
				continue
			}
			for _, t := range types {
				if e.Type == t {
					s.mu.Unlock()
					return e, nil
				}
			}
		}
		if s.state == StateTerminating || s.state == StateTerminated {
			s.mu.Unlock()
			return Event{}, s.disconnectedErr()
		}
		ch := s.watchLocked()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// AwaitEvent is awaitEvent for callers outside the package.
func (s *Session) AwaitEvent(ctx context.Context, seq uint64, types ...abi.EventType) (Event, error) {
	return s.awaitEvent(ctx, seq, types...)
}

// LastSeq is the sequence number of the newest event.
func (s *Session) LastSeq() uint64 { return s.lastSeq() }

// End ends the session with this reason (a driver learnt from its plugin
// that the peer went away), as the peer's going away would.
func (s *Session) End(reason error) { s.end(reason) }

// Released is closed once the session has ended and released its link,
// writer and plugins.
func (s *Session) Released() <-chan struct{} { return s.released }
