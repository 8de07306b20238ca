package proto

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"
)

// recEvent is a recorded Event with its position relative to Data and Send.
type recEvent struct {
	Kind    EventKind
	Option  byte
	Local   bool
	Enabled bool
	Command byte
	Prompt  PromptKind
	Payload string
	DataPos int // bytes of data delivered before the event
	SendPos int // Send calls made before the event
}

// recSend is a recorded Send call.
type recSend struct {
	B       string
	DataPos int
	EventAt int
}

// recorder is a Sink that records everything.
type recorder struct {
	data       []byte
	dataCalls  int
	emptyCalls int
	sends      []recSend
	events     []recEvent
}

func (r *recorder) Data(p []byte) {
	if len(p) == 0 {
		r.emptyCalls++
	}
	r.dataCalls++
	r.data = append(r.data, p...)
}

func (r *recorder) Send(p []byte) {
	r.sends = append(r.sends, recSend{B: string(p), DataPos: len(r.data), EventAt: len(r.events)})
}

func (r *recorder) Event(e Event) {
	r.events = append(r.events, recEvent{
		Kind: e.Kind, Option: e.Option, Local: e.Local, Enabled: e.Enabled,
		Command: e.Command, Prompt: e.Prompt, Payload: string(e.Payload),
		DataPos: len(r.data), SendPos: len(r.sends),
	})
}

func (r *recorder) sendStrings() []string {
	var s []string
	for _, x := range r.sends {
		s = append(s, x.B)
	}
	return s
}

// diff returns "" if the two recordings are the same stream of Data bytes,
// Sends and Events (Data call boundaries may differ).
func (r *recorder) diff(o *recorder) string {
	var b strings.Builder
	if !bytes.Equal(r.data, o.data) {
		fmt.Fprintf(&b, "data differs:\n  %q\n  %q\n", r.data, o.data)
	}
	if !slices.Equal(r.sends, o.sends) {
		fmt.Fprintf(&b, "sends differ:\n  %+v\n  %+v\n", r.sends, o.sends)
	}
	if !slices.Equal(r.events, o.events) {
		fmt.Fprintf(&b, "events differ:\n  %+v\n  %+v\n", r.events, o.events)
	}
	if r.emptyCalls+o.emptyCalls > 0 {
		fmt.Fprintf(&b, "empty Data calls: %d %d\n", r.emptyCalls, o.emptyCalls)
	}
	return b.String()
}

// feed runs pieces through a new Conn made from cfg.
func feed(cfg Config, pieces ...[]byte) *recorder {
	c := New(cfg)
	r := &recorder{}
	for _, p := range pieces {
		c.Receive(p, r)
	}
	return r
}

// feedSnap feeds pieces, moving the state into a fresh Conn through
// MarshalState/UnmarshalState between every two pieces.
func feedSnap(t fataler, cfg Config, pieces ...[]byte) *recorder {
	c := New(cfg)
	r := &recorder{}
	for _, p := range pieces {
		c.Receive(p, r)
		snap := c.MarshalState()
		// DropNOP is the host's choice, not part of the snapshot.
		n := New(Config{Term: "other", Cols: 1, Rows: 1, DropNOP: cfg.DropNOP})
		if err := n.UnmarshalState(snap); err != nil {
			t.Fatalf("UnmarshalState: %v", err)
		}
		if again := n.MarshalState(); !bytes.Equal(again, snap) {
			t.Fatalf("snapshot not stable:\n%x\n%x", snap, again)
		}
		c = n
	}
	return r
}

// testCfg exercises every configurable answer, including 0xFF bytes.
var testCfg = Config{
	Term:       "vt\xff100",
	ExtraTerms: []string{"XTERM", "MTTS 137"},
	Cols:       255,
	Rows:       0x1FF,
	Speed:      "9600,9600",
	Env: map[string]string{
		"USER":    "bob",
		"DISPLAY": ":0",
		"LANG":    "en\x01\xff\x02",
		"ODD\x03": "v",
	},
}

