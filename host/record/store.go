package record

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termhost/termhost/host/session"
)

// Default bounds of the recordings.
const (
	DefaultMaxFile  = 64 << 20 // one recording
	DefaultMaxTotal = 1 << 30  // the directory
)

// Ext is a recording's file extension.
const Ext = ".cast"

// DefaultDir is where recordings go unless told otherwise:
// $XDG_DATA_HOME/termhost/recordings, else
// ~/.local/share/termhost/recordings.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "termhost", "recordings"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no directory for recordings: %w", err)
	}
	return filepath.Join(home, ".local", "share", "termhost", "recordings"), nil
}

// Store is the directory of recordings: one file per recording, named by
// its start time (UTC) and session id, so names sort oldest first. Its
// size is bounded: past MaxTotal the oldest finished recordings are
// deleted, and if the live ones alone are over it, the oldest live one is
// stopped with a note in it.
type Store struct {
	Dir      string
	MaxFile  int64
	MaxTotal int64
	log      *slog.Logger

	mu    sync.Mutex
	total int64 // bytes of the recordings in Dir
	live  []*Recorder
}

// OpenStore makes (or opens) the directory: created 0700, and made 0700
// if it is termhost's and more open than that; a symbolic link or a file
// is refused. maxFile and maxTotal <= 0 take the defaults.
func OpenStore(dir string, maxFile, maxTotal int64, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if maxFile <= 0 {
		maxFile = DefaultMaxFile
	}
	if maxTotal <= 0 {
		maxTotal = DefaultMaxTotal
	}
	if dir == "" {
		return nil, errors.New("recordings directory: empty path")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recordings directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("recordings directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("recordings directory %s: not a directory", dir)
	}
	// A directory termhost made is 0700. One given that others may write
	// (/tmp) is refused: they could replace or remove recordings.
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("recordings directory %s: other users may write in it (mode %v); give a directory only you can write, e.g. one made with mode 0700", dir, perm)
	} else if perm&0o077 != 0 {
		log.Warn("recordings directory is readable by other users; the recordings themselves are 0600", "dir", dir, "mode", perm.String())
	}
	st := &Store{Dir: dir, MaxFile: maxFile, MaxTotal: maxTotal, log: log}
	for _, f := range st.files() {
		st.total += f.size
	}
	return st, nil
}

type castFile struct {
	name string
	size int64
}

// files are the recordings in the directory, oldest first.
func (st *Store) files() []castFile {
	ents, err := os.ReadDir(st.Dir)
	if err != nil {
		return nil
	}
	var out []castFile
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), Ext) {
			continue
		}
		if fi, err := e.Info(); err == nil {
			out = append(out, castFile{e.Name(), fi.Size()})
		}
	}
	slices.SortFunc(out, func(a, b castFile) int { return strings.Compare(a.name, b.name) })
	return out
}

// New starts a recording of a session (a session.RecordFunc).
func (st *Store) New(info session.RecordInfo) (session.Recorder, error) {
	st.mu.Lock()
	over := st.total > st.MaxTotal
	st.mu.Unlock()
	if over {
		st.rotate()
	}
	stamp := time.Now().UTC().Format("20060102T150405.000Z")
	var f *os.File
	var path string
	var err error
	for n := 0; n < 100; n++ {
		name := stamp + "-" + info.ID
		if n > 0 {
			name += fmt.Sprintf("-%d", n)
		}
		path = filepath.Join(st.Dir, name+Ext)
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("recording file: %w", err)
	}
	r := newRecorder(st, path, f, info)
	st.mu.Lock()
	st.live = append(st.live, r)
	st.mu.Unlock()
	return r, nil
}

// grow counts bytes written; past the total bound the directory is
// rotated.
func (st *Store) grow(n int64) {
	st.mu.Lock()
	st.total += n
	over := st.total > st.MaxTotal
	st.mu.Unlock()
	if over {
		st.rotate()
	}
}

// finished forgets a closed recorder.
func (st *Store) finished(r *Recorder) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.live = slices.DeleteFunc(st.live, func(x *Recorder) bool { return x == r })
}

// rotate brings the directory under nine tenths of MaxTotal: the oldest
// finished recordings are deleted; if the live ones alone are over, the
// oldest live one that still records is stopped, with a note in it.
func (st *Store) rotate() {
	st.mu.Lock()
	defer st.mu.Unlock()
	live := map[string]*Recorder{}
	for _, r := range st.live {
		live[filepath.Base(r.path)] = r
	}
	files := st.files()
	st.total = 0
	for _, f := range files {
		st.total += f.size
	}
	goal := st.MaxTotal / 10 * 9
	for _, f := range files {
		if st.total <= goal {
			return
		}
		if live[f.name] != nil {
			continue
		}
		if err := os.Remove(filepath.Join(st.Dir, f.name)); err != nil {
			st.log.Warn("old recording not deleted", "file", f.name, "err", err)
			continue
		}
		st.total -= f.size
		st.log.Info("old recording deleted: the recordings directory is over its limit", "file", f.name, "limit", st.MaxTotal)
	}
	if st.total <= st.MaxTotal {
		return
	}
	for _, r := range st.live {
		r.mu.Lock()
		recording := r.stopped == "" && !r.closed
		r.mu.Unlock()
		if recording {
			st.log.Warn("recording stopped: the recordings directory is over its limit", "path", r.path, "limit", st.MaxTotal)
			go r.stop(fmt.Sprintf("the recordings directory reached its limit of %s", sizeString(st.MaxTotal)))
			return
		}
	}
}

// Lazy is a Store opened at its first recording, so a server that records
// nothing makes no directory.
type Lazy struct {
	Dir               string // "" : DefaultDir
	MaxFile, MaxTotal int64
	Log               *slog.Logger

	mu sync.Mutex
	st *Store
}

// Store opens the store (once it opened, the same one).
func (l *Lazy) Store() (*Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		return l.st, nil
	}
	dir := l.Dir
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	st, err := OpenStore(dir, l.MaxFile, l.MaxTotal, l.Log)
	if err != nil {
		return nil, err
	}
	l.st = st
	return st, nil
}

// New starts a recording (a session.RecordFunc).
func (l *Lazy) New(info session.RecordInfo) (session.Recorder, error) {
	st, err := l.Store()
	if err != nil {
		return nil, err
	}
	return st.New(info)
}
