package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/plugins/vt/core"
	"github.com/termhost/termhost/sdk/abi"
)

// BenchmarkScreen: the vt plugin fed 1 MiB payloads in 32 KiB chunks (as
// the session's pump delivers them): natively (the core alone), and inside
// wazero as a plugin, guarded (termhost's default for every plugin) and
// unguarded, and tmux showing the same bytes. MB/s per payload by the wall
// clock, and cpu-MB/s by CPU time: the benchmark thread's for ours, the
// tmux server's for tmux (see benchTmux).
func BenchmarkScreen(b *testing.B) {
	payloads := core.Payloads()
	names := make([]string, 0, len(payloads))
	for n := range payloads {
		names = append(names, n)
	}
	sort.Strings(names)
	path := os.Getenv("VT_WASM") // another build, for before and after
	if path == "" {
		path = "vt.wasm"
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	_, tmuxErr := exec.LookPath("tmux")
	for _, name := range names {
		p := payloads[name]
		if tmuxErr == nil {
			b.Run(name+"/tmux", func(b *testing.B) { benchTmux(b, p) })
		}
		b.Run(name+"/native", func(b *testing.B) {
			t := core.New(core.Options{})
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.SetBytes(int64(len(p)))
			c0 := threadCPU()
			for b.Loop() {
				for off := 0; off < len(p); off += 32 << 10 {
					t.Write(p[off:min(off+32<<10, len(p))])
					t.Replies()
				}
			}
			reportCPU(b, len(p), threadCPU()-c0)
		})
		for _, guard := range []bool{true, false} {
			label := "wasm-unguarded"
			if guard {
				label = "wasm-guarded"
			}
			b.Run(name+"/"+label, func(b *testing.B) {
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
				if _, err := in.Open(1, abi.KindPTY, []byte(`{"cols":80,"rows":24}`)); err != nil {
					b.Fatal(err)
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.SetBytes(int64(len(p)))
				c0 := threadCPU()
				for b.Loop() {
					for off := 0; off < len(p); off += 32 << 10 {
						if _, _, err := in.Data(1, abi.Inbound, p[off:min(off+32<<10, len(p))]); err != nil {
							b.Fatal(err)
						}
					}
				}
				reportCPU(b, len(p), threadCPU()-c0)
			})
		}
	}
}

// benchTmux: tmux showing the same payload (16 copies, through cat and
// its PTY) in a detached 80x24 pane. MB/s is from start to the last byte
// processed, by the wall clock (server start and shutdown included, as
// before); cpu-MB/s is from the CPU time of the tmux server's threads
// while it takes in the payload (procCPU, before cat starts and after it
// is done: the server's start-up is left out, its reads from the PTY are
// in), comparable with the cpu-MB/s of the wasm and native runs, which
// count the benchmark thread's CPU time. cat and the kernel's PTY writes
// are counted on neither side.
func benchTmux(b *testing.B, p []byte) {
	dir := b.TempDir()
	file := filepath.Join(dir, "payload")
	const copies = 16
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	for range copies {
		f.Write(p)
	}
	f.Close()
	b.SetBytes(int64(len(p) * copies))
	var cpu time.Duration
	for i := 0; b.Loop(); i++ {
		// A socket per iteration: a new server on the socket of one still
		// shutting down fails now and then ("server exited unexpectedly").
		sock := filepath.Join(dir, "s"+strconv.Itoa(i))
		tm := func(args ...string) string {
			out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
			if err != nil {
				b.Fatalf("tmux %s: %v %s", args[0], err, out)
			}
			return string(out)
		}
		// The pane waits for "go", so the server's CPU time is read
		// before the first byte.
		tm("-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24",
			"sh", "-c", "tmux -S "+sock+" wait-for go; cat "+file+"; tmux -S "+sock+" wait-for -S done")
		pid, err := strconv.Atoi(strings.TrimSpace(tm("display-message", "-p", "#{pid}")))
		if err != nil {
			b.Fatalf("tmux server pid: %v", err)
		}
		c0 := procCPU(pid)
		tm("wait-for", "-S", "go")
		tm("wait-for", "done")
		c1 := procCPU(pid)
		if c0 > 0 && c1 > c0 {
			cpu += c1 - c0
		}
		exec.Command("tmux", "-S", sock, "kill-server").Run()
	}
	if cpu > 0 {
		b.ReportMetric(float64(len(p)*copies*b.N)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
}

// reportCPU adds cpu-MB/s, from the calling thread's CPU time over the
// benchmark (the goroutine locked to its thread by the caller).
func reportCPU(b *testing.B, n int, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(n*b.N)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
}
