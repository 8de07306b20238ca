package core

import (
	"testing"
)

func benchPayloads() map[string][]byte { return Payloads() }

func BenchmarkWrite(b *testing.B) {
	payloads := benchPayloads()
	for _, name := range []string{"plain", "sgr", "cursor", "scroll_region", "unicode"} {
		data := payloads[name]
		b.Run(name, func(b *testing.B) {
			term := New(Options{Cols: 80, Rows: 24})
			term.Write(data) // warm up: fill the scrollback ring and tables
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				term.Write(data)
			}
		})
	}
}

// BenchmarkWriteChunked feeds the plain payload in 4 KiB writes, as a pty
// delivers it.
func BenchmarkWriteChunked(b *testing.B) {
	data := benchPayloads()["plain"]
	term := New(Options{Cols: 80, Rows: 24})
	term.Write(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(data); off += 4096 {
			term.Write(data[off:min(off+4096, len(data))])
		}
	}
}

func BenchmarkRender(b *testing.B) {
	term := New(Options{Cols: 80, Rows: 24})
	term.Write(benchPayloads()["sgr"])
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < 24; r++ {
			buf = term.AppendRowANSI(buf[:0], r)
		}
	}
}

// BenchmarkWriteGhostty: the three payloads of the comparison with
// Ghostty's core (plugins/vt BenchmarkGhostty), 4 MiB each, natively, in
// 32 KiB writes with the default scrollback.
func BenchmarkWriteGhostty(b *testing.B) {
	payloads := GhosttyPayloads(4 << 20)
	for _, name := range []string{"plain", "sgr_cjk", "redraw"} {
		data := payloads[name]
		b.Run(name, func(b *testing.B) {
			term := New(Options{Cols: 80, Rows: 24})
			term.Write(data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for off := 0; off < len(data); off += 32 << 10 {
					term.Write(data[off:min(off+32<<10, len(data))])
				}
			}
		})
	}
}
