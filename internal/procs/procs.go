// Package procs sets how many processors Go's scheduler runs goroutines
// on (GOMAXPROCS) by the load: one while the process's work fits in one
// core, all of them when it does not.
//
// With more than one processor, every goroutine made ready while another
// processor is idle wakes a sleeping thread to look for it; a server whose
// work is a chain of short hand-offs (stdin to a worker, a socket's pump to
// a waiting read, an answer to the writer) pays for those wake-ups, and on
// two cores they were a twentieth to a sixth of termhost's CPU per round trip under
// the concurrent load of issue 19 (docs/RATIONALE.md, "One processor until
// the load needs two"). With one processor the same hand-offs are
// goroutine switches on one thread. When the work needs more than one core
// (screens fed by programs that flood, many sessions busy at once), the
// governor gives the scheduler every processor back within a tick, and
// takes them away again only after the load has stayed under one core
// for a while.
package procs

import (
	"context"
	"runtime"
	"syscall"
	"time"
)

// Governor watches the process's CPU time and sets GOMAXPROCS.
type Governor struct {
	// Max is the processors under load; default runtime.GOMAXPROCS(0) at
	// Run (what Go chose: the CPUs, or the container's limit).
	Max int
	// Tick is how often the load is read; default 100 ms. An idle process
	// (under a twentieth of a core at one processor) reads it ten times
	// less often, so an idle server wakes once a second for it.
	Tick time.Duration
	// Up: at one processor, the CPU (in cores) over one tick at or above
	// which every processor is given back; default 0.8.
	Up float64
	// Down: at Max processors, the CPU (in cores) that the load must stay
	// under, on average over Hold, to go back to one; default 0.7. The
	// same load reads about a fifth less on one processor (0.58), well
	// under Up: a load between the two stays where it is, so a steady
	// load does not flap, and the band is narrow enough that a burst
	// (sessions opening, plugins compiling) does not leave a load that
	// fits in one core on two.
	Down float64
	// Hold is how long the load must stay under Down; default 1 s. Each
	// time the load needs every processor again soon after it went back
	// to one, Hold doubles (up to a minute), so a load at the edge does
	// not flap.
	Hold time.Duration
	// Changed, if set, is told of every change: the processors now and
	// the CPU (in cores) that moved the governor.
	Changed func(procs int, cores float64)
	// Held, if set, is how long threads have held a processor in system
	// calls that may sleep without the scheduler's knowledge
	// (rawio.Slept), since the process started. It is added to the CPU
	// time the governor reads: while such a call sleeps, the processor
	// is busy for every other goroutine though no CPU is used. (The
	// calls' own CPU time is then counted twice: a load of such calls
	// reads a little higher than it is.)
	Held func() time.Duration

	procs int                  // as last set
	cpu   func() time.Duration // the process's CPU so far; cpuTime, or a test's
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Run governs until ctx ends, then gives the scheduler Max processors
// back. It does nothing where there is only one.
func (g *Governor) Run(ctx context.Context) {
	if g.Max <= 0 {
		g.Max = runtime.GOMAXPROCS(0)
	}
	if g.Max <= 1 {
		return
	}
	if g.Tick <= 0 {
		g.Tick = 100 * time.Millisecond
	}
	if g.Up <= 0 {
		g.Up = 0.8
	}
	if g.Down <= 0 {
		g.Down = 0.7
	}
	if g.Hold <= 0 {
		g.Hold = time.Second
	}
	if g.cpu == nil {
		g.cpu = cpuTime
	}
	load := g.cpu // the CPU time, plus the time held asleep
	if g.Held != nil {
		load = func() time.Duration { return g.cpu() + g.Held() }
	}
	hold := g.Hold
	g.set(1, 0)
	defer g.set(g.Max, 0)

	t := time.NewTimer(g.Tick)
	defer t.Stop()
	lastWall, lastCPU := time.Now(), load()
	var under time.Duration    // how long the load has stayed under Down, at Max
	var underCPU time.Duration // the CPU spent in that time
	var wentDown time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, cpu := time.Now(), load()
		wall, used := now.Sub(lastWall), cpu-lastCPU
		lastWall, lastCPU = now, cpu
		cores := 0.0
		if wall > 0 {
			cores = float64(used) / float64(wall)
		}
		if g.procs == 1 && cores < 0.05 {
			t.Reset(10 * g.Tick)
		} else {
			t.Reset(g.Tick)
		}
		switch {
		case g.procs == 1 && cores >= g.Up:
			if !wentDown.IsZero() && now.Sub(wentDown) < 4*hold {
				hold = min(2*hold, time.Minute)
			} else {
				hold = g.Hold
			}
			g.set(g.Max, cores)
			under, underCPU = 0, 0
		case g.procs > 1:
			if cores >= g.Down*2 {
				under, underCPU = 0, 0 // clearly busy: start over
				break
			}
			under += wall
			underCPU += used
			if under >= hold {
				if avg := float64(underCPU) / float64(under); avg < g.Down {
					g.set(1, avg)
					wentDown = now
				}
				under, underCPU = 0, 0
			}
		}
	}
}

func (g *Governor) set(n int, cores float64) {
	if g.procs == n {
		return
	}
	runtime.GOMAXPROCS(n)
	g.procs = n
	if g.Changed != nil {
		g.Changed(n, cores)
	}
}
