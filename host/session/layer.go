package session

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