func cat(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b = append(b, v...)
		case byte:
			b = append(b, v)
		case int:
			b = append(b, byte(v))
		case []byte:
			b = append(b, v...)
		default:
			panic(fmt.Sprintf("cat: %T", p))
		}
	}
	return b
}

// corpus returns streams covering every command, every verb, the
// subnegotiations we answer, escapes and CR handling.
func corpus() map[string][]byte {
	m := map[string][]byte{}

	// Every verb with a range of options, twice, then flip-flopped.
	var neg []byte
	opts := []byte{BINARY, ECHO, 2, SGA, STATUS, TM, TTYPE, EOROPT, NAWS, TSPEED, LFLOW, LINEMODE, NEWENVIRON, 70, 201, 254, 255}
	for _, v := range []byte{WILL, DO, WILL, DO, WONT, DONT, WONT, DONT, DO, WILL} {
		for _, o := range opts {
			neg = append(neg, IAC, v, o)
		}
		neg = append(neg, "text\r\n"...)
	}
	m["negotiation"] = neg

	// Every command byte after IAC (except SB, handled below), with data
	// around, CR forms and prompt marks.
	d := cat("hello\r\nworld\r\x00bare\rcr", IAC, IAC, "ff", IAC, IAC, IAC, IAC)
	for cmd := EOR; cmd != SB; cmd++ {
		d = cat(d, "x", IAC, cmd)
	}
	d = cat(d, "y", IAC, 0, IAC, 100, IAC, 238, "\r", IAC, GA, "\x00\r\r\x00\r\n\n\r", IAC, IAC, "\r")
	d = cat(d, IAC, WILL, ECHO, "pw:", IAC, GA, IAC, WONT, ECHO, "ok", IAC, EOR, "\r\x00")
	m["data"] = d

	// Subnegotiations.
	s := cat(IAC, SB, TTYPE, SubSEND, IAC, SE) // before DO: unhandled
	s = cat(s, IAC, DO, TTYPE, IAC, DO, NAWS, IAC, DO, TSPEED, IAC, DO, NEWENVIRON)
	for range 4 {
		s = cat(s, IAC, SB, TTYPE, SubSEND, IAC, SE)
	}
	s = cat(s, "a", IAC, SB, TSPEED, SubSEND, IAC, SE, "b")
	s = cat(s, IAC, SB, NEWENVIRON, SubSEND, IAC, SE)
	s = cat(s, IAC, SB, NEWENVIRON, SubSEND, EnvVAR, IAC, SE)
	s = cat(s, IAC, SB, NEWENVIRON, SubSEND, EnvUSERVAR, "LANG", EnvVAR, "USER", EnvUSERVAR, "ODD", EnvESC, EnvUSERVAR, EnvVAR, "NOPE", IAC, SE)
	s = cat(s, IAC, SB, NAWS, 0, 80, 0, 24, IAC, SE)             // server NAWS: unhandled
	s = cat(s, IAC, SB, 201, "Core.Hello {}", IAC, IAC, IAC, SE) // IAC IAC in SB
	s = cat(s, IAC, SB, TTYPE, SubSEND, IAC, GA, "z")            // IAC + non-SE in SB
	s = cat(s, IAC, SB, TTYPE, SubSEND, IAC, IAC, IAC, NOP)      // IAC IAC then IAC NOP
	s = cat(s, IAC, SB, IAC, SubSEND, IAC, SE)                   // option byte 255
	s = cat(s, IAC, SB, 70, IAC, SE, IAC, SE)                    // empty SB, stray SE
	s = cat(s, IAC, WILL, BINARY, "bin\r\x00\r\n", IAC, IAC, "\r")
	s = cat(s, IAC, WONT, BINARY, "\x00nvt\r\x00", IAC, DONT, NAWS, IAC, DO, NAWS)
	m["subneg"] = s

	// Escaped binary data, laid out against unescapeBlock's 64-byte
	// blocks, which start where the copy starts (offset 0) and again after
	// each command: a CR NUL across the first block boundary, an IAC IAC
	// across the second, a command inside a block, an odd IAC run before a
	// command, CR IAC IAC NUL, an IAC ending one block with its command
	// starting the next, BINARY on and off, and a long run at the end.
	e := cat(IAC, IAC, "a\r\x00b", bytes.Repeat([]byte{IAC}, 56), "x\r")      // CR at 63
	e = cat(e, "\x00yz", bytes.Repeat([]byte{IAC}, 64))                       // a pair at 127, 128
	e = cat(e, IAC, NOP, "c\r\n", IAC, IAC, IAC, GA, "d\r", IAC, IAC, "\x00") // GA at 139
	e = cat(e, strings.Repeat("0123456789", 6)[:58], IAC, AYT)                // IAC at 140+63
	e = cat(e, IAC, WILL, BINARY, "e\r\x00f", IAC, IAC, IAC, WONT, BINARY, "g\r\x00")
	e = cat(e, bytes.Repeat([]byte{IAC}, 130), "h\r\x00")
	m["escaped"] = e

	// Long subnegotiation (overflow) followed by data.
	long := cat(IAC, SB, 201, bytes.Repeat([]byte{'a', IAC, IAC}, MaxSubneg/2+3), IAC, SE, "after")
	m["overflow"] = long
	return m
}

