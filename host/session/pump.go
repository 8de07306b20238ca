package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/termhost/termhost/host/link"
)

const (
	readChunk = 32 << 10 // a read while output streams in
	readSmall = 4 << 10  // a read that waits for output
)

// bigReads are the pumps' 32 KiB read buffers: a pump borrows one while a
// read fills its small buffer and gives it back at the first short read,
// so a session that waits for output holds readSmall bytes, not readChunk
// (4 KiB holds a typical answer or screenful whole: one walk).
var bigReads = sync.Pool{New: func() any { return new([readChunk]byte) }}

// pump reads the link until it fails and walks every chunk through the
// chain. It owns the read side; it ends when the peer goes away or the
// link is closed.
func (s *Session) pump() {
	defer close(s.pumpDone)
	small := make([]byte, readSmall)
	var big *[readChunk]byte
	defer func() {
		if big != nil {
			bigReads.Put(big)
		}
	}()
	for {
		buf := small
		if big != nil {
			buf = big[:]
		}
		n, err := s.link.Read(buf)
		if n > 0 {
			s.chainSem <- struct{}{}
			s.inWalks.Add(1)
			reply := s.inbound(buf[:n])
			s.unlockChain()
			if reply != nil {
				s.wr.writeFromPump(reply)
			}
		}
		switch {
		case big == nil && n == len(small):
			big = bigReads.Get().(*[readChunk]byte) // more is likely waiting
		case big != nil && n < readSmall:
			bigReads.Put(big) // drained: the next read may wait long
			big = nil
		}
		if err != nil {
			s.end(err)
			return
		}
	}
}

// InboundWalks is how many chunks from the peer the chain has been given
// so far (each counted as its walk begins). A plugin can act on what the
// peer said only in such a walk: when the count has not moved since a
// control request, nothing the peer sent since reached the plugins
// (host/ssh: the server never confirmed the channel an exec opens, so the
// plugin never sent the exec request).
func (s *Session) InboundWalks() uint64 { return s.inWalks.Load() }

// end records why the session ended, wakes waiters and releases what the
// session holds: the link (its socket or process), the writer and the
// plugin bindings. The buffer, the events and the exit status stay
// readable until the session is closed or reaped.
func (s *Session) end(err error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		stopped := s.stopping
		s.mu.Unlock()
		switch {
		case stopped:
			err = errors.New("the session was stopped")
		case errors.Is(err, io.EOF), errors.Is(err, syscall.EIO):
			err = errors.New("the peer closed the connection")
			if _, process := s.link.(link.Exiter); process {
				err = errors.New("the process closed its terminal")
			}
		case errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrClosed):
			err = errors.New("the session was closed")
		}
		s.mu.Lock()
		if s.endErr == nil {
			s.endErr = err
		}
		s.state = StateTerminated
		s.endedAt = time.Now()
		s.notifyLocked()
		s.mu.Unlock()
		s.log.Info("session ended", "reason", err.Error())
		go s.release()
	})
}

// release frees the session's resources once it has ended: at once for
// the link and the writer; the plugins once no call is running in the
// chain (a call that never returns is abandoned after CallGrace).
func (s *Session) release() {
	s.link.Close()
	s.wr.close(s.disconnectedErr())
	if ex, ok := s.link.(link.Exiter); ok {
		go func() {
			st := ex.Exit()
			s.mu.Lock()
			s.exit = &st
			s.notifyLocked()
			s.mu.Unlock()
		}()
	}
	locked := false
	if err := s.lockChain(context.Background(), s.cfg.CallGrace); err != nil {
		s.log.Warn("session's plugins released while a call in them does not return", "err", err)
	} else {
		locked = true
		defer s.unlockChain()
	}
	if locked && !s.heldSince().IsZero() {
		// What the output stages held back is output too (the peer's
		// last bytes): it stays readable, masked as far as can be told.
		s.w.reset()
		s.flushHeld()
		s.w.run()
		s.w.commit(false)
	}
	if locked && s.screen != nil && s.buf.End() > s.w.screenOff {
		// Text held back for the screen (holdText): the final screen,
		// kept or frozen, shows it too.
		s.screenUp()
	}
	s.endRecording()
	s.mu.Lock()
	chain := s.chain
	s.mu.Unlock()
	for _, b := range chain {
		b.Close()
	}
	s.freezeScreen()
	if locked {
		// An ended session keeps bytes to read, not the walk's working
		// memory (up to a MiB of arena and the screen's scratch).
		s.w = walker{s: s}
	}
	// Keep only what can still be read, in storage of its size.
	s.buf.Compact(s.buf.Tail())
	close(s.released)
	if s.onEnd != nil {
		s.onEnd(s)
	}
}

// Stop ends the session gracefully when its link can (a process: SPEC
// PTY-3, see link.Stopper) and otherwise closes it. New input is refused
// from the start. It returns once the session is released.
func (s *Session) Stop(ctx context.Context, grace, termWait time.Duration) {
	st, ok := s.link.(link.Stopper)
	s.mu.Lock()
	live := s.state == StateActive || s.state == StateIdle || s.state == StateInitializing
	if ok && live {
		s.state, s.stopping = StateTerminating, true
		s.notifyLocked()
	}
	s.mu.Unlock()
	if ok && live {
		st.Stop(ctx, grace, termWait)
	}
	s.Close()
}

// Close ends the session if it is still running and waits (bounded) until
// its resources are released. Safe to call more than once and from any
// goroutine.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		if s.state != StateTerminated {
			s.state = StateTerminating
			s.notifyLocked()
		}
		s.mu.Unlock()
		s.end(fmt.Errorf("the session was closed"))
	})
	t := time.NewTimer(s.cfg.CallGrace + time.Second)
	defer t.Stop()
	select {
	case <-s.released:
		s.releaseScreen()
	case <-t.C:
		s.log.Warn("session closed without waiting for its release")
		go func() { <-s.released; s.releaseScreen() }()
	}
}
