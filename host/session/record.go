package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/termhost/termhost/host/link"
)

// A Recorder takes a recorded session's traffic as it happens
// (host/record writes it as asciicast v3). The session calls it in the
// order things happened, from its walks (holding the chain), and never
// with a secret: output is what the buffer got (after masking), input is
// what was sent with every secret the host typed masked. Its methods must
// not block on the disk.
type Recorder interface {
	// Output is what the buffer got; p is valid only during the call.
	Output(p []byte)
	// Input is what was sent; p is valid only during the call.
	Input(p []byte)
	// Resize: the session's screen size changed.
	Resize(cols, rows int)
	// Event is an event the session recorded (masked), placed after the
	// output before its offset.
	Event(e *Event)
	// End closes the recording of a session that ended: why, and the
	// exit status when the link reports one.
	End(reason string, exit *link.ExitStatus)
	// Close closes the recording of a session that goes on (record_stop).
	Close() error
	// Path is the recording's file.
	Path() string
}

// A StagedRecorder is a Recorder that takes a walk's output straight
// from the session's buffer, with no copy in between: OutputStaged is
// Output of what src.ReadStaged(dst, from) appends to dst (at most n
// bytes), called from the walk as Output is.
type StagedRecorder interface {
	Recorder
	OutputStaged(src StagedSource, from uint64, n int)
}

// StagedSource is the session's buffer as a StagedRecorder reads it.
type StagedSource interface {
	ReadStaged(dst []byte, from uint64) []byte
}

// RecordInfo is what a new recording is told about its session.
type RecordInfo struct {
	ID         string
	Name       string
	Kind       Kind
	Peer       Peer
	Cols, Rows int
}

// RecordFunc starts a recording (Config.Record; host/record.Store.New).
type RecordFunc func(RecordInfo) (Recorder, error)

// ErrNoRecording: recording is not configured, or the session records
// nothing.
var ErrNoRecording = errors.New("not recording")

// recBox holds a session's recorder for an atomic pointer.
type recBox struct{ r Recorder }

// recorder is the session's recorder, nil when none.
func (s *Session) recorder() Recorder {
	if b := s.rec.Load(); b != nil {
		return b.r
	}
	return nil
}

// StartRecording records the session from now on (record_start) and
// returns the recording's path; a session already recorded keeps its
// recording.
func (s *Session) StartRecording(ctx context.Context) (string, error) {
	if s.cfg.Record == nil {
		return "", fmt.Errorf("%w: recording is not available on this server", ErrUnsupported)
	}
	if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
		return "", err
	}
	defer s.unlockChain()
	if !s.Alive() {
		return "", s.disconnectedErr()
	}
	if r := s.recorder(); r != nil {
		return r.Path(), nil
	}
	path, err := s.startRecordingLocked()
	if err == nil {
		s.recordScreen()
	}
	return path, err
}

// recordScreen starts a recording begun mid-session with the screen as
// it is (drawn from the top left with its colours, the cursor put back),
// so a replay shows what the session showed. Caller holds the chain.
func (s *Session) recordScreen() {
	r := s.recorder()
	if r == nil || s.screen == nil {
		return
	}
	s.screenUp()
	reply, err := s.ask(s.screen, []byte(`{"op":"screen","format":"ansi"}`))
	if err != nil {
		return
	}
	var scr struct {
		Lines  []string `json:"lines"`
		Cursor struct{ Row, Col int }
		Alt    bool `json:"altScreen"`
	}
	if json.Unmarshal(reply, &scr) != nil {
		return
	}
	var b []byte
	if scr.Alt {
		b = append(b, "\x1b[?1049h"...)
	}
	b = append(b, "\x1b[H\x1b[2J"...)
	for i, l := range scr.Lines {
		if i > 0 {
			b = append(b, "\r\n"...)
		}
		b = append(b, l...)
		b = append(b, "\x1b[0m"...)
	}
	b = fmt.Appendf(b, "\x1b[%d;%dH", scr.Cursor.Row+1, scr.Cursor.Col+1)
	r.Output(b)
}

// startRecordingLocked starts a recorder; the caller holds the chain (or
// the session has not started).
func (s *Session) startRecordingLocked() (string, error) {
	cols, rows := s.Size()
	r, err := s.cfg.Record(RecordInfo{ID: s.ID, Name: s.Name, Kind: s.Kind, Peer: s.Peer, Cols: cols, Rows: rows})
	if err != nil {
		return "", fmt.Errorf("start the recording: %w", err)
	}
	s.rec.Store(&recBox{r})
	s.mu.Lock()
	s.recPath = r.Path()
	s.mu.Unlock()
	return r.Path(), nil
}

// StopRecording ends the session's recording (record_stop) and returns
// its path.
func (s *Session) StopRecording(ctx context.Context) (string, error) {
	if err := s.lockChain(ctx, s.cfg.WriteTimeout); err != nil {
		return "", err
	}
	b := s.rec.Swap(nil)
	s.unlockChain()
	if b == nil {
		return "", fmt.Errorf("%w: the session is not being recorded", ErrNoRecording)
	}
	return b.r.Path(), b.r.Close()
}

// Recording is the path of the session's recording: the current one, or
// the last one it had ("" if never recorded).
func (s *Session) Recording() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recPath
}

// recordCommit gives the recorder what a walk staged and the events it
// recorded, each event after the output before its offset. Caller holds
// the chain; the bytes are still staged.
func (s *Session) recordCommit(r Recorder, events []Event) {
	head, end := s.buf.Head(), s.buf.End()
	if sr, ok := r.(StagedRecorder); ok && len(events) == 0 {
		if end > head {
			sr.OutputStaged(s.buf, head, int(end-head))
		}
		return
	}
	if cap(s.recScratch) > screenScratch {
		s.recScratch = nil
	}
	var data []byte
	if end > head {
		s.recScratch = s.buf.ReadStaged(s.recScratch[:0], head)
		data = s.recScratch
	}
	base := end - uint64(len(data)) // the walk may have staged more than the ring holds
	pos := base
	for i := range events {
		if off := events[i].Offset; off > pos && off <= end {
			r.Output(data[pos-base : off-base])
			pos = off
		}
		r.Event(&events[i])
	}
	if end > pos {
		r.Output(data[pos-base:])
	}
}

// recordInput gives the recorder what is sent: shown when the caller says
// what the recording shows instead (a secret), else p with every secret
// of the set masked. Caller holds the chain.
func (s *Session) recordInput(r Recorder, p, shown []byte) {
	if shown != nil {
		r.Input(shown)
		return
	}
	if snap := s.cfg.Secrets.load(); snap != nil {
		q := append([]byte(nil), p...)
		for _, sec := range snap.list {
			maskAll(q, sec)
		}
		r.Input(q)
		return
	}
	r.Input(p)
}

// endRecording closes the recording of an ended session, with the exit
// status when the link reports one (collected just after the end).
func (s *Session) endRecording() {
	b := s.rec.Swap(nil)
	if b == nil {
		return
	}
	reason := ""
	if err := s.disconnectedErr(); err != nil {
		reason = err.Error()
	}
	if _, ok := s.link.(link.Exiter); !ok {
		b.r.End(reason, nil)
		return
	}
	go func() {
		st, ok := s.AwaitExit(context.Background(), 5*time.Second)
		if !ok {
			b.r.End(reason, nil)
			return
		}
		b.r.End(reason, &st)
	}()
}
