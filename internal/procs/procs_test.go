package procs

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitProcs waits until GOMAXPROCS is n, at most d.
func waitProcs(t *testing.T, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for runtime.GOMAXPROCS(0) != n {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS is %d after %v, want %d", runtime.GOMAXPROCS(0), d, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run runs g until the test ends, and waits for it to have given the
// processors back before the next test starts its own.
func run(t *testing.T, g *Governor) {
	before := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		runtime.GOMAXPROCS(before)
	})
}

// spin keeps n goroutines busy until stop is closed.
func spin(n int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	var sink atomic.Uint64
	for range n {
		wg.Go(func() {
			x := uint64(1)
			for {
				select {
				case <-stop:
					sink.Add(x)
					return
				default:
				}
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
		})
	}
	return &wg
}

// TestGovernorFollowsTheLoad: an idle process runs on one processor; a
// load of more than a core gets every processor within a few ticks, and
// once it stops the process goes back to one after Hold.
func TestGovernorFollowsTheLoad(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	var changes []int
	var mu sync.Mutex
	g := &Governor{Max: 2, Tick: 20 * time.Millisecond, Hold: 200 * time.Millisecond,
		Changed: func(n int, _ float64) { mu.Lock(); changes = append(changes, n); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()

	waitProcs(t, 1, 2*time.Second)
	stop := make(chan struct{})
	wg := spin(2, stop)
	waitProcs(t, 2, 10*time.Second)
	close(stop)
	wg.Wait()
	waitProcs(t, 1, 10*time.Second)

	cancel()
	<-done
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("after Run ended GOMAXPROCS is %d, want Max (2) back", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) < 3 || changes[0] != 1 || changes[1] != 2 || changes[2] != 1 {
		t.Errorf("changes %v, want 1, 2, 1 first", changes)
	}
}

// TestGovernorStaysUpUnderLoad: a load that keeps a core busy keeps every
// processor, however long it lasts.
func TestGovernorStaysUpUnderLoad(t *testing.T) {
	up := make(chan struct{})
	var once sync.Once
	// Down low: on a machine shared with other tests two busy goroutines
	// may get less than the default's 0.7 of a core, but not 0.2.
	g := &Governor{Max: 2, Tick: 20 * time.Millisecond, Hold: 100 * time.Millisecond, Down: 0.2,
		Changed: func(n int, _ float64) {
			if n == 2 {
				once.Do(func() { close(up) })
			}
		}}
	stop := make(chan struct{})
	wg := spin(2, stop)
	defer func() { close(stop); wg.Wait() }()
	run(t, g)
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		t.Fatal("no change to 2 processors within 10 s under a load of two busy goroutines")
	}
	for range 50 { // ten holds
		time.Sleep(20 * time.Millisecond)
		if n := runtime.GOMAXPROCS(0); n != 2 {
			t.Fatalf("GOMAXPROCS fell to %d under a load of two busy goroutines", n)
		}
	}
}

// TestGovernorOneProcessor: with Max 1 there is nothing to govern; Run
// returns at once and leaves GOMAXPROCS alone.
func TestGovernorOneProcessor(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	done := make(chan struct{})
	go func() { (&Governor{Max: 1}).Run(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run with Max 1 did not return")
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d, want %d untouched", got, before)
	}
}

// TestGovernorHoldDoubles: a load that needs every processor again soon
// after the governor went back to one makes it wait twice as long before
// going back the next time.
func TestGovernorHoldDoubles(t *testing.T) {
	const hold = 150 * time.Millisecond
	// Down low, so that every tick of the busy goroutines (at least 0.4
	// of a core however loaded the machine) starts the hold over: it then
	// runs from the end of the load.
	run(t, &Governor{Max: 2, Tick: 10 * time.Millisecond, Hold: hold, Down: 0.2})
	burst := func() time.Duration { // a load until every processor is back, then how long until one
		stop := make(chan struct{})
		wg := spin(2, stop)
		waitProcs(t, 2, 10*time.Second)
		close(stop)
		wg.Wait()
		start := time.Now()
		waitProcs(t, 1, 20*time.Second)
		return time.Since(start)
	}
	waitProcs(t, 1, 2*time.Second)
	first := burst()
	second := burst() // within four holds of going down
	if first < hold {
		t.Errorf("went back to one processor %v after the load, before the hold of %v", first, hold)
	}
	if second < 2*hold {
		t.Errorf("after a quick return of the load, went back to one in %v, want at least twice the hold (%v)", second, 2*hold)
	}
}
