package record

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
)

// Timing and memory of a recorder.
const (
	// FlushEvery: what a recorder holds reaches the file at most this
	// long after it happened (a kill -9 loses at most this much).
	FlushEvery = 500 * time.Millisecond
	// flushAt: past this much pending, the writer is woken at once.
	flushAt = 256 << 10
	// maxPending bounds what waits for a slow disk; output beyond it is
	// dropped, and the recording says how much.
	maxPending = 8 << 20
)

// Recorder writes one session's recording (session.Recorder): events are
// encoded into memory under a lock, as they happen, and a goroutine of its
// own writes them to the file at most FlushEvery later, so the session's
// walks never wait for the disk.
type Recorder struct {
	st   *Store
	path string
	f    *os.File
	max  int64 // this file's bound (Store.MaxFile)

	mu      sync.Mutex
	buf     []byte    // encoded, not yet written
	start   time.Time // the header's moment
	lastUs  int64     // time of the last event, µs since start
	held    [utf8.UTFMax]byte
	nHeld   int   // an incomplete character held for the next output
	size    int64 // bytes written and pending
	dropped int64 // output dropped while the disk was slow
	stopped string
	closed  bool
	mark    int // where the event being encoded starts in buf

	wmu       sync.Mutex // one flush at a time (spare is its own)
	kick, big chan struct{}
	done      chan struct{}
	loopDone  chan struct{}
	spare     []byte
}

var _ session.Recorder = (*Recorder)(nil)

func newRecorder(st *Store, path string, f *os.File, info session.RecordInfo) *Recorder {
	now := time.Now()
	r := &Recorder{st: st, path: path, f: f, max: st.MaxFile, start: now,
		kick: make(chan struct{}, 1), big: make(chan struct{}, 1), done: make(chan struct{}), loopDone: make(chan struct{})}
	h := Header{Version: 3, Term: Term{Cols: info.Cols, Rows: info.Rows, Type: "xterm-256color"}, Timestamp: now.Unix(),
		Title: fmt.Sprintf("termhost %s session %s (%s)", info.Kind, info.ID, info.Peer)}
	if info.Kind == session.KindPTY {
		h.Command = info.Peer.Command
	}
	hb, _ := json.Marshal(h)
	r.buf = append(append(r.buf, hb...), '\n')
	r.size = int64(len(r.buf))
	go r.loop()
	r.wake(false)
	return r
}

// Path is the recording's file.
func (r *Recorder) Path() string { return r.path }

// Output records what the session's buffer got.
func (r *Recorder) Output(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.stopped != "" {
		return
	}
	if len(r.buf) > maxPending {
		r.dropped += int64(len(p))
		return
	}
	// A character cut between chunks is written whole, with the next.
	if r.nHeld > 0 {
		for len(p) > 0 && r.nHeld < utf8.UTFMax && !utf8.FullRune(r.held[:r.nHeld]) {
			r.held[r.nHeld] = p[0]
			r.nHeld++
			p = p[1:]
		}
		if !utf8.FullRune(r.held[:r.nHeld]) && len(p) == 0 {
			return
		}
	}
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if r.nHeld == 0 && cut == 0 {
		r.nHeld = copy(r.held[:], p)
		return
	}
	r.open("o")
	r.buf = appendEscaped(r.buf, r.held[:r.nHeld])
	r.buf = appendEscaped(r.buf, p[:cut])
	r.close()
	r.nHeld = copy(r.held[:], p[cut:])
}

// Input records what was sent.
func (r *Recorder) Input(p []byte) { r.add("i", p) }

// Resize records a new screen size.
func (r *Recorder) Resize(cols, rows int) {
	r.add("r", []byte(strconv.Itoa(cols)+"x"+strconv.Itoa(rows)))
}

// Event records a marker for the events a person replaying the session
// looks for (Marker): prompts, pagers, questions, logins, exit codes.
func (r *Recorder) Event(e *session.Event) {
	if label := Marker(e); label != "" {
		r.add("m", []byte(label))
	}
}

// End records the session's end (a marker with why, the exit status as
// an exit event when known) and closes the recording.
func (r *Recorder) End(reason string, exit *link.ExitStatus) {
	r.mu.Lock()
	if !r.closed {
		r.stopped, r.max = "", 0 // the end is recorded even past the size bound
		if r.nHeld > 0 {
			r.event("o", r.held[:r.nHeld])
			r.nHeld = 0
		}
		if reason != "" {
			r.event("m", []byte("end: "+reason))
		}
		if exit != nil {
			code := exit.Code
			if exit.Signal != "" && code < 0 {
				code = 128 + signalNumber(exit.Signal)
			}
			r.event("x", []byte(strconv.Itoa(code)))
		}
	}
	r.mu.Unlock()
	r.Close()
}

