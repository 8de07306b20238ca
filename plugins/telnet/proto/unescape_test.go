package proto

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// refBlock is unescapeBlock written the obvious way, one byte at a time.
func refBlock(in []byte, e, cr, nvt, nop bool) (out []byte, used int, eOut, crOut, cmd bool) {
	for j, b := range in {
		switch {
		case e && nop && b == NOP:
			e = false
		case e && b != IAC:
			return out, j, false, false, true
		case e:
			out = append(out, IAC)
			e = false
		case b == IAC:
			e, cr = true, false
		case cr && b == 0:
			cr = false
		default:
			out = append(out, b)
			cr = nvt && b == '\r'
		}
	}
	return out, len(in), e, cr, false
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// TestUnescapeBlock checks the branch-free block against refBlock, for
// every length and incoming state, with garbage past the length.
func TestUnescapeBlock(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Mostly well-formed escapes, so that many blocks hold no command
		// and their outgoing states are checked too.
		tokens := []string{"\xff\xff", "\xff\xff", "\r", "\r\x00", "\x00", "a", "\xf1", "\xff\xf1", "\x7f", "\x80", "\xfe", "\x8d", "\xff"}
		var in [blockLen]byte
		var b []byte
		for len(b) < blockLen {
			b = append(b, rapid.SampledFrom(tokens).Draw(t, "token")...)
		}
		copy(in[:], b)
		n := rapid.IntRange(1, blockLen).Draw(t, "n")
		e, cr, nvt := rapid.Bool().Draw(t, "e"), rapid.Bool().Draw(t, "cr"), rapid.Bool().Draw(t, "nvt")
		nop := rapid.Bool().Draw(t, "nop")
		if e || !nvt {
			cr = false // a pending IAC is not a CR; outside NVT there is no CR state
		}
		want, wantUsed, wantE, wantCR, wantCmd := refBlock(in[:n], e, cr, nvt, nop)

		var out [blockLen]byte
		k, used, eOut, crOut, cmd := unescapeBlock(&out, &in, uint64(n), b2u(e), b2u(cr), b2u(nvt), b2u(nop))
		if !bytes.Equal(out[:k], want) || int(used) != wantUsed || cmd != b2u(wantCmd) {
			t.Fatalf("in % x n=%d e=%v cr=%v nvt=%v nop=%v:\n got % x used %d cmd %d\nwant % x used %d cmd %v",
				in[:n], n, e, cr, nvt, nop, out[:k], used, cmd, want, wantUsed, wantCmd)
		}
		if !wantCmd && (eOut != b2u(wantE) || crOut != b2u(wantCR)) {
			t.Fatalf("in % x n=%d e=%v cr=%v nvt=%v nop=%v: states e=%d cr=%d, want %v %v",
				in[:n], n, e, cr, nvt, nop, eOut, crOut, wantE, wantCR)
		}
	})
}

// genEscaped generates what a server sends while transferring binary
// data: long runs of IAC IAC (odd ones too, ending in a command), CR NUL,
// CR LF and bare CRs, now and then a command, a negotiation (BINARY on and
// off included) or a subnegotiation, so that every construct lands at
// every offset of unescapeBlock's 64-byte blocks.
func genEscaped(t *rapid.T) []byte {
	var b []byte
	for range rapid.IntRange(0, 30).Draw(t, "ntok") {
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0, 1:
			b = append(b, bytes.Repeat([]byte{IAC}, rapid.IntRange(1, 150).Draw(t, "iacs"))...)
			b = append(b, rapid.SampledFrom([]byte{'a', NOP, GA, AYT, '\r', 0}).Draw(t, "after"))
		case 2, 3:
			for _, x := range rapid.SliceOfN(rapid.SampledFrom([]byte{'a', 0, '\r', '\n', 0xfe, 0x8d, IAC}), 1, 100).Draw(t, "data") {
				b = append(b, x)
				if x == IAC {
					b = append(b, IAC)
				}
			}
		case 4:
			b = append(b, rapid.SampledFrom([]string{"\r\x00", "\r\n", "\r\r\x00", "\r\x00\x00", "\r\xff\xff\x00"}).Draw(t, "cr")...)
		case 5:
			b = append(b, IAC, rapid.SampledFrom([]byte{NOP, GA, EOR, AYT, DM, SE, 3}).Draw(t, "cmd"))
		case 6, 7:
			b = append(b, IAC, rapid.SampledFrom([]byte{WILL, WONT, DO, DONT}).Draw(t, "verb"),
				rapid.SampledFrom([]byte{BINARY, BINARY, ECHO, NAWS, TTYPE, 200}).Draw(t, "opt"))
		case 8:
			b = append(b, IAC, SB, TTYPE, SubSEND, IAC, IAC, IAC, SE)
		case 9:
			b = append(b, bytes.Repeat([]byte("xyz"), rapid.IntRange(1, 40).Draw(t, "plain"))...)
		}
	}
	return b
}

// TestEscapedSplitRandom: escaped binary streams decode as the reference
// says, and the same whether fed whole, cut anywhere, or moved between
// Conns through snapshots at the cuts.
func TestEscapedSplitRandom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		stream := genEscaped(t)
		cfg := rapid.SampledFrom([]Config{{}, testCfg}).Draw(t, "cfg")
		whole := feed(cfg, stream)
		if want := refDecode(stream); !bytes.Equal(whole.data, want) {
			t.Fatalf("data\n got %q\nwant %q", whole.data, want)
		}
		if whole.emptyCalls != 0 {
			t.Fatal("empty Data call")
		}
		cuts := drawCuts(t, len(stream))
		if d := whole.diff(feed(cfg, cutAt(stream, cuts)...)); d != "" {
			t.Fatalf("split at %v:\n%s", cuts, d)
		}
		if d := whole.diff(feedSnap(t, cfg, cutAt(stream, cuts)...)); d != "" {
			t.Fatalf("snapshots at %v:\n%s", cuts, d)
		}
	})
}

