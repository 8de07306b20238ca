package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/plugins/vt/core"
	"github.com/termhost/termhost/sdk/abi"
)

// BenchmarkScreen: the vt plugin fed 1 MiB payloads in 32 KiB chunks (as
// the session's pump delivers them): natively (the core alone), and inside
// wazero as a plugin, guarded (termhost's default for every plugin) and
// unguarded. MB/s per payload.
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
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				for off := 0; off < len(p); off += 32 << 10 {
					t.Write(p[off:min(off+32<<10, len(p))])
					t.Replies()
				}
			}
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
				b.SetBytes(int64(len(p)))
				for b.Loop() {
					for off := 0; off < len(p); off += 32 << 10 {
						if _, _, err := in.Data(1, abi.Inbound, p[off:min(off+32<<10, len(p))]); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// benchTmux: tmux showing the same payload (16 copies, through cat and
// its PTY) in a detached 80x24 pane, MB/s from start to the last byte
// processed.
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
	for i := 0; b.Loop(); i++ {
		// A socket per iteration: a new server on the socket of one still
		// shutting down fails now and then ("server exited unexpectedly").
		sock := filepath.Join(dir, "s"+strconv.Itoa(i))
		out, err := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24",
			"sh", "-c", "cat "+file+"; tmux -S "+sock+" wait-for -S done").CombinedOutput()
		if err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		if out, err := exec.Command("tmux", "-S", sock, "wait-for", "done").CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		exec.Command("tmux", "-S", sock, "kill-server").Run()
	}
}
