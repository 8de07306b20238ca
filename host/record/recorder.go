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
	// blockSize: pending records are kept in blocks of up to this size
	// (bufs; a record larger than one gets a block of its own); a block
	// filled wakes the writer at once, so a flood is encoded and written
	// in pieces of about this size, one wake-up per block.
	blockSize = 1 << 20
	// writeAt: the writer writes what it encoded once it holds this much
	// (and what is left at the end of each turn).
	writeAt = 1 << 20
	// maxPending bounds what waits for a slow disk; output beyond it is
	// dropped, and the recording says how much.
	maxPending = 8 << 20
)

// Recorder writes one session's recording (session.Recorder). The
// session's walks only copy what happened, with its time, into blocks of
// pending records under a lock; a goroutine of its own encodes them as
// asciicast and writes them when a block is full or at most FlushEvery
// later, so a walk neither encodes nor waits for the disk.
type Recorder struct {
	st   *Store
	path string
	f    *os.File

	mu      sync.Mutex
	cur     *[]byte   // the block being filled (nil: none)
	full    []*[]byte // blocks filled, for the writer
	pending int       // bytes in cur and full
	next    int       // the size of the next block
	kicked  bool      // the writer was told there is something pending
	start   time.Time // the header's moment
	lastUs  int64     // time of the last record, µs since start
	dropped int64     // output dropped while the disk was slow
	stopped string    // why the recording stopped early ("" : it goes on)
	ending  bool      // End is recording the end: past any bound
	closed  bool

	// The writer's own (wmu).
	wmu      sync.Mutex
	enc      []byte    // encoded, to be written (nil between turns)
	taken    []*[]byte // the blocks of this turn
	encUs    int64     // time of the last event encoded
	held     [utf8.UTFMax]byte
	nHeld    int   // an incomplete character held for the next output
	written  int64 // bytes in the file
	writes   int   // write calls made
	max      int64 // the file's bound (Store.MaxFile; 0 once ending)
	boundHit bool
	header   []byte // the header line, written first

	kick, big chan struct{}
	done      chan struct{}
	loopDone  chan struct{}
}

var (
	_ session.Recorder       = (*Recorder)(nil)
	_ session.StagedRecorder = (*Recorder)(nil)
)

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
	r.header = append(hb, '\n')
	go r.loop()
	r.kicked = true
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
	if !r.taking(code, len(data)) {
		return
	}
	b := r.reserve(len(data))
	*b = append(r.head(*b, code, len(data)), data...)
	r.added(recHead + len(data))
}

// OutputStaged records the output src.ReadStaged(dst, from) appends, at
// most n bytes, copied straight into a pending block
// (session.StagedRecorder).
func (r *Recorder) OutputStaged(src session.StagedSource, from uint64, n int) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.taking('o', n) {
		return
	}
	b := r.reserve(n)
	at := len(*b)
	*b = src.ReadStaged(r.head(*b, 'o', 0), from)
	binary.LittleEndian.PutUint32((*b)[at+9:], uint32(len(*b)-at-recHead))
	r.added(len(*b) - at)
}

// taking says whether a record of n bytes is kept (it counts output
// dropped while too much is pending); caller holds mu.
func (r *Recorder) taking(code byte, n int) bool {
	if r.closed || r.stopped != "" || r.ending {
		return false
	}
	if r.pending > maxPending {
		if code == 'o' {
			r.dropped += int64(n)
		}
		return false
	}
	return true
}

// appendRecord appends one pending record past any bound (the end's, a
// note); caller holds mu.
func (r *Recorder) appendRecord(code byte, data []byte) {
	b := r.reserve(len(data))
	*b = append(r.head(*b, code, len(data)), data...)
	r.added(recHead + len(data))
}

