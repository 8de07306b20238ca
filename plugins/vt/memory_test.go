package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// fillPayload is what BenchmarkPTYSessionMemory makes bash print: 10,000
// lines of 80 digits, through a PTY (so CRLF), plus a little more so the
// scrollback is full.
func fillPayload() []byte {
	var b []byte
	for i := 1; i <= 10100; i++ {
		b = fmt.Appendf(b, "%080d\r\n", i)
	}
	return b
}

// BenchmarkInstanceMemory: the linear memory of one vt instance (what the
// host holds for it) empty, with one session, and with 16 sessions (what
// the manifest's sessionsPerInstance allowed before issue 16), each with
// 10,000 lines of 80 columns in its scrollback, fed in 32 KiB chunks, and
// after resizing each of them.
// VT_WASM names another build to
// measure (default: the committed vt.wasm).
func BenchmarkInstanceMemory(b *testing.B) {
	path := os.Getenv("VT_WASM")
	if path == "" {
		path = "vt.wasm"
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	p := fillPayload()
	ctx := context.Background()
	m, err := wasmhost.Compile(ctx, wasm, wasmhost.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	const mib = 1 << 20
	for b.Loop() {
		in, err := m.Instantiate(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		empty := in.MemSize()
		var one uint32
		for sid := uint32(1); sid <= 16; sid++ {
			if _, err := in.Open(sid, abi.KindPTY, []byte(`{"cols":80,"rows":24}`)); err != nil {
				b.Fatal(err)
			}
			for off := 0; off < len(p); off += 32 << 10 {
				if _, _, err := in.Data(sid, abi.Inbound, p[off:min(off+32<<10, len(p))]); err != nil {
					b.Fatal(err)
				}
			}
			if sid == 1 {
				one = in.MemSize()
			}
		}
		all := in.MemSize()
		// A resize reflows every line of a session's scrollback.
		for sid := uint32(1); sid <= 16; sid++ {
			if _, err := in.Control(sid, []byte(`{"op":"resize","cols":100,"rows":30}`)); err != nil {
				b.Fatal(err)
			}
		}
		resized := in.MemSize()
		b.ReportMetric(float64(empty)/mib, "MiB-empty")
		b.ReportMetric(float64(one)/mib, "MiB-1-session")
		b.ReportMetric(float64(all)/mib, "MiB-16-sessions")
		b.ReportMetric(float64(all-empty)/16/mib, "MiB/session")
		b.ReportMetric(float64(resized)/mib, "MiB-after-resizes")
		in.Close()
	}
}
