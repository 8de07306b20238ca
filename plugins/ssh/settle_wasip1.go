//go:build wasip1

package main

import (
	"runtime"
	"runtime/metrics"
)

// directEmit: goroutines run only while an export runs, so they emit at
// once (no copy).
const directEmit = true

var runnable = []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}

// maxYields bounds one settle: x/crypto's goroutines hand a packet along a
// few channels, so a chunk needs a handful of rounds; a goroutine that
// never blocks would otherwise keep the call until its deadline.
const maxYields = 1 << 16

// settle lets every goroutine run until all of them wait (for bytes from
// the peer, a host call's answer that already came, or a channel): in a
// wasip1 reactor goroutines only run while an export does, so every
// export ends here.
func settle(*pipeConn) {
	for range maxYields {
		metrics.Read(runnable)
		if runnable[0].Value.Uint64() == 0 {
			return
		}
		runtime.Gosched()
	}
}
