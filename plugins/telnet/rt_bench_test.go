package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// BenchmarkTelnetShellRoundTrip: the calls one BusyBox shell round trip
// makes of the telnet plugin under load (issue 19): the line sent
// (outbound), its echo, the output and the prompt (inbound), in wazero
// guarded and unguarded. Per round trip.
func BenchmarkTelnetShellRoundTrip(b *testing.B) {
	wasm, err := os.ReadFile("telnet.wasm")
	if err != nil {
		b.Fatal(err)
	}
	for _, guard := range []bool{true, false} {
		b.Run(fmt.Sprintf("guard=%v", guard), func(b *testing.B) {
			ctx := context.Background()
			m, err := wasmhost.Compile(ctx, wasm, wasmhost.Options{Guard: guard})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			in, err := m.Instantiate(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer in.Close()
			const n = 25
			for s := uint32(1); s <= n; s++ {
				if _, err := in.Open(s, abi.KindTelnet, nil); err != nil {
					b.Fatal(err)
				}
				in.Data(s, abi.Inbound, []byte("\xff\xfd\x01\xff\xfd\x1f\xff\xfb\x01\xff\xfb\x03"))
			}
			k := 0
			for b.Loop() {
				s := uint32(k%n + 1)
				w := fmt.Sprintf("t%dx%dx", s, k)
				k++
				for _, c := range []struct {
					dir abi.Dir
					p   string
				}{{abi.Outbound, "echo " + w + "\r\n"}, {abi.Inbound, "echo " + w + "\r\n"}, {abi.Inbound, w + "\r\n"}, {abi.Inbound, "/ # "}} {
					if _, _, err := in.Data(s, c.dir, []byte(c.p)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