// Close writes what is pending and closes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	close(r.done)
	<-r.loopDone
	err := r.f.Close()
	r.st.finished(r)
	return err
}

// stop ends a recording that reached a bound, with a note in it; the
// session goes on unrecorded.
func (r *Recorder) stop(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.stopped != "" {
		return
	}
	note := "termhost: recording stopped: " + why
	r.event("m", []byte(note))
	r.buf = append(append(append(r.buf, "# "...), note...), '\n')
	r.stopped = why
	r.wake(true)
}

// add records one event.
func (r *Recorder) add(code string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.stopped != "" {
		return
	}
	r.event(code, data)
}

// event encodes one event; caller holds mu.
func (r *Recorder) event(code string, data []byte) {
	r.open(code)
	r.buf = appendEscaped(r.buf, data)
	r.close()
}

// open starts an event line; close ends it (caller holds mu).
func (r *Recorder) open(code string) {
	us := time.Since(r.start).Microseconds()
	if us < r.lastUs {
		us = r.lastUs
	}
	r.mark = len(r.buf)
	r.buf = append(r.buf, '[')
	r.buf = appendSeconds(r.buf, us-r.lastUs)
	r.buf = append(r.buf, `, "`...)
	r.buf = append(r.buf, code...)
	r.buf = append(r.buf, `", "`...)
	r.lastUs = us
}

func (r *Recorder) close() {
	r.buf = append(r.buf, "\"]\n"...)
	r.size += int64(len(r.buf) - r.mark)
	r.wake(len(r.buf) >= flushAt)
	if r.max > 0 && r.size >= r.max && r.stopped == "" {
		why := fmt.Sprintf("this recording reached its size limit of %s", sizeString(r.max))
		note := "termhost: recording stopped: " + why
		r.open("m")
		r.buf = appendEscaped(r.buf, []byte(note))
		r.buf = append(r.buf, "\"]\n"...)
		r.buf = append(append(append(r.buf, "# "...), note...), '\n')
		r.stopped = why
		r.st.log.Warn("recording stopped at its size limit", "path", r.path, "limit", r.max)
	}
}

// wake tells the writer there is something to write: at its next period,
// or at once (now).
func (r *Recorder) wake(now bool) {
	select {
	case r.kick <- struct{}{}:
	default:
	}
	if now {
		select {
		case r.big <- struct{}{}:
		default:
		}
	}
}

// loop writes what is pending at most FlushEvery after it was recorded.
func (r *Recorder) loop() {
	defer close(r.loopDone)
	t := time.NewTimer(FlushEvery)
	t.Stop()
	for {
		select {
		case <-r.kick:
		case <-r.done:
			r.flush()
			return
		}
		t.Reset(FlushEvery)
		select {
		case <-t.C:
		case <-r.big:
			t.Stop()
		case <-r.done:
			t.Stop()
			r.flush()
			return
		}
		r.flush()
	}
}

// flush writes what is pending.
func (r *Recorder) flush() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	if r.dropped > 0 {
		note := fmt.Sprintf("termhost: %d bytes of output were not recorded (the disk was too slow)", r.dropped)
		r.open("m")
		r.buf = appendEscaped(r.buf, []byte(note))
		r.buf = append(r.buf, "\"]\n"...)
		r.dropped = 0
	}
	p := r.buf
	r.buf = r.spare[:0]
	r.mu.Unlock()
	if len(p) == 0 {
		r.spare = p
		return
	}
	if _, err := r.f.Write(p); err != nil {
		r.st.log.Warn("recording not written", "path", r.path, "err", err)
	}
	r.st.grow(int64(len(p)))
	if cap(p) > flushAt*2 {
		p = nil
	}
	r.mu.Lock()
	r.spare = p[:0]
	r.mu.Unlock()
}

// signalNumber is a signal's number on Linux, for a shell's 128+n exit
// code (0 when unknown).
func signalNumber(name string) int {
	switch name {
	case "SIGHUP":
		return 1
	case "SIGINT":
		return 2
	case "SIGQUIT":
		return 3
	case "SIGABRT":
		return 6
	case "SIGKILL":
		return 9
	case "SIGSEGV":
		return 11
	case "SIGPIPE":
		return 13
	case "SIGTERM":
		return 15
	}
	return 0
}

func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
