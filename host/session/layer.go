package session

import (
	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

// The engine's API for the layers built on it (host/device: run_command,
// set_mode, logins, send_secret). A layer sees a session only through
// these and the other exported methods: marks (Mark, Oldest), events
// (Events, LastSeq, AwaitEvent), waits (Wait), byte-range reads
// (ReadRange), input (Send, SendCredential) and control requests
// (Control). Nothing here knows what a device is.

// Oldest is a cursor at the oldest byte the buffer still holds, before
// every event the session kept: a wait from it sees everything there is.
func (s *Session) Oldest() Cursor {
	return Cursor{Off: s.buf.Tail()}
}

// ReadRange copies the bytes of [from, to) that the buffer still holds
// (to is clamped to the end of the output) and returns them with the
// offset of the first: later than from when the start was evicted. It
// moves no reader.
func (s *Session) ReadRange(from, to uint64) (p []byte, start uint64) {
	head := s.buf.Head()
	to = min(to, head)
	if to <= from {
		return nil, max(from, s.buf.Tail())
	}
	p, _, evicted := s.buf.Read(from, int(to-from))
	return p, from + evicted
}

// HasPlugin reports whether the session's chain has the plugin that plays
// role r (the registry's choice for that role).
func (s *Session) HasPlugin(r Role) bool { return s.hasPlugin(r) }

// DisconnectedErr is the error a call on an ended session returns:
// ErrDisconnected, with why it ended when that is known.
func (s *Session) DisconnectedErr() error { return s.disconnectedErr() }

// Value is what a layer stored under key for this session (SetValue), or
// nil. Values live and go with the session; a restart (restart_app) makes
// a new session without them.
func (s *Session) Value(key any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key]
}

// SetValue stores v under key for the session, for the layer that owns
// key (use an unexported key type, as with context values).
func (s *Session) SetValue(key, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = make(map[any]any)
	}
	s.values[key] = v
}

// ShellState is what a session's shell integration (Spec.ShellMarks) said
// last: its last prompt, command start and command end events (a zero Seq:
// none yet). The shell is at its prompt when Prompt is the newest of them.
type ShellState struct {
	Prompt, Command, Done Event
}

// AtPrompt says whether the shell's newest mark is a prompt: it waits for
// a command line (no command started since it was drawn).
func (st ShellState) AtPrompt() bool {
	return st.Prompt.Seq != 0 && st.Prompt.Seq > st.Command.Seq
}

// note takes in an event as it is recorded.
func (st *ShellState) note(e Event) {
	switch b := e.Body.(type) {
	case *abi.Prompt:
		if b.Source == abi.SourceShell {
			st.Prompt = e
		}
	case *abi.Command:
		if b.Source == abi.SourceShell {
			st.Command = e
		}
	case *abi.Done:
		if b.Source == abi.SourceShell {
			st.Done = e
		}
	}
}

// Shell is the shell integration's state (zero for a session without it).
func (s *Session) Shell() ShellState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shell
}

// Awaiting says whether the program reading the session's terminal waits
// for input now (link.InputWaiter: a local PTY's foreground program); ok
// is false where that cannot be known (Telnet, SSH: the program runs on
// another machine) or the session has ended.
func (s *Session) Awaiting() (a link.Awaiting, ok bool) {
	w, ok := s.link.(link.InputWaiter)
	if !ok || !s.Alive() {
		return link.Awaiting{}, false
	}
	return w.Awaiting(), true
}

// Replies is how many answers to terminal queries the screen has sent the
// peer so far; a layer that sees it move while a command ran knows such
// answers may sit unread at the next prompt.
func (s *Session) Replies() uint64 { return s.replies.Load() }

// Sends is how many times input was sent to the session so far (by any
// tool or person): a layer that remembers where the session stood knows
// from it whether anyone typed since.
func (s *Session) Sends() uint64 { return s.sends.Load() }
