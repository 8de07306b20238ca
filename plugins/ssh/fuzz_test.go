//go:build !wasip1

package main

import (
	"errors"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
	"github.com/termhost/termhost/sdk/sdktest"
)

// FuzzServerBytes feeds whatever a hostile server could send before
// encryption starts (version line, KEXINIT, plaintext packets, garbage) to
// the plugin in wazero, guarded, cut into chunks of fuzzed sizes, with
// ticks between them. Every call must return within the guard's deadline
// without trapping: the evidence behind the manifest's "bounded" (the
// embedded plugin then runs without termination checks). After keys are
// exchanged, random bytes fail the MAC, which the plugin's own tests cover.
func FuzzServerBytes(f *testing.F) {
	f.Add([]byte("SSH-2.0-OpenSSH_9.2\r\n\x00\x00\x01\x0c\x0a\x14"), uint8(7))
	f.Add([]byte("SSH-1.99-x\r\n"+string(make([]byte, 300))), uint8(0))
	f.Add([]byte("banner line\r\nanother\r\nSSH-2.0-x\r\n\xff\xff\xff\xff"), uint8(3))
	f.Add([]byte("SSH-2.0-x\r\n\x00\x00\x00\x1c\x04\x14abcdefghijklmnop\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), uint8(1))
	p := sdktest.WasmWith(f, "ssh.wasm", nil, wasmhost.Options{CallTimeout: 2 * time.Second, Guard: true})
	var sid uint32
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		if p.Err() != nil {
			t.Skip("instance poisoned by an earlier input")
		}
		p.SetHostCall(func(uint32, []byte) ([]byte, error) { return []byte("pw"), nil })
		sid++
		if _, err := p.Open(sid, abi.KindSSH, nil); err != nil {
			t.Fatal(err)
		}
		defer p.CloseSession(sid)
		if _, err := p.Control(sid, []byte(`{"op":"start","user":"u","host":"h","port":22,"auth":[{"method":"password"}]}`)); err != nil {
			t.Fatal(err)
		}
		size := int(cut)%64 + 1
		for len(data) > 0 {
			n := min(size, len(data))
			began := time.Now()
			a, _, err := p.Data(sid, abi.Inbound, data[:n])
			if d := time.Since(began); d > 500*time.Millisecond {
				t.Errorf("one call took %v", d)
			}
			data = data[n:]
			var te *wasmhost.TrapError
			if errors.As(err, &te) || p.Err() != nil {
				t.Fatalf("call failed: %v (instance: %v)", err, p.Err())
			}
			if a == abi.Close {
				break
			}
			if _, _, err := p.Tick(time.Now().UnixMilli()); err != nil {
				t.Fatalf("tick: %v", err)
			}
		}
	})
}
