// Package watchfile calls a function when one file changes: the
// directory is watched (editors replace files by rename, and a file that
// does not exist yet can appear), events naming the file are debounced,
// and the function runs once the writes settle.
package watchfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher watches one file until Close.
type Watcher struct {
	w    *fsnotify.Watcher
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// Watch starts watching path; changed runs (on the watcher's goroutine,
// never twice at once) after the file was created, written, renamed or
// removed and then left alone for debounce. A directory that does not
// exist is an error.
func Watch(path string, debounce time.Duration, changed func()) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("cannot watch %s: its directory %s does not exist", path, dir)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("cannot watch %s: %w", dir, err)
	}
	w := &Watcher{w: fw, done: make(chan struct{})}
	w.wg.Add(1)
	go w.loop(abs, debounce, changed)
	return w, nil
}

func (w *Watcher) loop(path string, debounce time.Duration, changed func()) {
	defer w.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-w.done:
			t.Stop()
			return
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) != path {
				continue
			}
			t.Reset(debounce)
		case _, ok := <-w.w.Errors:
			if !ok {
				return
			}
			// An overflow may have lost an event: look again.
			t.Reset(debounce)
		case <-t.C:
			changed()
		}
	}
}

// Close stops watching and waits for a running callback to return.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		err = w.w.Close()
		w.wg.Wait()
	})
	return err
}

// Owner holds the watcher of a store that reloads itself: Start begins
// watching (again), Close stops it. Safe for concurrent use; the zero
// value is ready.
type Owner struct {
	mu sync.Mutex
	w  *Watcher
}

// Start watches path as Watch does, replacing any watcher it held.
func (o *Owner) Start(path string, debounce time.Duration, changed func()) error {
	w, err := Watch(path, debounce, changed)
	if err != nil {
		return err
	}
	o.mu.Lock()
	old := o.w
	o.w = w
	o.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Close stops watching.
func (o *Owner) Close() error {
	o.mu.Lock()
	w := o.w
	o.w = nil
	o.mu.Unlock()
	if w != nil {
		return w.Close()
	}
	return nil
}