// TestEscapedOneDataCall: the data of a chunk reaches Data in one call per
// stretch between commands, however many escapes it holds.
func TestEscapedOneDataCall(t *testing.T) {
	tests := []struct {
		name    string
		dropNOP bool
		in      []byte
		data    []byte
		calls   int
	}{
		{"all 0xFF", false, bytes.Repeat([]byte{IAC}, 64<<10), bytes.Repeat([]byte{IAC}, 32<<10), 1},
		{"0xFF and CR NUL", false, bytes.Repeat([]byte("a\xff\xff\r\x00b\r\n"), 1000), bytes.Repeat([]byte("a\xff\rb\r\n"), 1000), 1},
		{"split by a GA", false, cat(bytes.Repeat([]byte{IAC}, 200), IAC, GA, bytes.Repeat([]byte{IAC}, 200)), bytes.Repeat([]byte{IAC}, 200), 2},
		{"plain, then escaped", false, cat("hello ", IAC, IAC, " world"), []byte("hello \xff world"), 1},
		{"plain, command, escaped", false, cat("hello ", IAC, NOP, IAC, IAC, " world"), []byte("hello \xff world"), 2},
		{"dropped NOPs", true, bytes.Repeat([]byte("a\xff\xf1\xff\xff"), 1000), bytes.Repeat([]byte("a\xff"), 1000), 1},
		{"plain, dropped NOP", true, cat("hello ", IAC, NOP, " world"), []byte("hello  world"), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := feed(Config{DropNOP: tc.dropNOP}, tc.in)
			if !bytes.Equal(r.data, tc.data) {
				t.Fatalf("data %q\nwant %q", r.data, tc.data)
			}
			if r.dataCalls != tc.calls {
				t.Fatalf("%d Data calls, want %d", r.dataCalls, tc.calls)
			}
		})
	}
}

// TestDataValidUntilReceiveReturns: a Sink may keep the slices Data gets
// until Receive returns (the plugin gathers a chunk's runs that way), even
// when the unescape buffer grows in the middle of the chunk.
func TestDataValidUntilReceiveReturns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		stream := genEscaped(t)
		cuts := drawCuts(t, len(stream))
		c := New(Config{})
		var kept [][]byte
		var copied []byte
		s := &funcSink{data: func(p []byte) {
			kept = append(kept, p)
			copied = append(copied, p...)
		}}
		for _, piece := range cutAt(stream, cuts) {
			kept, copied = kept[:0], copied[:0]
			c.Receive(piece, s)
			if got := bytes.Join(kept, nil); !bytes.Equal(got, copied) {
				t.Fatalf("piece %q: kept slices changed before Receive returned:\n %q\nwant %q", piece, got, copied)
			}
		}
	})
}

// TestEscapedBinaryChangedFromEvent: a Sink that asks for BINARY off while
// handling an event in the middle of escaped data gets CR NUL undone from
// there on, as it would if the chunk had been cut at the event.
func TestEscapedBinaryChangedFromEvent(t *testing.T) {
	in := cat(bytes.Repeat([]byte{IAC}, 100), "a\r\x00", IAC, GA, "b\r\x00", bytes.Repeat([]byte{IAC}, 100), "c\r\x00")
	for _, off := range []bool{false, true} {
		c := New(Config{})
		var got []byte
		s := &funcSink{data: func(p []byte) { got = append(got, p...) }}
		s.event = func(e Event) {
			if e.Kind == EventPrompt && off {
				c.Request(BINARY, false, false, s)
			}
		}
		c.Receive(cat(IAC, WILL, BINARY), s)
		c.Receive(in, s)
		ff := string(bytes.Repeat([]byte{IAC}, 50))
		want := ff + "a\r\x00b\r\x00" + ff + "c\r\x00"
		if off {
			want = ff + "a\r\x00b\r" + ff + "c\r"
		}
		if string(got) != want {
			t.Errorf("BINARY off at GA %v:\n got %q\nwant %q", off, got, want)
		}
	}
}

// TestDropNOP: with Config.DropNOP, a stream gives the same data, replies
// and events except the NOPs', fed whole or cut anywhere, with or without
// a snapshot hop at the cuts.
func TestDropNOP(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var stream []byte
		if rapid.Bool().Draw(t, "escaped") {
			stream = genEscaped(t)
		} else {
			stream = genStream(t)
		}
		cfg := rapid.SampledFrom([]Config{{}, testCfg}).Draw(t, "cfg")
		want := feed(cfg, stream)
		kept := want.events[:0:0]
		for _, e := range want.events {
			if e.Kind != EventCommand || e.Command != NOP {
				kept = append(kept, e)
			}
		}
		want.events = kept
		for i := range want.sends {
			want.sends[i].EventAt = 0 // counts the NOP events before the send
		}
		cfg.DropNOP = true
		cuts := drawCuts(t, len(stream))
		for _, got := range []*recorder{feed(cfg, cutAt(stream, cuts)...), feedSnap(t, cfg, cutAt(stream, cuts)...)} {
			for i := range got.sends {
				got.sends[i].EventAt = 0
			}
			if d := want.diff(got); d != "" {
				t.Fatalf("cut at %v:\n%s", cuts, d)
			}
		}
	})
}
