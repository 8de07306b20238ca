package mcp

import (
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP sessions of the 2025-11-25 era over HTTP, and how each ends.
//
// termhost, not go-sdk, times an idle MCP session out: go-sdk's own timer
// (StreamableHTTPOptions.SessionTimeout) is off. Its timer closed the
// session without a word to termhost, which learnt of the end only once
// the close was over (ServerSession.Wait), and could not tell it from a
// DELETE that came meanwhile. One did come, often: the close ends the
// session's GET stream, and a client that does not reconnect (go-sdk's,
// for one) deletes its session at once. That DELETE was taken for the
// client ending its session, and the terminal sessions it should have left
// as orphans were stopped (TestHTTPIdleTimeoutThenDeleteOrphans). Here the
// timeout and a DELETE each take the session under one lock, and whichever
// comes first decides its end: see "HTTP: termhost times MCP sessions out"
// in docs/RATIONALE.md.

// sessionEnd is how an MCP session ends.
type sessionEnd int

const (
	endNone     sessionEnd = iota // live, or ended otherwise (shutdown, a failed initialize)
	endDeleted                    // its client deleted it: its terminal sessions stop
	endTimedOut                   // no request for the timeout: they became orphans
)

// mcpSessions are the live MCP sessions of one HTTP handler, by id.
type mcpSessions struct {
	timeout time.Duration
	// expire is called once per MCP session that times out, in its
	// timer's goroutine, once its end is decided and before it is closed:
	// it makes its terminal sessions orphans and says how many.
	expire func(*sdk.ServerSession) (orphaned int)

	mu sync.Mutex
	m  map[string]*mcpSession
}

type mcpSession struct {
	ss       *sdk.ServerSession // nil until its initialize has been served
	posts    int                // POSTs being served: the idle timer waits for none
	idleFrom time.Time          // when posts last fell to 0
	timer    *time.Timer        // nil until the first idle period
	end      sessionEnd
	orphaned int // terminal sessions made orphans when it timed out
}

// add registers an MCP session go-sdk has just minted, before the answer
// to its initialize (which holds its id) is written: every request that
// names it comes after. Its initialize counts as a POST being served
// (attach ends it).
func (l *mcpSessions) add(sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[string]*mcpSession)
	}
	if l.m[sid] == nil {
		l.m[sid] = &mcpSession{posts: 1}
	}
}

// attach gives a session added by add its go-sdk session once the
// initialize is served, and ends that POST.
func (l *mcpSessions) attach(sid string, ss *sdk.ServerSession) {
	l.mu.Lock()
	if e := l.m[sid]; e != nil {
		e.ss = ss
	}
	l.mu.Unlock()
	l.done(sid)
}

// begin notes a POST that names sid; it reports whether done must follow
// (sid is a live session here).
func (l *mcpSessions) begin(sid string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[sid]
	if e == nil || e.end != endNone {
		return false
	}
	e.posts++
	return true
}

// done notes the end of a POST begin counted; the idle timeout runs from
// the last one.
func (l *mcpSessions) done(sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[sid]
	if e == nil || e.posts == 0 {
		return
	}
	e.posts--
	if e.posts == 0 && e.end == endNone {
		l.idleLocked(sid, e)
	}
}

// idleLocked starts e's idle period. Caller holds mu.
func (l *mcpSessions) idleLocked(sid string, e *mcpSession) {
	e.idleFrom = time.Now()
	if e.timer == nil {
		e.timer = time.AfterFunc(l.timeout, func() { l.fire(sid, e) })
	} else {
		e.timer.Reset(l.timeout)
	}
}

// fire is e's idle timer. A timer that fired while a POST began, or that
// an earlier idle period left behind, finds the session busy or not idle
// for long enough yet, and leaves it (done starts the next period).
func (l *mcpSessions) fire(sid string, e *mcpSession) {
	l.mu.Lock()
	if l.m[sid] != e || e.end != endNone || e.posts > 0 || e.ss == nil {
		l.mu.Unlock()
		return
	}
	if left := l.timeout - time.Since(e.idleFrom); left > 0 {
		e.timer.Reset(left)
		l.mu.Unlock()
		return
	}
	e.end = endTimedOut
	ss := e.ss
	l.mu.Unlock()
	n := l.expire(ss)
	l.mu.Lock()
	e.orphaned = n
	l.mu.Unlock()
	ss.Close() // go-sdk's own timer is off; the session's watch forgets it
}

// deleting claims sid for a DELETE. It reports false when the session
// timed out first: it is gone, and its terminal sessions are orphans the
// DELETE does not touch. An id not here is go-sdk's to answer (404).
func (l *mcpSessions) deleting(sid string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[sid]
	switch {
	case e == nil:
		return true
	case e.end == endTimedOut:
		return false
	}
	e.end = endDeleted
	if e.timer != nil {
		e.timer.Stop()
	}
	return true
}

// undelete gives sid back its life after go-sdk refused its DELETE.
func (l *mcpSessions) undelete(sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.m[sid]; e != nil && e.end == endDeleted {
		e.end = endNone
		if e.posts == 0 {
			l.idleLocked(sid, e)
		}
	}
}

// remove forgets an MCP session that ended, and tells how it ended and,
// if it timed out, how many terminal sessions it left as orphans.
func (l *mcpSessions) remove(sid string) (sessionEnd, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[sid]
	if e == nil {
		return endNone, 0
	}
	delete(l.m, sid)
	if e.timer != nil {
		e.timer.Stop()
	}
	return e.end, e.orphaned
}

// mintWriter tells, before the first byte of an initialize's answer, the
// MCP session id go-sdk put in its header.
type mintWriter struct {
	http.ResponseWriter
	minted func(sid string)
	told   bool
}

func (w *mintWriter) tell() {
	if !w.told {
		w.told = true
		if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
			w.minted(sid)
		}
	}
}

func (w *mintWriter) WriteHeader(code int) {
	w.tell()
	w.ResponseWriter.WriteHeader(code)
}

func (w *mintWriter) Write(p []byte) (int, error) {
	w.tell()
	return w.ResponseWriter.Write(p)
}

func (w *mintWriter) Flush() {
	w.tell()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *mintWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
