// The tests need a real SSH server (internal/sshtest: processes, PTYs):
// not for the wasip1 vet of plugins/.

//go:build !wasip1

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/internal/sshtest"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/sdktest"
)

// bulkMB is the size of one transfer: the server's command writes it on
// stdout, the client counts it.
const bulkMB = 32

func benchServer(b *testing.B) *sshtest.Server {
	return sshtest.Start(b, sshtest.Options{Passwords: map[string]string{"alice": secret},
		Ciphers: []string{ssh.CipherChaCha20Poly1305}})
}

// plugins are the ways the plugin runs: in wazero with termination checks
// (termhost's default for a plugin that is not declared bounded), without
// them, and natively (the same code, no wasm).
var plugins = []struct {
	name string
	make func(b *testing.B) sdktest.Plugin
}{
	{"wasm-guarded", func(b *testing.B) sdktest.Plugin {
		return sdktest.WasmWith(b, "ssh.wasm", nil, wasmhost.Options{Guard: true, CallTimeout: time.Minute})
	}},
	{"wasm", func(b *testing.B) sdktest.Plugin {
		return sdktest.WasmWith(b, "ssh.wasm", nil, wasmhost.Options{CallTimeout: time.Minute})
	}},
	{"native-plugin", func(*testing.B) sdktest.Plugin { return sdktest.Native(newSession) }},
}

// BenchmarkBulk: bulkMB of exec output through the plugin (decrypted,
// delivered as data events) vs plain x/crypto/ssh, same server, same
// cipher (chacha20-poly1305).
func BenchmarkBulk(b *testing.B) {
	cmd := "head -c " + strconv.Itoa(bulkMB<<20) + " /dev/zero"
	for _, pl := range plugins {
		b.Run(pl.name, func(b *testing.B) {
			srv := benchServer(b)
			p := pl.make(b)
			r := newRig(b, p, srv)
			r.discard = true
			r.connect(startReq(srv, "alice", `{"method":"password"}`))
			r.waitType("connected")
			b.SetBytes(bulkMB << 20)
			b.ResetTimer()
			for i := range b.N {
				ch := i + 1
				r.control(fmt.Sprintf(`{"op":"exec","ch":%d,"command":%q}`, ch, cmd))
				r.wait("channel_closed", func(e event) bool { return e.Type == "channel_closed" && e.Ch == ch })
			}
			b.StopTimer()
			r.mu.Lock()
			got := r.counted
			r.mu.Unlock()
			if got != b.N*bulkMB<<20 {
				b.Fatalf("received %d bytes, want %d", got, b.N*bulkMB<<20)
			}
			if in, ok := p.(*wasmhost.Instance); ok {
				b.ReportMetric(float64(in.MemSize())/(1<<20), "MiB-mem")
			}
		})
	}
	// Small chunks: the cost of one on_data call carrying a few hundred
	// bytes (a screenful of a shell), settle included.
	for _, pl := range plugins[:2] {
		b.Run(pl.name+"-small-chunks", func(b *testing.B) {
			srv := benchServer(b)
			p := pl.make(b)
			r := newRig(b, p, srv)
			r.discard = true
			r.split = func() int { return 300 }
			r.connect(startReq(srv, "alice", `{"method":"password"}`))
			r.waitType("connected")
			r.mu.Lock()
			r.dataN, r.callTime = 0, 0
			r.mu.Unlock()
			b.SetBytes(4 << 20)
			b.ResetTimer()
			for i := range b.N {
				ch := i + 1
				r.control(fmt.Sprintf(`{"op":"exec","ch":%d,"command":"head -c 4194304 /dev/zero"}`, ch))
				r.wait("channel_closed", func(e event) bool { return e.Type == "channel_closed" && e.Ch == ch })
			}
			b.StopTimer()
			r.mu.Lock()
			b.ReportMetric(float64(r.callTime.Microseconds())/float64(r.dataN), "µs/on_data")
			r.mu.Unlock()
		})
	}
	b.Run("x-crypto-native", func(b *testing.B) {
		srv := benchServer(b)
		c, err := ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{User: "alice", Auth: []ssh.AuthMethod{ssh.Password(secret)},
			HostKeyCallback: ssh.FixedHostKey(srv.HostKey()), Config: ssh.Config{Ciphers: ciphers()}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.SetBytes(bulkMB << 20)
		b.ResetTimer()
		for range b.N {
			s, err := c.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			var n countWriter
			s.Stdout = &n
			if err := s.Run(cmd); err != nil || n != bulkMB<<20 {
				b.Fatalf("run: %v, %d bytes", err, n)
			}
		}
	})
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// BenchmarkHandshake: connect and authenticate (password, ed25519 host
// key) through the plugin — a fresh instance each time, as termhost runs
// one per connection — vs x/crypto/ssh natively. instantiate-ms is the
// instance's start-up, outside the handshake's time.
func BenchmarkHandshake(b *testing.B) {
	wasm, err := os.ReadFile("ssh.wasm")
	if err != nil {
		b.Fatal(err)
	}
	for _, guard := range []bool{true, false} {
		name := "wasm"
		if guard {
			name = "wasm-guarded"
		}
		b.Run(name, func(b *testing.B) {
			srv := benchServer(b)
			ctx := context.Background()
			m, err := wasmhost.Compile(ctx, wasm, wasmhost.Options{Guard: guard, Sys: true, Cache: sdktest.Cache()})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			var inst time.Duration
			var memMiB float64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				t0 := time.Now()
				in, err := m.Instantiate(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				inst += time.Since(t0)
				r := newRig(b, in, srv)
				b.StartTimer()
				r.connect(startReq(srv, "alice", `{"method":"password"}`))
				r.waitType("connected")
				b.StopTimer()
				memMiB += float64(in.MemSize()) / (1 << 20)
				r.close()
				in.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(inst.Milliseconds())/float64(b.N), "instantiate-ms")
			b.ReportMetric(memMiB/float64(b.N), "MiB-mem")
		})
	}
	b.Run("native-plugin", func(b *testing.B) {
		srv := benchServer(b)
		for range b.N {
			r := newRig(b, sdktest.Native(newSession), srv)
			r.connect(startReq(srv, "alice", `{"method":"password"}`))
			r.waitType("connected")
			b.StopTimer()
			r.close()
			b.StartTimer()
		}
	})
	b.Run("x-crypto-native", func(b *testing.B) {
		srv := benchServer(b)
		for range b.N {
			c, err := ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{User: "alice", Auth: []ssh.AuthMethod{ssh.Password(secret)},
				HostKeyCallback: ssh.FixedHostKey(srv.HostKey())})
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
}
