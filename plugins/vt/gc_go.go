//go:build !tinygo

package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The vt plugin built by go build (the native tests; TinyGo builds the
// shipped one, see gc_tinygo.go).

func init() {
	// A wasm instance's memory only grows: collect sooner than Go's default
	// (heap at most 1.5x what is live), so an instance holding many
	// scrollbacks stays well inside its cap.
	debug.SetGCPercent(50)
}

// The collector under wasip1 cannot be left to itself: an exported call
// never blocks and nothing preempts it, so the background mark worker
// runs only when a call yields, and then only its fractional share. A
// cycle started during a call stalls and the heap grows with everything
// allocated meanwhile: an 80x24 screen fed truecolour lines grew its
// instance by 86 MiB per 7.7 MB of input once a cycle stalled, a
// 256x128 one fed combining marks reached 270 MiB. So at the end of each
// call, if the heap has grown half again over what the last collection
// left live (and past heapFloor), the call finishes a collection itself
// (runtime.GC, which runs the mark workers to the end); else it yields,
// so a cycle in progress moves on. Reading the heap costs about 2 µs in
// wasm and a yield 1 µs more: three quarters of a shell prompt's whole
// call (issue 19). So small calls check only once their input adds up to
// checkEvery (a call counts callWeight bytes at least): what a stalled
// cycle keeps meanwhile is what that much input allocates. A chunk of
// checkEvery or more, and every control request (a scrollback page, a
// reflow), checks at once.
const (
	heapFloor  = 8 << 20
	checkEvery = 16 << 10
	callWeight = 512
)

var (
	heapSample  = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heapAfterGC uint64
	unchecked   int // input since the heap was last checked, in bytes
)

// endChunk ends a chunk's call, which took n bytes of input.
func endChunk(n int) { yield(n) }

// endControl ends a control request's call: it checks at once.
func endControl() { yield(checkEvery) }

// yield ends a call that took n bytes of input.
func yield(n int) {
	unchecked += max(n, callWeight)
	if unchecked < checkEvery {
		return
	}
	unchecked = 0
	metrics.Read(heapSample)
	if h := heapSample[0].Value.Uint64(); h < max(heapFloor, heapAfterGC+heapAfterGC/2) {
		runtime.Gosched()
		return
	}
	runtime.GC()
	metrics.Read(heapSample)
	heapAfterGC = heapSample[0].Value.Uint64()
}