// genStream generates a telnet stream from the server: text, escapes,
// commands, negotiation and subnegotiations.
func genStream(t *rapid.T) []byte {
	n := rapid.IntRange(0, 40).Draw(t, "ntok")
	var b []byte
	opts := []byte{BINARY, ECHO, SGA, STATUS, TM, TTYPE, EOROPT, NAWS, TSPEED, LFLOW, LINEMODE, NEWENVIRON, 201, 255}
	for range n {
		switch rapid.IntRange(0, 10).Draw(t, "kind") {
		case 0, 1:
			b = append(b, rapid.SliceOfN(rapid.SampledFrom([]byte("ab \r\n\x00\t\x1b\x80\xfe")), 1, 20).Draw(t, "text")...)
		case 2:
			b = append(b, IAC, IAC)
		case 3:
			b = append(b, "\r\x00"...)
		case 4:
			b = append(b, "\r\n"...)
		case 5, 6:
			b = append(b, IAC, rapid.SampledFrom([]byte{WILL, WONT, DO, DONT}).Draw(t, "verb"), rapid.SampledFrom(opts).Draw(t, "opt"))
		case 7:
			b = append(b, IAC, rapid.ByteRange(EOR, GA).Draw(t, "cmd"))
		case 8:
			b = append(b, IAC, rapid.Byte().Draw(t, "any"))
		case 9:
			opt := rapid.SampledFrom([]byte{TTYPE, TSPEED, NEWENVIRON, NAWS, 201}).Draw(t, "sbopt")
			b = append(b, IAC, SB, opt)
			payload := rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, 2, 3, 'U', 'S', 'E', 'R', IAC}), 0, 12).Draw(t, "payload")
			for _, x := range payload {
				b = append(b, x)
				if x == IAC {
					b = append(b, IAC)
				}
			}
			b = append(b, IAC, rapid.SampledFrom([]byte{SE, SE, SE, GA, NOP}).Draw(t, "end"))
		case 10:
			b = append(b, IAC, DO, rapid.SampledFrom([]byte{TTYPE, TSPEED, NEWENVIRON}).Draw(t, "doopt"))
			b = append(b, IAC, SB, TTYPE, SubSEND, IAC, SE, IAC, SB, NEWENVIRON, SubSEND, IAC, SE)
		}
	}
	return b
}

// cutAt splits b at the given sorted positions.
func cutAt(b []byte, cuts []int) [][]byte {
	var pieces [][]byte
	prev := 0
	for _, c := range cuts {
		pieces = append(pieces, b[prev:c])
		prev = c
	}
	return append(pieces, b[prev:])
}

// drawCuts draws sorted cut positions in [0, n].
func drawCuts(t *rapid.T, n int) []int {
	cuts := rapid.SliceOfN(rapid.IntRange(0, n), 0, 12).Draw(t, "cuts")
	slices.Sort(cuts)
	return cuts
}

// fataler is the part of testing.TB and *rapid.T the helpers need.
type fataler interface {
	Fatalf(format string, args ...any)
}
