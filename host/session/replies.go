package session

import (
	"bytes"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// Answers to terminal queries (SPEC DONE-5). The screen answers a
// program's queries (cursor position, device attributes, window size) as
// a terminal would. A program that asks and exits before the answer
// arrives never reads it: the answer waits in the terminal's input and
// the shell that runs next takes it for typed text (a real terminal does
// the same). Where the terminal can say what its foreground program does
// (link.InputWaiter: a local PTY), an answer goes out only to a program
// still there to read it:
//   - the foreground group's leader has exited: dropped;
//   - the group is the shell itself while its integration says a command
//     runs (a builtin asked, which reads no answer, or the program that
//     asked has exited): dropped;
//   - the program is busy (running, or blocked in something other than
//     reading the terminal, as one is while it exits): held, and looked
//     at every replyPoll: sent once it waits for input, dropped once it
//     is gone or another group is in front, sent anyway after replyHold
//     (a program that asks, then works before it reads);
//   - otherwise (it waits for input, or that cannot be told): sent.
// Answers that come while others are held wait behind them, in order.
// Where nothing can be told (Telnet, SSH), every answer is sent; run_command
// erases what may be left of them at the next prompt (host/device).

const (
	replyHold = 50 * time.Millisecond
	replyPoll = time.Millisecond
	maxHeld   = 64 << 10 // bytes of held answers; more are dropped
)

// replyNow decides about an answer the screen emits now: true sends it at
// once; false means it was dropped or is held.
func (w *walker) replyNow(p []byte) bool {
	s := w.s
	iw, ok := s.link.(link.InputWaiter)
	if !ok {
		s.replies.Add(1)
		return true
	}
	s.mu.Lock()
	if s.holding {
		s.holdLocked(p)
		s.mu.Unlock()
		return false
	}
	s.mu.Unlock()
	aw := iw.Awaiting()
	switch {
	case aw.State == link.InputGone, aw.Leader && w.shellRunning():
		s.repliesDropped.Add(1)
		return false
	case aw.State == link.InputBusy:
		s.mu.Lock()
		s.holding = true
		s.holdLocked(p)
		s.mu.Unlock()
		go s.settleReplies(iw, aw.Pgid)
		return false
	}
	s.replies.Add(1)
	return true
}

// holdLocked keeps an answer behind the ones held. Caller holds mu.
func (s *Session) holdLocked(p []byte) {
	if s.heldBytes+len(p) > maxHeld {
		s.repliesDropped.Add(1)
		return
	}
	s.held = append(s.held, bytes.Clone(p))
	s.heldBytes += len(p)
}

// settleReplies watches the program that asked (foreground group pgid)
// until its held answers can be sent or dropped.
func (s *Session) settleReplies(iw link.InputWaiter, pgid int) {
	deadline := time.Now().Add(replyHold)
	t := time.NewTicker(replyPoll)
	defer t.Stop()
	for {
		select {
		case <-s.released:
			s.letGoReplies(false)
			return
		case <-t.C:
		}
		aw := iw.Awaiting()
		switch {
		case aw.State == link.InputGone, aw.Pgid != pgid, aw.Leader && s.shellBusy():
			s.letGoReplies(false)
			return
		case aw.State == link.InputWaiting, aw.State == link.InputUnknown, !time.Now().Before(deadline):
			s.letGoReplies(true)
			return
		}
	}
}

// letGoReplies sends (through the chain, as the screen's output) or drops
// the held answers.
func (s *Session) letGoReplies(send bool) {
	s.mu.Lock()
	held, screen := s.held, s.pastChain() // the chain grows under mu (JoinDialect)
	s.held, s.heldBytes, s.holding = nil, 0, false
	s.mu.Unlock()
	if !send || len(held) == 0 {
		s.repliesDropped.Add(uint64(len(held)))
		return
	}
	ems := make([]abi.Emission, len(held))
	for i, p := range held {
		ems[i] = abi.Emission{Stream: abi.ToPeer, Data: p}
	}
	s.replies.Add(uint64(len(held)))
	s.enqueue(asyncOut{i: screen, ems: ems, reply: true})
}

// shellBusy: the shell integration's newest mark is a command's start or
// end, not a prompt.
func (s *Session) shellBusy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.shell
	return st.Command.Seq > st.Prompt.Seq || st.Done.Seq > st.Prompt.Seq
}

// shellRunning: the shell integration's newest mark, this walk's events
// included, is a command's start (C) or end (D), not a prompt.
func (w *walker) shellRunning() bool {
	running := w.s.shellBusy()
	for _, e := range w.events {
		switch b := e.Body.(type) {
		case *abi.Prompt:
			if b.Source == abi.SourceShell {
				// A query drawn with the prompt is the shell's own only
				// if it comes after it: an escape follows the prompt's
				// place in what the screen was fed.
				running = e.Offset >= w.fedFrom && e.Offset-w.fedFrom <= uint64(len(w.scratch)) &&
					bytes.IndexByte(w.scratch[e.Offset-w.fedFrom:], 0x1b) < 0
			}
		case *abi.Command:
			if b.Source == abi.SourceShell {
				running = true
			}
		case *abi.Done:
			if b.Source == abi.SourceShell {
				running = true
			}
		}
	}
	return running
}
