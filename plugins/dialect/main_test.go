package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/plugins/dialect/core/coretest"
	"github.com/termhost/termhost/sdk/abi"
	"github.com/termhost/termhost/sdk/sdktest"
)

var promptDialect = regexp.MustCompile(`dialect=\S+ `)

type got struct {
	user, peer string
	events     []string
}

// drive feeds a transcript to session sid of p, as the host would.
func drive(t *testing.T, p sdktest.Plugin, sid uint32, steps []coretest.Step, g *got) {
	t.Helper()
	for _, st := range steps {
		if st.Out != "" {
			a, ems, err := p.Data(sid, abi.Outbound, []byte(st.Out))
			if err != nil || a != abi.Continue || len(ems) != 0 {
				t.Fatalf("outbound: %v %v %v", a, ems, err)
			}
			continue
		}
		a, ems, err := p.Data(sid, abi.Inbound, []byte(st.In))
		if err != nil {
			t.Fatal(err)
		}
		if a == abi.Continue {
			g.user += st.In
		}
		for _, e := range ems {
			switch e.Stream {
			case abi.ToUser:
				g.user += string(e.Data)
			case abi.ToPeer:
				g.peer += string(e.Data)
			case abi.Event:
				g.events = append(g.events, evString(t, e.Data))
			}
		}
	}
}

func evString(t *testing.T, b []byte) string {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("event %q: %v", b, err)
	}
	s := m["type"].(string)
	for _, k := range []string{"name", "dialect", "hostname", "mode", "submode", "prompt", "field", "text", "pages", "answered", "confident"} {
		if v, ok := m[k]; ok {
			s += fmt.Sprintf(" %s=%v", k, v)
		}
	}
	return s
}

