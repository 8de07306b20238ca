package record

import (
	"encoding/binary"
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

// Recorder writes one session's recording (session.Recorder). The
// session's walks only copy what happened, with its time, into a pending
// buffer under a lock; a goroutine of its own encodes it as asciicast and
// writes it at most FlushEvery later, so a walk neither encodes nor waits
// for the disk.
type Recorder struct {
	st   *Store
	path string
	f    *os.File

	mu      sync.Mutex
	raw     []byte    // pending records (appendRecord), not yet encoded
	start   time.Time // the header's moment
	lastUs  int64     // time of the last record, µs since start
	dropped int64     // output dropped while the disk was slow
	stopped string    // why the recording stopped early ("" : it goes on)
	ending  bool      // End is recording the end: past any bound
	closed  bool

	// The writer's own (wmu).
	wmu      sync.Mutex
	enc      []byte // encoded, being written
	spare    []byte // the other pending buffer
	encUs    int64  // time of the last event encoded
	held     [utf8.UTFMax]byte
	nHeld    int   // an incomplete character held for the next output
	written  int64 // bytes in the file
	max      int64 // the file's bound (Store.MaxFile; 0 once ending)
	boundHit bool

	kick, big chan struct{}
	done      chan struct{}
	loopDone  chan struct{}
}

var _ session.Recorder = (*Recorder)(nil)

// A pending record: code (with noBound set for the end's records), µs
// since start, length, then the bytes.
const (
	recHead = 1 + 8 + 4
	noBound = 0x80
)

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
	r.enc = append(append(r.enc, hb...), '\n')
	go r.loop()
	r.wake(true)
	return r
}

// Path is the recording's file.
func (r *Recorder) Path() string { return r.path }

// Output records what the session's buffer got.
func (r *Recorder) Output(p []byte) { r.add('o', p) }

// Input records what was sent.
func (r *Recorder) Input(p []byte) { r.add('i', p) }

// Resize records a new screen size.
func (r *Recorder) Resize(cols, rows int) {
	var b [24]byte
	r.add('r', fmt.Appendf(b[:0], "%dx%d", cols, rows))
}

// Event records a marker for the events a person replaying the session
// looks for (Marker): prompts, pagers, questions, logins, exit codes.
func (r *Recorder) Event(e *session.Event) {
	if label := Marker(e); label != "" {
		r.add('m', []byte(label))
	}
}

