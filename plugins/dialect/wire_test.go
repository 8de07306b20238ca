package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/termhost/termhost/plugins/dialect/core/coretest"
	"github.com/termhost/termhost/sdk/abi"
	"github.com/termhost/termhost/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite testdata/wire.golden")

// wireCase is a session driven through on_open, on_data, on_tick and
// on_close; its emissions are pinned byte for byte.
type wireCase struct {
	name  string
	opts  string
	steps []coretest.Step
	split bool // feed inbound steps byte by byte
}

// A step with In "\x00tick" is a quiet period (on_tick far in the future).
const tick = "\x00tick"

func wireCases() []wireCase {
	var cs []wireCase
	for _, n := range names() {
		cs = append(cs, wireCase{name: n + "/auto", steps: coretest.Transcripts[n]})
		cs = append(cs, wireCase{name: n + "/forced", opts: `{"dialect":"` + n + `"}`, steps: coretest.Transcripts[n]})
	}
	in := func(s string) coretest.Step { return coretest.Step{In: s} }
	out := func(s string) coretest.Step { return coretest.Step{Out: s} }
	page := in("line\r\n --More-- ")
	erase := in("\b\b\b\b\b\b\b\b\b        \b\b\b\b\b\b\b\b\b")
	cs = append(cs,
		wireCase{name: "cisco_ios/split", steps: coretest.Transcripts["cisco_ios"], split: true},
		wireCase{name: "juniper_junos/split", steps: coretest.Transcripts["juniper_junos"], split: true},
		wireCase{name: "pager-limit-quit", opts: `{"dialect":"cisco_ios","maxPages":1}`,
			steps: []coretest.Step{in("R1#"), out("show log\r"), page, erase, page, erase, page}},
		wireCase{name: "pager-manual", opts: `{"dialect":"cisco_ios","pager":false}`,
			steps: []coretest.Step{in("R1#"), out("show log\r"), page}},
		wireCase{name: "command-pagers", opts: `{"commandPagers":true}`,
			steps: []coretest.Step{in("R1>"), out("show log\r"), in("show log\r\nline\r\n --More-- "), out("q"), in("\r\nR1>")}},
		wireCase{name: "quiet-pager", opts: `{"dialect":"linux"}`,
			steps: []coretest.Step{out("ls | more\r"), in("a\r\nb\r\n--More--"), in(tick)}},
		wireCase{name: "quiet-release", opts: `{"dialect":"cisco_ios"}`,
			steps: []coretest.Step{in("R1#"), out("x\r"), in("x\r\n-"), in(tick)}},
		wireCase{name: "close-flush", opts: `{"dialect":"cisco_ios"}`,
			steps: []coretest.Step{in("R1#"), out("x\r"), in("x\r\n-")}},
		wireCase{name: "escapes-and-bad-utf8", opts: `{"dialect":"linux"}`,
			steps: []coretest.Step{in("u@h:/tmp/<a&b>\xff$ "), out("x\r"), in("x\r\nbash: <x>\xfe&: command not found\r\nu@h:/tmp/<a&b>\xff$ "),
				out("rm\r"), in("rm\r\nremove <all> & more? [Y/n] ")}},
		wireCase{name: "vtysh-from-shell",
			steps: []coretest.Step{in("BusyBox v1.36.1 built-in shell\r\n/ # "), out("vtysh\r"),
				in("vtysh\r\n\r\nHello, this is FRRouting (version 9.1).\r\n\r\nfrr# "), out("show version\r"), in("show version\r\nFRRouting 9.1\r\nfrr# ")}},
		wireCase{name: "xe-alias", opts: `{"dialect":"cisco_xe"}`,
			steps: []coretest.Step{in("R1>"), out("enable\r"), in("enable\r\nPassword: "), out("x\r"), in("\r\nR1#")}},
		wireCase{name: "junos-edit-auto",
			steps: []coretest.Step{in("\r\n[edit protocols bgp]\r\nlab@vmx1# "), out("up\r"), in("up\r\n\r\n[edit protocols]\r\nlab@vmx1# ")}},
		wireCase{name: "erase-then-text", opts: `{"dialect":"cisco_ios"}`,
			steps: []coretest.Step{in("R1#"), out("show run\r"), in("show run\r\nhostname R1\r\n --More-- "), in("interface x\r\n"), in("end\r\nR1#")}},
	)
	return cs
}

// runWire drives c on session sid and returns its emissions, one per
// line: the stream and the bytes (%q). Adjacent bytes toward the user are
// merged (the host sees one stream), and a chunk passed on unchanged
// (Continue) counts as its bytes toward the user.
func runWire(t *testing.T, p sdktest.Plugin, sid uint32, c wireCase) []string {
	t.Helper()
	var lines []string
	var user []byte
	flushUser := func() {
		if len(user) > 0 {
			lines = append(lines, fmt.Sprintf("user %q", user))
			user = nil
		}
	}
	add := func(ems []abi.Emission) {
		for _, e := range ems {
			switch e.Stream {
			case abi.ToUser:
				user = append(user, e.Data...)
			case abi.ToPeer:
				flushUser()
				lines = append(lines, fmt.Sprintf("peer %q", e.Data))
			case abi.Event:
				flushUser()
				lines = append(lines, "event "+string(e.Data))
			}
		}
	}
	if _, err := p.Open(sid, abi.KindTelnet, []byte(c.opts)); err != nil {
		t.Fatalf("%s: open: %v", c.name, err)
	}
	for _, st := range c.steps {
		switch {
		case st.Out != "":
			_, ems, err := p.Data(sid, abi.Outbound, []byte(st.Out))
			if err != nil {
				t.Fatal(err)
			}
			add(ems)
		case st.In == tick:
			_, ems, err := p.Tick(1 << 62)
			if err != nil {
				t.Fatal(err)
			}
			add(ems)
		default:
			pieces := []string{st.In}
			if c.split {
				pieces = strings.Split(st.In, "")
			}
			for _, piece := range pieces {
				a, ems, err := p.Data(sid, abi.Inbound, []byte(piece))
				if err != nil {
					t.Fatal(err)
				}
				if a == abi.Continue {
					user = append(user, piece...)
				}
				add(ems)
			}
		}
	}
	ems, err := p.CloseSession(sid)
	if err != nil {
		t.Fatal(err)
	}
	add(ems)
	flushUser()
	return lines
}

// TestWireGolden pins what the host sees from the plugin, byte for byte:
// the bytes toward the user and the peer and every event's JSON, for each
// transcript (detected and forced, whole and split byte by byte) and the
// pager bound, manual pagers, command pagers, quiet periods, a flush at
// close, HTML-special and invalid UTF-8 text, a device CLI started from a
// shell, the cisco_xe alias and a Junos [edit] line before any dialect.
// Run with -update to rewrite testdata/wire.golden (only when the wire is
// meant to change).
func TestWireGolden(t *testing.T) {
	sdktest.Both(t, newSession, "dialect.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		var b strings.Builder
		for i, c := range wireCases() {
			fmt.Fprintf(&b, "== %s\n", c.name)
			for _, l := range runWire(t, p, uint32(i+1), c) {
				b.WriteString(l + "\n")
			}
		}
		const golden = "testdata/wire.golden"
		if *update && strings.HasSuffix(t.Name(), "native") {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != string(want) {
			gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Fatalf("wire differs at line %d:\n got  %s\n want %s", i+1, gl[i], wl[i])
				}
			}
			t.Fatalf("wire differs: %d lines, want %d", len(gl), len(wl))
		}
	})
}