// reserve is the block with room for a record of n bytes: the current
// one, else a new one (the current one, full, goes to the writer, woken
// at once). Caller holds mu.
func (r *Recorder) reserve(n int) *[]byte {
	need := recHead + n
	if r.cur != nil && len(*r.cur)+need <= cap(*r.cur) {
		return r.cur
	}
	if r.cur != nil {
		r.full = append(r.full, r.cur)
		r.cur = nil
		r.wake(true)
	}
	r.cur = bufs.get(max(need, r.next))
	r.next = min(4*cap(*r.cur), blockSize)
	return r.cur
}

// head appends a record's head (its time now) to b; caller holds mu.
func (r *Recorder) head(b []byte, code byte, n int) []byte {
	us := max(time.Since(r.start).Microseconds(), r.lastUs)
	r.lastUs = us
	b = append(b, code)
	b = binary.LittleEndian.AppendUint64(b, uint64(us))
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// added counts a record of n bytes appended and tells an idle writer;
// caller holds mu.
func (r *Recorder) added(n int) {
	r.pending += n
	if !r.kicked {
		r.kicked = true
		r.wake(false)
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

// loop writes what is pending at most FlushEvery after it was recorded,
// and each block as it fills.
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
	wait:
		for {
			select {
			case <-t.C:
				break wait
			case <-r.big:
				r.flushFull()
			case <-r.done:
				t.Stop()
				r.flush()
				return
			}
		}
		r.flush()
	}
}

// flush encodes and writes everything pending.
func (r *Recorder) flush() { r.write(true) }

// flushFull encodes and writes the blocks filled.
func (r *Recorder) flushFull() { r.write(false) }

// write encodes and writes the blocks filled and, with all, the one
// being filled too; what it encodes is written a block at a time (about
// blockSize) and at the end of the turn.
func (r *Recorder) write(all bool) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	r.taken = append(r.taken[:0], r.full...)
	clear(r.full)
	r.full = r.full[:0]
	if all {
		if r.cur != nil {
			r.taken = append(r.taken, r.cur)
			r.cur = nil
		}
		r.next = 0 // the next block after a turn starts small
		r.kicked = false
	}
	r.pending = 0
	if r.cur != nil {
		r.pending = len(*r.cur)
	}
	dropped := r.dropped
	r.dropped = 0
	nowUs := r.lastUs
	r.mu.Unlock()
	n := len(r.header)
	for _, b := range r.taken {
		n += len(*b) + len(*b)/16
	}
	box := bufs.get(min(n, 2*writeAt))
	r.enc = (*box)[:0]
	if r.header != nil {
		r.enc = append(r.enc, r.header...)
		r.header = nil
	}
	for i, b := range r.taken {
		raw := *b
		for len(raw) >= recHead {
			code := raw[0]
			us := int64(binary.LittleEndian.Uint64(raw[1:]))
			n := int(binary.LittleEndian.Uint32(raw[9:]))
			r.encode(code, us, raw[recHead:recHead+n])
			raw = raw[recHead+n:]
			// Written a block at a time, in the middle of one only when it
			// grew much in the encoding (control characters).
			if len(r.enc) >= writeAt && len(raw) < recHead || len(r.enc) >= 3*writeAt/2 {
				r.writeOut()
			}
		}
		bufs.put(b)
		r.taken[i] = nil
	}
	if dropped > 0 {
		r.encode('m'|noBound, nowUs, fmt.Appendf(nil, "termhost: %d bytes of output were not recorded (the disk was too slow)", dropped))
	}
	r.writeOut()
	*box = r.enc
	bufs.put(box)
	r.enc = nil
}

// writeOut writes what is encoded; caller holds wmu.
func (r *Recorder) writeOut() {
	if len(r.enc) == 0 {
		return
	}
	if _, err := r.f.Write(r.enc); err != nil {
		r.st.log.Warn("recording not written", "path", r.path, "err", err)
	}
	r.written += int64(len(r.enc))
	r.writes++
	r.st.grow(int64(len(r.enc)))
	r.enc = r.enc[:0]
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
