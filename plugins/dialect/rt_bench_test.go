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
	"github.com/termhost/termhost/sdk/sdktest"
)

// BenchmarkDialectShellRoundTrip: the calls one BusyBox shell round trip
// makes of the dialect plugin in a Telnet session under load (issue 19):
// the line sent (outbound), its echo, the output and the prompt (inbound,
// in three chunks), for n sessions sharing one instance, in wazero
// unguarded as the embedded plugin runs. Options as a plain
// telnet_connect with "dialect": "detect" gives them.
func BenchmarkDialectShellRoundTrip(b *testing.B) {
	wasm, err := os.ReadFile(cmp.Or(os.Getenv("DIALECT_WASM"), "dialect.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("native", func(b *testing.B) {
		nat := sdktest.Native(newSession)
		nat.Open(1, abi.KindTelnet, []byte(`{"commandPagers":true}`))
		nat.Data(1, abi.Inbound, []byte("\r\r\nDebian GNU/Linux 12\r\n\r# "))
		k := 0
		for b.Loop() {
			w := fmt.Sprintf("t%dx%dx", 1, k)
			k++
			nat.Data(1, abi.Outbound, []byte("echo "+w+"\r\n"))
			nat.Data(1, abi.Inbound, []byte("echo "+w+"\r\n"))
			nat.Data(1, abi.Inbound, []byte(w+"\r\n# "))
		}
	})
	for _, c := range []struct {
		n     int
		evict bool
	}{{1, false}, {25, false}, {25, true}} {
		n, evicted := c.n, c.evict
		name := fmt.Sprintf("sessions=%d", n)
		if c.evict {
			name += "/caches-evicted"
		}
		b.Run(name, func(b *testing.B) {
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
			for s := 1; s <= n; s++ {
				if _, err := in.Open(uint32(s), abi.KindTelnet, []byte(`{"commandPagers":true}`)); err != nil {
					b.Fatal(err)
				}
				in.Data(uint32(s), abi.Inbound, []byte("\r\r\nDebian GNU/Linux 12\r\n\r# "))
			}
			k := 0
			evict := make([]byte, 8<<20)
			var evictCPU int64
			before := cpuNow()
			for b.Loop() {
				s := uint32(k%n + 1)
				w := fmt.Sprintf("t%dx%dx", s, k)
				k++
				for _, c := range []struct {
					dir abi.Dir
					p   string
				}{{abi.Outbound, "echo " + w + "\r\n"}, {abi.Inbound, "echo " + w + "\r\n"}, {abi.Inbound, w + "\r\n# "}} {
					if evicted {
						// Other work between calls (the host, other
						// instances) leaves the instance's memory cold.
						t := cpuNow()
						for i := 0; i < len(evict); i += 64 {
							evict[i]++
						}
						evictCPU += cpuNow() - t
					}
					if _, _, err := in.Data(s, c.dir, []byte(c.p)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(cpuNow()-before-evictCPU)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(in.MemSize())/(1<<20), "MiB-instance")
		})
	}
}

// cpuNow is the process's user and system time so far, in ns: under a
// shared machine's load a benchmark's CPU time says more than its wall time.
func cpuNow() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