// End records the session's end (a marker with why, the exit status as
// an exit event when known) and closes the recording.
func (r *Recorder) End(reason string, exit *link.ExitStatus) {
	r.mu.Lock()
	if !r.closed {
		r.ending = true
		if reason != "" {
			r.appendRecord('m'|noBound, []byte("end: "+reason))
		}
		if exit != nil {
			code := exit.Code
			if exit.Signal != "" && code < 0 {
				code = 128 + signalNumber(exit.Signal)
			}
			r.appendRecord('x'|noBound, []byte(strconv.Itoa(code)))
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
	r.appendRecord('#'|noBound, []byte("termhost: recording stopped: "+why))
	r.stopped = why
	r.wake(true)
}

// add records one event.
func (r *Recorder) add(code byte, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.stopped != "" || r.ending {
		return
	}
	if len(r.raw) > maxPending {
		if code == 'o' {
			r.dropped += int64(len(data))
		}
		return
	}
	r.appendRecord(code, data)
}

// appendRecord appends one pending record; caller holds mu.
func (r *Recorder) appendRecord(code byte, data []byte) {
	us := max(time.Since(r.start).Microseconds(), r.lastUs)
	r.lastUs = us
	r.raw = append(r.raw, code)
	r.raw = binary.LittleEndian.AppendUint64(r.raw, uint64(us))
	r.raw = binary.LittleEndian.AppendUint32(r.raw, uint32(len(data)))
	r.raw = append(r.raw, data...)
	r.wake(len(r.raw) >= flushAt)
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

// flush encodes and writes what is pending.
func (r *Recorder) flush() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	raw, dropped := r.raw, r.dropped
	r.raw, r.spare, r.dropped = r.spare[:0], nil, 0
	nowUs := r.lastUs
	r.mu.Unlock()
	pending := raw
	for len(raw) >= recHead {
		code := raw[0]
		us := int64(binary.LittleEndian.Uint64(raw[1:]))
		n := int(binary.LittleEndian.Uint32(raw[9:]))
		data := raw[recHead : recHead+n]
		raw = raw[recHead+n:]
		r.encode(code, us, data)
	}
	if dropped > 0 {
		r.encode('m'|noBound, nowUs, fmt.Appendf(nil, "termhost: %d bytes of output were not recorded (the disk was too slow)", dropped))
	}
	if len(r.enc) > 0 {
		if _, err := r.f.Write(r.enc); err != nil {
			r.st.log.Warn("recording not written", "path", r.path, "err", err)
		}
		r.written += int64(len(r.enc))
		r.st.grow(int64(len(r.enc)))
		r.enc = r.enc[:0]
	}
	if cap(r.enc) > 4*flushAt {
		r.enc = nil
	}
	if cap(pending) > 4*flushAt {
		pending = nil
	}
	r.mu.Lock()
	r.spare = pending[:0]
	r.mu.Unlock()
}

// encode appends one event to enc, holding an incomplete last character
// of output for the next; past the file's bound only the end's records
// are written, after a note. Caller holds wmu.
func (r *Recorder) encode(code byte, us int64, data []byte) {
	always := code&noBound != 0
	code &^= noBound
	if !always && r.max > 0 && r.written+int64(len(r.enc)) >= r.max {
		if !r.boundHit {
			r.boundHit = true
			why := fmt.Sprintf("this recording reached its size limit of %s", sizeString(r.max))
			r.mu.Lock()
			if r.stopped == "" {
				r.stopped = why
			}
			r.mu.Unlock()
			r.st.log.Warn("recording stopped at its size limit", "path", r.path, "limit", r.max)
			r.encode('#'|noBound, us, []byte("termhost: recording stopped: "+why))
		}
		return
	}
	if code == '#' { // a note: a marker, and a comment a reader of the file sees
		r.line(us, 'm', data)
		r.enc = append(append(append(r.enc, "# "...), data...), '\n')
		return
	}
	if code != 'o' {
		if r.nHeld > 0 && (code == 'x' || code == 'm' && always) {
			r.line(us, 'o', r.held[:r.nHeld]) // the end: nothing more will complete it
			r.nHeld = 0
		}
		r.line(us, code, data)
		return
	}
	// A character cut between chunks is written whole, with the next.
	var head []byte
	if r.nHeld > 0 {
		for len(data) > 0 && r.nHeld < utf8.UTFMax && !utf8.FullRune(r.held[:r.nHeld]) {
			r.held[r.nHeld] = data[0]
			r.nHeld++
			data = data[1:]
		}
		if !utf8.FullRune(r.held[:r.nHeld]) {
			return
		}
		head = r.held[:r.nHeld]
	}
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	if len(head) > 0 || cut > 0 {
		r.open(us, 'o')
		r.enc = appendEscaped(r.enc, head)
		r.enc = appendEscaped(r.enc, data[:cut])
		r.enc = append(r.enc, "\"]\n"...)
	}
	r.nHeld = copy(r.held[:], data[cut:])
}

// line appends one whole event.
func (r *Recorder) line(us int64, code byte, data []byte) {
	r.open(us, code)
	r.enc = appendEscaped(r.enc, data)
	r.enc = append(r.enc, "\"]\n"...)
}

// open starts an event line at time us.
func (r *Recorder) open(us int64, code byte) {
	us = max(us, r.encUs)
	r.enc = append(r.enc, '[')
	r.enc = appendSeconds(r.enc, us-r.encUs)
	r.enc = append(r.enc, ", \""...)
	r.enc = append(r.enc, code)
	r.enc = append(r.enc, "\", \""...)
	r.encUs = us
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
