//go:build !wasip1

package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// BenchmarkScreenShellRoundTrip: what one BusyBox shell round trip feeds
// the screen in a Telnet session under load (issue 19): the echo of the
// line, its output and the prompt, as three small chunks, for four
// sessions sharing an instance (the manifest's sessionsPerInstance), in
// wazero unguarded as the embedded plugin runs. Per round trip.
func BenchmarkScreenShellRoundTrip(b *testing.B) {
	wasm, err := os.ReadFile(cmp.Or(os.Getenv("VT_WASM"), "vt.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	m, err := wasmhost.Compile(ctx, wasm, wasmhost.Options{Guard: false})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	in, err := m.Instantiate(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	const n = 4
	for s := uint32(1); s <= n; s++ {
		if _, err := in.Open(s, abi.KindTelnet, nil); err != nil {
			b.Fatal(err)
		}
	}
	k := 0
	before := cpuNow()
	for b.Loop() {
		s := uint32(k%n + 1)
		w := fmt.Sprintf("t%dx%dx", s, k)
		k++
		for _, c := range []string{"echo " + w + "\r\n", w + "\r\n", "/ # "} {
			if _, _, err := in.Data(s, abi.Inbound, []byte(c)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cpuNow()-before)/float64(b.N), "cpu-ns/op")
}

// cpuNow is the process's user and system time so far, in ns: under a
// shared machine's load a benchmark's CPU time says more than its wall time.
func cpuNow() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
