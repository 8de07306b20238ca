package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/internal/watchfile"
)

// ErrUnknown is a credential id that is not in the file (seed 002's
// "Credential not found"). The error Get returns is an *UnknownError that
// matches it.
var ErrUnknown = errors.New("Credential not found")

// UnknownError is a credential id that is not in the file: which one, and
// what the file does hold (or why it did not load).
type UnknownError struct {
	ID     string
	detail string
}

func (e *UnknownError) Error() string { return fmt.Sprintf("%v: %q%s", ErrUnknown, e.ID, e.detail) }

// Is makes errors.Is(err, ErrUnknown) true.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// PermError is a secrets file that others may read: it is refused, as
// ssh refuses such a key.
type PermError struct {
	Path string
	Mode fs.FileMode
}

func (e *PermError) Error() string {
	return fmt.Sprintf("%s is readable by group or others (mode %04o); it holds secrets, so termhost refuses it: run `chmod 600 %s`",
		e.Path, e.Mode.Perm(), e.Path)
}

// Store is the credentials file, loaded and, after Watch, reloaded when
// it changes. A file that fails to load keeps the last good set (the
// reason is logged and kept for Err). Safe for concurrent use.
type Store struct {
	path string
	def  Defaults
	log  *slog.Logger

	mu      sync.RWMutex
	creds   map[string]Credential
	loadErr error // why the newest attempt failed (nil when it loaded)
	loaded  bool  // a set was loaded at least once (possibly empty)
	gen     uint64

	watch watchfile.Owner
}

// NewStore loads path now. A missing file is an empty set (ssh tools say
// where the file is expected); any other failure is returned and also
// kept for Err, and the store stays usable (empty) so a later fix is
// picked up by Watch.
func NewStore(path string, d Defaults, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{path: path, def: d, log: log, creds: map[string]Credential{}}
	return s, s.Reload()
}

// Path is the credentials file.
func (s *Store) Path() string { return s.path }

// Reload reads the file again. On failure the previous set stays.
func (s *Store) Reload() error {
	creds, err := load(s.path, s.def)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.loadErr = err
		return err
	}
	m := make(map[string]Credential, len(creds))
	for _, c := range creds {
		m[c.ID] = c
	}
	s.creds, s.loadErr, s.loaded = m, nil, true
	s.gen++
	return nil
}

// Gen counts the successful loads.
func (s *Store) Gen() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

func load(path string, d Defaults) ([]Credential, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read credentials file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read credentials file: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("credentials file %s is a directory", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, &PermError{Path: path, Mode: fi.Mode()}
	}
	const maxSize = 4 << 20
	if fi.Size() > maxSize {
		return nil, fmt.Errorf("credentials file %s is larger than %d MiB", path, maxSize>>20)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("cannot read credentials file: %w", err)
	}
	defer clear(data)
	creds, err := Parse(data, d)
	if err != nil {
		return nil, fmt.Errorf("credentials file %s: %w", path, err)
	}
	return creds, nil
}

// Watch reloads the file whenever it changes (debounced), logging each
// outcome; Close stops it.
func (s *Store) Watch() error {
	return s.watch.Start(s.path, 150*time.Millisecond, func() {
		if err := s.Reload(); err != nil {
			s.log.Warn("credentials not reloaded; the last good set stays in use", "reason", err.Error())
			return
		}
		s.log.Info("credentials reloaded", "file", s.path, "count", s.Len())
	})
}

// Close stops watching.
func (s *Store) Close() error { return s.watch.Close() }

// Err is why the newest load failed, or nil.
func (s *Store) Err() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loadErr
}

// Len is the number of credentials.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.creds)
}

// List is every credential's public part, sorted by id.
func (s *Store) List() []Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Info, 0, len(s.creds))
	for _, c := range s.creds {
		out = append(out, c.Info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Get is the credential id, or an error wrapping ErrUnknown that lists
// the ids there are (and why the file did not load, if it did not).
func (s *Store) Get(id string) (Credential, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if c, ok := s.creds[id]; ok {
		return c, nil
	}
	ids := make([]string, 0, len(s.creds))
	for k := range s.creds {
		ids = append(ids, k)
	}
	slices.Sort(ids)
	var b strings.Builder
	switch {
	case s.loadErr != nil:
		fmt.Fprintf(&b, " (the credentials file did not load: %v)", s.loadErr)
	case len(ids) == 0:
		fmt.Fprintf(&b, " (no credentials: create %s; see credentials.example.json)", s.path)
	default:
		fmt.Fprintf(&b, " (known: %s)", strings.Join(ids, ", "))
	}
	return Credential{}, &UnknownError{ID: id, detail: b.String()}
}
