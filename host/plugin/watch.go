package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Reload loads (or, if it no longer exists, unloads) one plugin file now:
// what the watcher does after its debounce. It returns why a file was
// rejected; a rejected file never replaces a working version.
func (r *Registry) Reload(file string) error {
	if !r.ready() {
		return ErrClosed
	}
	file, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	if r.closed.Load() {
		return ErrClosed
	}
	return r.reload(file)
}

// watch runs the Dir watcher: events are debounced per file, then the file
// is reloaded. It ends when the Registry closes.
func (r *Registry) watch() {
	defer r.wg.Done()
	pending := make(map[string]time.Time)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	arm := func() {
		var first time.Time
		for _, t := range pending {
			if first.IsZero() || t.Before(first) {
				first = t
			}
		}
		if !first.IsZero() {
			timer.Reset(max(time.Until(first), 0))
		}
	}
	for {
		select {
		case <-r.done:
			timer.Stop()
			return
		case ev, ok := <-r.watcher.Events:
			if !ok {
				return
			}
			if !isPluginFile(ev.Name) || ev.Op == fsnotify.Chmod {
				continue
			}
			pending[filepath.Clean(ev.Name)] = time.Now().Add(r.cfg.Debounce)
			arm()
		case err, ok := <-r.watcher.Errors:
			if !ok {
				return
			}
			r.log.Warn("plugin directory watcher", "error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: look at every file again.
				for _, f := range r.rescan() {
					pending[f] = time.Now().Add(r.cfg.Debounce)
				}
				arm()
			}
		case <-timer.C:
			now := time.Now()
			var due []string
			for f, t := range pending {
				if !t.After(now) {
					due = append(due, f)
					delete(pending, f)
				}
			}
			sort.Strings(due)
			for _, f := range due {
				if r.closed.Load() {
					return
				}
				_ = r.Reload(f) // logged and notified inside
			}
			arm()
		}
	}
}

// rescan lists the plugin files in Dir and those the registry knows of.
func (r *Registry) rescan() []string {
	set := make(map[string]bool)
	if ents, err := os.ReadDir(r.dir); err == nil {
		for _, e := range ents {
			if p := filepath.Join(r.dir, e.Name()); !e.IsDir() && isPluginFile(p) {
				set[p] = true
			}
		}
	}
	r.mu.Lock()
	for f := range r.files {
		set[f] = true
	}
	r.mu.Unlock()
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	return out
}