func names() []string {
	var ns []string
	for n := range coretest.Transcripts {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// TestDialects: every dialect's session (login, prompts and modes, pager
// answered and removed, question, error, done), auto-detected and forced,
// natively and inside wazero.
func TestDialects(t *testing.T) {
	sdktest.Both(t, newSession, "dialect.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		sid := uint32(0)
		for _, name := range names() {
			for _, opts := range []string{"", `{"dialect":"` + name + `"}`} {
				sid++
				if _, err := p.Open(sid, abi.KindTelnet, []byte(opts)); err != nil {
					t.Fatal(err)
				}
				var g got
				drive(t, p, sid, coretest.Transcripts[name], &g)
				want := coretest.Expect[name]
				if opts != "" {
					// Forced: no detection events.
					want = nil
					for _, e := range coretest.Expect[name] {
						if !strings.HasPrefix(e, "dialect ") {
							// Forced from the start, even the first
							// prompts are the right dialect's.
							want = append(want, promptDialect.ReplaceAllString(e, "dialect="+name+" "))
						}
					}
				}
				if strings.Join(g.events, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s %s: events\n%s\nwant\n%s", name, opts, strings.Join(g.events, "\n"), strings.Join(want, "\n"))
				}
				if g.peer != coretest.Peer[name] {
					t.Errorf("%s: peer %q want %q", name, g.peer, coretest.Peer[name])
				}
				if strings.Contains(g.user, "More") || strings.Contains(g.user, "(more") || strings.Contains(g.user, "\b") {
					t.Errorf("%s: pager left in %q", name, g.user)
				}
				ems, err := p.Control(sid, []byte(`{"op":"info"}`))
				if err != nil {
					t.Fatal(err)
				}
				var info map[string]any
				for _, e := range ems {
					if e.Stream == abi.Reply {
						json.Unmarshal(e.Data, &info)
					}
				}
				if info["dialect"] != name || info["detected"] != (opts == "") || info["hostname"] == "" || info["mode"] == "" {
					t.Errorf("%s: info %v", name, info)
				}
				if _, err := p.CloseSession(sid); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestControl: forcing a dialect, unknown names, the mode commands in
// info, pager settings.
func TestControl(t *testing.T) {
	sdktest.Both(t, newSession, "dialect.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		if _, err := p.Open(1, abi.KindSSH, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Control(1, []byte(`{"op":"dialect","name":"nope"}`)); err == nil || !strings.Contains(err.Error(), "mikrotik_routeros") {
			t.Fatalf("unknown dialect: %v", err)
		}
		ems, err := p.Control(1, []byte(`{"op":"dialect","name":"huawei"}`))
		if err != nil || len(ems) != 1 || string(ems[0].Data) != `{"ok":true}` {
			t.Fatalf("dialect: %v %v", ems, err)
		}
		ems, err = p.Control(1, []byte(`{"op":"info"}`))
		if err != nil || len(ems) != 1 || !strings.Contains(string(ems[0].Data), `"modes":{"config":{"user":"return"},"user":{"config":"system-view"}}`) {
			t.Fatalf("info: the mode commands: %v %v", ems, err)
		}
		if _, err := p.Control(1, []byte(`{"op":"pager","maxPages":1,"auto":true}`)); err != nil {
			t.Fatal(err)
		}
		var g got
		page := coretest.Step{In: "x\r\n  ---- More ----"}
		erase := coretest.Step{In: "\x1b[16D                \x1b[16D"}
		drive(t, p, 1, []coretest.Step{{Out: "display log\r"}, page, erase, page}, &g)
		// The bound answers with the table's quit key: the device returns to its prompt.
		if g.peer != " q" || !strings.Contains(strings.Join(g.events, ","), "pager_limit pages=1") {
			t.Fatalf("limit: %+v", g)
		}
		if _, err := p.Control(1, []byte(`{"op":"frob"}`)); err == nil {
			t.Fatal("unknown op accepted")
		}
		if _, err := p.Open(2, abi.KindSSH, []byte(`{"dialect":"cisco_xr"}`)); err == nil {
			t.Fatal("unknown dialect option accepted")
		}
	})
}

// TestStateMoves: a session exported half-way and imported on another
// session id ends as if it had never moved.
func TestStateMoves(t *testing.T) {
	sdktest.Both(t, newSession, "dialect.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		steps := coretest.Transcripts["juniper_junos"]
		for _, sid := range []uint32{1, 2} {
			if _, err := p.Open(sid, abi.KindSSH, nil); err != nil {
				t.Fatal(err)
			}
		}
		var g got
		drive(t, p, 1, steps[:7], &g)
		st, _, err := p.ExportState(1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ImportState(2, st); err != nil {
			t.Fatal(err)
		}
		drive(t, p, 2, steps[7:], &g)
		if strings.Join(g.events, "\n") != strings.Join(coretest.Expect["juniper_junos"], "\n") {
			t.Fatalf("events after the move:\n%s", strings.Join(g.events, "\n"))
		}
	})
}

// routerOutput is N bytes of show-like router output: interface and route
// lines, no prompt, pager or error.
func routerOutput(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "GigabitEthernet0/%d/%d   10.%d.%d.1   YES NVRAM  up                    up      \r\n", i%8, i%48, i%250, i%200)
		fmt.Fprintf(&b, "B>* 10.%d.%d.0/24 [20/0] via 192.168.%d.2, eth%d, weight 1, 1d02h03m\r\n", i%250, i%200, i%250, i%4)
	}
	return b.Bytes()[:n]
}

// BenchmarkDialect: 4 MiB of plain router output through on_data in 32 KiB
// chunks, natively (the plugin's session value), and in wazero guarded and
// unguarded. The dialect is detected first from a banner, as in a session.
func BenchmarkDialect(b *testing.B) {
	p := routerOutput(4 << 20)
	banner := []byte("Cisco IOS Software, C2900 Software\r\nR1#")
	b.Run("native", func(b *testing.B) {
		n := sdktest.Native(newSession)
		n.Open(1, abi.KindTelnet, nil)
		n.Data(1, abi.Inbound, banner)
		n.Data(1, abi.Outbound, []byte("show ip interface brief\r"))
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			for off := 0; off < len(p); off += 32 << 10 {
				n.Data(1, abi.Inbound, p[off:min(off+32<<10, len(p))])
			}
		}
	})
	wasm, err := os.ReadFile("dialect.wasm")
	if err != nil {
		b.Fatal(err)
	}
	for _, guard := range []bool{true, false} {
		label := "wasm-unguarded"
		if guard {
			label = "wasm-guarded"
		}
		b.Run(label, func(b *testing.B) {
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
			if _, err := in.Open(1, abi.KindTelnet, nil); err != nil {
				b.Fatal(err)
			}
			in.Data(1, abi.Inbound, banner)
			in.Data(1, abi.Outbound, []byte("show ip interface brief\r"))
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
