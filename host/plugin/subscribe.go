package plugin

import "fmt"

// ChangeKind says what a Change reports.
type ChangeKind string

const (
	Published ChangeKind = "published" // a version became current
	Rejected  ChangeKind = "rejected"  // a file was not accepted (Err says why)
	Removed   ChangeKind = "removed"   // a plugin file disappeared from Dir
	Retired   ChangeKind = "retired"   // a version stopped being current (it drains)
	Closed    ChangeKind = "closed"    // a version was closed (no sessions left)
)

// Change is a notification from Subscribe.
type Change struct {
	Kind                  ChangeKind
	Name, Version, SHA256 string
	Source                string // "embedded", "dir:<path>", or the rejected file's path
	Err                   error  // why a file was rejected
}

func (c Change) String() string {
	s := fmt.Sprintf("%s %s %s (%s)", c.Kind, c.Name, c.Version, c.Source)
	if c.Err != nil {
		s += ": " + c.Err.Error()
	}
	return s
}

// Subscribe returns a channel of changes (versions published, retired,
// closed; files rejected or removed) and a function that ends the
// subscription. Changes are dropped, never waited for, when the channel's
// buffer is full.
func (r *Registry) Subscribe() (<-chan Change, func()) {
	s := &subscriber{ch: make(chan Change, 256)}
	r.mu.Lock()
	if r.closed.Load() {
		close(s.ch)
	} else {
		r.subs[s] = struct{}{}
	}
	r.mu.Unlock()
	return s.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[s]; ok {
			delete(r.subs, s)
			close(s.ch)
		}
	}
}

func (r *Registry) notify(c Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subs {
		select {
		case s.ch <- c:
		default:
		}
	}
}
