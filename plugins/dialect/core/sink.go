package core

// Sink receives what a Scanner passes on and what it reports, in stream
// order: each event comes right after the bytes it concerns (a prompt
// after the prompt's bytes, an error after its line), and a pager's
// answer (Peer) just before its Pager or PagerLimit event. The plugin's
// main implements it and serialises the events; the core knows no wire
// format.
//
// Slices passed to User and Peer stay unchanged until the Scanner's next
// Inbound, Quiet, Flush or Import (so a Sink may hold a chunk's first run
// until the call returns, as the plugin's does); copy to keep them longer.
type Sink interface {
	// User delivers bytes passed on toward the user.
	User(p []byte)
	// Peer delivers bytes to send to the device: a pager's answer or its
	// quit key.
	Peer(p []byte)
	// Prompt: the device shows a prompt (the partial line at the end of
	// the stream matched one of the dialect's prompt patterns).
	Prompt(Prompt)
	// Done: the prompt just reported follows a command (a line sent).
	Done()
	// Pager: a pager prompt was answered and removed, or (Answered false,
	// pagers not answered automatically) left in the stream.
	Pager(Pager)
	// PagerLimit: the bound on answers per command was reached.
	PagerLimit(PagerLimit)
	// Question: the device asks something (never answered); text is the
	// question's line.
	Question(text string)
	// Login: the device asks for a login field: "username", "password" or
	// "enable" (the enable secret).
	Login(field string)
	// Error: a CLI error line right after a command.
	Error(text string)
	// Dialect: detection chose or revised the dialect.
	Dialect(Detection)
}

// Prompt is a prompt as the dialect's patterns read it.
type Prompt struct {
	Dialect  string
	Hostname string
	Mode     string // user, privileged or config
	Submode  string
	Prompt   string // the prompt's text, trailing blanks removed
	User     string // where the prompt shows it, else ""
	Cwd      string // where the prompt shows it, else ""
}

// Pager is a pager prompt.
type Pager struct {
	Text  string
	Pages int // answers so far this command
	// Answered: false when pagers are not answered automatically and the
	// prompt stays in the stream for the user.
	Answered bool
}

// PagerLimit: no more answers this command.
type PagerLimit struct {
	Pages int
	// Quit: the table's quit key was sent and the pager prompt removed,
	// so the device returns to its prompt; else the pager stays in the
	// stream.
	Quit bool
}

// Detection is the dialect detection chose.
type Detection struct {
	Name      string
	Confident bool
}

// emitter passes a scan's bytes and events to its Sink, merging adjacent
// runs of bytes: a chunk that passes on whole reaches User in one call
// (the plugin then answers Continue and the host copies nothing).
type emitter struct {
	sink  Sink
	pend  []byte // bytes toward the user not yet delivered
	calls int    // User calls made this scan
	other bool   // something besides bytes toward the user happened
}

// start begins a scan reporting to sink.
func (e *emitter) start(sink Sink) {
	e.sink, e.pend, e.calls, e.other = sink, nil, 0, false
}

// user passes p on toward the user; p must stay unchanged until the scan
// ends.
func (e *emitter) user(p []byte) {
	if len(p) == 0 {
		return
	}
	if n := len(e.pend); n > 0 && cap(e.pend) > n && &e.pend[:n+1][n] == &p[0] {
		// p continues the pending run in memory (the next lines of the
		// same chunk): one run.
		e.pend = e.pend[:n+len(p)]
		return
	}
	e.flush()
	e.pend = p
}

func (e *emitter) flush() {
	if len(e.pend) > 0 {
		e.sink.User(e.pend)
		e.calls++
		e.pend = nil
	}
}

// event flushes the bytes before an event; the caller then reports it.
func (e *emitter) event() Sink {
	e.flush()
	e.other = true
	return e.sink
}

// peer sends p to the device.
func (e *emitter) peer(p []byte) {
	e.flush()
	e.other = true
	if len(p) > 0 {
		e.sink.Peer(p)
	}
}

// end delivers what is pending and reports whether the scan passed p on
// unchanged and reported nothing else; p then went to User in one call.
func (e *emitter) end(p []byte) (plain bool) {
	plain = !e.other && e.calls == 0 && len(e.pend) == len(p) && (len(p) == 0 || &e.pend[0] == &p[0])
	e.flush()
	e.sink = nil
	return plain
}

// discard is a Sink that drops everything (detection again on Import).
type discard struct{}

func (discard) User([]byte)           {}
func (discard) Peer([]byte)           {}
func (discard) Prompt(Prompt)         {}
func (discard) Done()                 {}
func (discard) Pager(Pager)           {}
func (discard) PagerLimit(PagerLimit) {}
func (discard) Question(string)       {}
func (discard) Login(string)          {}
func (discard) Error(string)          {}
func (discard) Dialect(Detection)     {}
