package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
	"github.com/termhost/termhost/sdk/sdktest"
)

// The same tests run natively and inside wazero against telnet.wasm.
func TestTelnetPlugin(t *testing.T) {
	sdktest.Both(t, newSession, "telnet.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		if _, err := p.Open(1, abi.KindTelnet, []byte(`{"term":"vt100","cols":132,"rows":255}`)); err != nil {
			t.Fatal(err)
		}
		// Plain text passes through without a copy.
		a, ems, err := p.Data(1, abi.Inbound, []byte("login: "))
		if err != nil || a != abi.Continue || len(ems) != 0 {
			t.Fatalf("plain text: action %d, %d emissions, %v; want continue", a, len(ems), err)
		}
		// Negotiation is answered toward the peer; data reaches the user;
		// GA is a prompt event; the option change is checkpointed.
		in := []byte("a\xff\xff\xff\xfd\x18b\xff\xfd\x1fc> \xff\xf9")
		a, ems, err = p.Data(1, abi.Inbound, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := sdktest.Apply(abi.Inbound, in, a, ems); string(got) != "a\xffbc> " {
			t.Errorf("to_user %q", got)
		}
		peer := sdktest.Collect(ems, abi.ToPeer)
		wantPeer := []byte("\xff\xfb\x18\xff\xfb\x1f\xff\xfa\x1f\x00\x84\x00\xff\xff\xff\xf0")
		if !bytes.Equal(peer, wantPeer) {
			t.Errorf("to_peer % x\nwant    % x", peer, wantPeer)
		}
		events := string(sdktest.Collect(ems, abi.Event))
		for _, want := range []string{`"option":"TTYPE"`, `"option":"NAWS"`, `{"type":"prompt","source":"telnet","mark":"GA"}`} {
			if !strings.Contains(events, want) {
				t.Errorf("events %s lack %s", events, want)
			}
		}
		if len(sdktest.Collect(ems, abi.State)) == 0 {
			t.Error("no checkpoint after negotiation")
		}
		// TTYPE SEND is answered with the session's terminal type.
		_, ems, _ = p.Data(1, abi.Inbound, []byte("\xff\xfa\x18\x01\xff\xf0"))
		if got := sdktest.Collect(ems, abi.ToPeer); string(got) != "\xff\xfa\x18\x00vt100\xff\xf0" {
			t.Errorf("TTYPE IS % x", got)
		}
		// Outbound: 0xFF is doubled.
		a, ems, _ = p.Data(1, abi.Outbound, []byte("x\xffy\r\n"))
		if got := sdktest.Apply(abi.Outbound, nil, a, ems); string(got) != "x\xff\xffy\r\n" {
			t.Errorf("outbound % x", got)
		}
		// Control: interrupt, resize (NAWS re-sent), bad requests.
		ems, err = p.Control(1, []byte(`{"op":"interrupt"}`))
		if err != nil || string(sdktest.Collect(ems, abi.ToPeer)) != "\xff\xf4" {
			t.Errorf("interrupt: % x %v", sdktest.Collect(ems, abi.ToPeer), err)
		}
		ems, err = p.Control(1, []byte(`{"op":"resize","cols":100,"rows":40}`))
		if err != nil || string(sdktest.Collect(ems, abi.ToPeer)) != "\xff\xfa\x1f\x00\x64\x00\x28\xff\xf0" {
			t.Errorf("resize: % x %v", sdktest.Collect(ems, abi.ToPeer), err)
		}
		if _, err := p.Control(1, []byte(`{"op":"explode"}`)); err == nil || !strings.Contains(err.Error(), "unknown op") {
			t.Errorf("bad op: %v", err)
		}
		// State moves to a fresh session: NAWS stays on, so a resize is sent.
		st, _, err := p.ExportState(1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Open(2, abi.KindTelnet, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ImportState(2, st); err != nil {
			t.Fatal(err)
		}
		ems, _ = p.Control(2, []byte(`{"op":"resize","cols":90,"rows":30}`))
		if len(sdktest.Collect(ems, abi.ToPeer)) == 0 {
			t.Error("imported state lost NAWS")
		}
		if _, err := p.ImportState(2, []byte("garbage")); err == nil {
			t.Error("garbage state accepted")
		}
	})
}

// Escaped data reaches the user as one emission per chunk: keepalives
// (IAC NOP) neither split it nor show up as events; other commands are
// events in their place.
func TestTelnetPluginEscaped(t *testing.T) {
	sdktest.Both(t, newSession, "telnet.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		if _, err := p.Open(1, abi.KindTelnet, nil); err != nil {
			t.Fatal(err)
		}
		in := bytes.Repeat([]byte("ab\xff\xff\r\x00\xff\xf1"), 1000)
		a, ems, err := p.Data(1, abi.Inbound, in)
		if err != nil {
			t.Fatal(err)
		}
		if a != abi.Consumed || len(ems) != 1 || ems[0].Stream != abi.ToUser {
			t.Fatalf("action %d, %d emissions; want one to_user", a, len(ems))
		}
		if want := bytes.Repeat([]byte("ab\xff\r"), 1000); !bytes.Equal(ems[0].Data, want) {
			t.Fatalf("to_user %q…, want %q…", ems[0].Data[:16], want[:16])
		}
		_, ems, _ = p.Data(1, abi.Inbound, []byte("x\xff\xffy\xff\xf6z\xff\xf9\xff\xf9"))
		var got []string
		for _, em := range ems {
			got = append(got, string(em.Data))
		}
		// The second GA, with no data since the first, says nothing new.
		want := []string{"x\xffy", `{"type":"command","source":"telnet","command":246}`, "z", `{"type":"prompt","source":"telnet","mark":"GA"}`}
		if !slices.Equal(got, want) {
			t.Fatalf("emissions %q\nwant %q", got, want)
		}
		// A flood of marks and commands is one event each run; data between
		// them makes them news again.
		flood := append(append([]byte("v"), bytes.Repeat([]byte("\xff\xf9"), 5000)...), append([]byte("w"), bytes.Repeat([]byte("\xff\xf9"), 3)...)...)
		_, ems, _ = p.Data(1, abi.Inbound, flood)
		got = got[:0]
		for _, em := range ems {
			got = append(got, string(em.Data))
		}
		want = []string{"v", `{"type":"prompt","source":"telnet","mark":"GA"}`, "w", `{"type":"prompt","source":"telnet","mark":"GA"}`}
		if !slices.Equal(got, want) {
			t.Fatalf("flood: emissions %q\nwant %q", got, want)
		}
		// Data that passes whole (no command in its chunk) counts too.
		if a, _, _ := p.Data(1, abi.Inbound, []byte("router> ")); a != abi.Continue {
			t.Fatalf("plain chunk: action %d", a)
		}
		_, ems, _ = p.Data(1, abi.Inbound, []byte("\xff\xf9"))
		if len(ems) != 1 || string(ems[0].Data) != `{"type":"prompt","source":"telnet","mark":"GA"}` {
			t.Fatalf("the mark after a plain chunk: %d emissions", len(ems))
		}
	})
}

