// Package warm holds back start-up work that the first answers to a
// client do not need (compiling plugins, probing what the machine allows)
// until the client has had them, so that on a small machine the two do
// not share its cores: a Gate opens when told to — after tools/list, or
// when a call needs what it holds back — or after a delay at the latest.
package warm

import (
	"sync"
	"time"
)

// Gate is closed until Open or its delay. A nil *Gate is open.
type Gate struct {
	once  sync.Once
	ch    chan struct{}
	mu    sync.Mutex
	timer *time.Timer
}

// NewGate returns a gate that opens by itself after delay.
func NewGate(delay time.Duration) *Gate {
	g := &Gate{ch: make(chan struct{})}
	t := time.AfterFunc(delay, g.open)
	g.mu.Lock()
	g.timer = t
	g.mu.Unlock()
	return g
}

// Open opens the gate (again is a no-op).
func (g *Gate) Open() {
	if g == nil {
		return
	}
	g.open()
	g.mu.Lock()
	if g.timer != nil {
		g.timer.Stop()
	}
	g.mu.Unlock()
}

func (g *Gate) open() { g.once.Do(func() { close(g.ch) }) }

// Done is closed once the gate is open.
func (g *Gate) Done() <-chan struct{} {
	if g == nil {
		return open
	}
	return g.ch
}

var open = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
