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

// fakeLoad is a process's CPU time as a load of so many cores would
// spend it, for the tests of the policy: how much CPU two busy goroutines
// get depends on what else the machine runs (CI runs test packages side
// by side), and the policy's tests must not.
type fakeLoad struct {
	mu    sync.Mutex
	cores float64
	last  time.Time
	spent time.Duration
}

func newFakeLoad() *fakeLoad { return &fakeLoad{last: time.Now()} }

func (f *fakeLoad) cpu() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.spent += time.Duration(f.cores * float64(now.Sub(f.last)))
	f.last = now
	return f.spent
}

// set changes the load from now on.
func (f *fakeLoad) set(cores float64) {
	f.cpu()
	f.mu.Lock()
	f.cores = cores
	f.mu.Unlock()
}

// TestGovernorFollowsTheLoad: an idle process runs on one processor; a
// load gets every processor within a few ticks, and once it stops the
// process goes back to one after Hold. The process's own CPU time, from
// busy goroutines: Up and Down are low, since on a machine shared with
// other tests two busy goroutines on one processor may get well under
// the default's 0.8 of a core, but not under 0.3.
func TestGovernorFollowsTheLoad(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	var changes []int
	var mu sync.Mutex
	g := &Governor{Max: 2, Tick: 20 * time.Millisecond, Hold: 200 * time.Millisecond, Up: 0.3, Down: 0.2,
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
// processor, however long it lasts; one between Down and Up stays where
// it is.
func TestGovernorStaysUpUnderLoad(t *testing.T) {
	load := newFakeLoad()
	g := &Governor{Max: 2, Tick: 20 * time.Millisecond, Hold: 100 * time.Millisecond, cpu: load.cpu}
	run(t, g)
	waitProcs(t, 1, 2*time.Second)
	load.set(1.5)
	waitProcs(t, 2, 10*time.Second)
	for _, cores := range []float64{1.5, 0.75} { // busy, then in the band
		load.set(cores)
		for range 50 { // ten holds
			time.Sleep(20 * time.Millisecond)
			if n := runtime.GOMAXPROCS(0); n != 2 {
				t.Fatalf("GOMAXPROCS fell to %d under a load of %.2f cores", n, cores)
			}
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
	const hold, tick = 150 * time.Millisecond, 10 * time.Millisecond
	load := newFakeLoad()
	run(t, &Governor{Max: 2, Tick: tick, Hold: hold, cpu: load.cpu})
	burst := func() time.Duration { // a load until every processor is back, then how long until one
		load.set(1.5)
		waitProcs(t, 2, 10*time.Second)
		time.Sleep(3 * tick) // busy ticks at two processors: the hold starts when the load ends
		load.set(0)
		start := time.Now()
		waitProcs(t, 1, 20*time.Second)
		return time.Since(start)
	}
	waitProcs(t, 1, 2*time.Second)
	first := burst()
	second := burst() // within four holds of going down
	// The tick in which the load ended may count as quiet, if it came
	// late enough to see little of it: allow one tick.
	if first < hold-tick {
		t.Errorf("went back to one processor %v after the load, before the hold of %v (less a tick)", first, hold)
	}
	if second < 2*hold-tick {
		t.Errorf("after a quick return of the load, went back to one in %v, want at least twice the hold (%v, less a tick)", second, 2*hold)
	}
}

// TestGovernorCountsHeldTime: time threads held the processor asleep in
// system calls the scheduler was not told of (Held) counts as load: half a
// core of CPU alone stays on one processor, the same with 0.4 of a core
// held gets every processor.
func TestGovernorCountsHeldTime(t *testing.T) {
	load, held := newFakeLoad(), newFakeLoad()
	run(t, &Governor{Max: 2, Tick: 20 * time.Millisecond, Hold: 100 * time.Millisecond, cpu: load.cpu, Held: held.cpu})
	waitProcs(t, 1, 2*time.Second)
	load.set(0.5)
	for range 15 {
		time.Sleep(20 * time.Millisecond)
		if n := runtime.GOMAXPROCS(0); n != 1 {
			t.Fatalf("GOMAXPROCS went to %d under half a core with nothing held", n)
		}
	}
	held.set(0.4)
	waitProcs(t, 2, 10*time.Second)
}