func BenchmarkPluginWasm(b *testing.B) {
	for _, c := range benchChunks() {
		b.Run(c.name, func(b *testing.B) {
			p := sdktest.Wasm(b, "telnet.wasm", nil)
			p.Open(1, abi.KindTelnet, nil)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, _, err := p.Data(1, abi.Inbound, c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPluginNativeChunks(b *testing.B) {
	for _, c := range benchChunks() {
		b.Run(c.name, func(b *testing.B) {
			p := sdktest.Native(newSession)
			p.Open(1, abi.KindTelnet, nil)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				p.Data(1, abi.Inbound, c.data)
			}
		})
	}
}

type benchChunk struct {
	name string
	data []byte
}

// benchChunks are 64 KiB each of:
//   - plain: router output;
//   - iac-dense: binary-ish data where about a quarter of the bytes belong
//     to Telnet commands: mostly IAC IAC (an escaped 0xFF data byte), with
//     a NOP every 64 bytes;
//   - iac-all: nothing but 0xFF (IAC IAC pairs), the adversarial case;
//   - iac-mix: random binary data as a server in NVT mode sends it, 15% of
//     it 0xFF (IAC IAC), CR stuffed with NUL, and now and then a GA, a NOP
//     or a negotiation command confirming a state already reached;
//   - ga-flood: nothing but IAC GA, a hostile peer's prompt marks.
func benchChunks() []benchChunk {
	plain := bytes.Repeat([]byte("interface GigabitEthernet0/1 is up, line protocol is up\r\n"), 1200)[:64<<10]
	var dense []byte
	for len(dense) < 64<<10 {
		for i := 0; i < 7; i++ {
			dense = append(dense, "ab\xff\xffcd\xff\xff"...)
		}
		dense = append(dense, "\xff\xf1xyzw\xff\xff"...)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var mix []byte
	for len(mix) < 64<<10-8 {
		switch r := rng.IntN(1000); {
		case r < 150:
			mix = append(mix, 0xff, 0xff)
		case r < 153:
			mix = append(mix, 0xff, 0xf9) // GA
		case r < 155:
			mix = append(mix, 0xff, 0xf1) // NOP
		case r < 156:
			mix = append(mix, 0xff, 0xfb, 0x01) // WILL ECHO
		case r < 157:
			mix = append(mix, 0xff, 0xfd, 0x1f) // DO NAWS
		default:
			x := byte(rng.IntN(255))
			mix = append(mix, x)
			if x == '\r' {
				mix = append(mix, 0)
			}
		}
	}
	mix = append(mix, 'x')
	return []benchChunk{
		{"plain", plain},
		{"iac-dense", dense[:64<<10]},
		{"iac-all", bytes.Repeat([]byte{0xff}, 64<<10)},
		{"iac-mix", mix},
		{"ga-flood", bytes.Repeat([]byte{0xff, 0xf9}, 32<<10)},
	}
}

// BenchmarkPluginWasmGuarded is BenchmarkPluginWasm with wazero's
// termination checks compiled in, as termhost runs plugins by default
// (--plugin-guard=all).
func BenchmarkPluginWasmGuarded(b *testing.B) {
	wasm, err := os.ReadFile("telnet.wasm")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	m, err := wasmhost.Compile(ctx, wasm, wasmhost.Options{Guard: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	for _, c := range benchChunks() {
		b.Run(c.name, func(b *testing.B) {
			inst, err := m.Instantiate(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close()
			inst.Open(1, abi.KindTelnet, nil)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, _, err := inst.Data(1, abi.Inbound, c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
