package proto

import (
	"bytes"
	"slices"
	"testing"
)

func neg(v, o byte) string { return string([]byte{IAC, v, o}) }

func opt(o byte, local, on bool) recEvent {
	return recEvent{Kind: EventOption, Option: o, Local: local, Enabled: on}
}

// strip removes positions from recorded events for table comparisons.
func strip(ev []recEvent) []recEvent {
	out := []recEvent{}
	for _, e := range ev {
		e.DataPos, e.SendPos = 0, 0
		out = append(out, e)
	}
	return out
}

func TestNegotiationTable(t *testing.T) {
	const (
		L = true  // local: our WILL/WONT
		R = false // remote: peer's WILL/WONT
	)
	nawsDefault := string([]byte{IAC, SB, NAWS, 0, 80, 0, 24, IAC, SE})
	tests := []struct {
		name   string
		pre    func(c *Conn, s Sink) // requests made before the input
		in     []byte
		sends  []string
		events []recEvent
	}{
		// Remote side: peer WILL -> we DO / DONT.
		{name: "WILL ECHO accepted", in: cat(IAC, WILL, ECHO), sends: []string{neg(DO, ECHO)}, events: []recEvent{opt(ECHO, R, true)}},
		{name: "WILL SGA accepted", in: cat(IAC, WILL, SGA), sends: []string{neg(DO, SGA)}, events: []recEvent{opt(SGA, R, true)}},
		{name: "WILL BINARY accepted", in: cat(IAC, WILL, BINARY), sends: []string{neg(DO, BINARY)}, events: []recEvent{opt(BINARY, R, true)}},
		{name: "WILL EOR accepted", in: cat(IAC, WILL, EOROPT), sends: []string{neg(DO, EOROPT)}, events: []recEvent{opt(EOROPT, R, true)}},
		{name: "WILL TTYPE refused", in: cat(IAC, WILL, TTYPE), sends: []string{neg(DONT, TTYPE)}},
		{name: "WILL STATUS refused", in: cat(IAC, WILL, STATUS), sends: []string{neg(DONT, STATUS)}},
		{name: "WILL NAWS refused", in: cat(IAC, WILL, NAWS), sends: []string{neg(DONT, NAWS)}},
		{name: "WILL unknown refused", in: cat(IAC, WILL, 200), sends: []string{neg(DONT, 200)}},
		{name: "WILL refused each time", in: cat(IAC, WILL, 200, IAC, WILL, 200), sends: []string{neg(DONT, 200), neg(DONT, 200)}},
		{name: "WILL ECHO twice answered once", in: cat(IAC, WILL, ECHO, IAC, WILL, ECHO), sends: []string{neg(DO, ECHO)}, events: []recEvent{opt(ECHO, R, true)}},
		{name: "WONT ECHO when off: silence", in: cat(IAC, WONT, ECHO)},
		{name: "WONT unknown when off: silence", in: cat(IAC, WONT, 200)},
		{name: "WILL then WONT ECHO", in: cat(IAC, WILL, ECHO, IAC, WONT, ECHO, IAC, WONT, ECHO),
			sends:  []string{neg(DO, ECHO), neg(DONT, ECHO)},
			events: []recEvent{opt(ECHO, R, true), opt(ECHO, R, false)}},

		// Local side: peer DO -> we WILL / WONT.
		{name: "DO TTYPE accepted", in: cat(IAC, DO, TTYPE), sends: []string{neg(WILL, TTYPE)}, events: []recEvent{opt(TTYPE, L, true)}},
		{name: "DO TSPEED accepted", in: cat(IAC, DO, TSPEED), sends: []string{neg(WILL, TSPEED)}, events: []recEvent{opt(TSPEED, L, true)}},
		{name: "DO NEW-ENVIRON accepted", in: cat(IAC, DO, NEWENVIRON), sends: []string{neg(WILL, NEWENVIRON)}, events: []recEvent{opt(NEWENVIRON, L, true)}},
		{name: "DO BINARY accepted", in: cat(IAC, DO, BINARY), sends: []string{neg(WILL, BINARY)}, events: []recEvent{opt(BINARY, L, true)}},
		{name: "DO SGA accepted", in: cat(IAC, DO, SGA), sends: []string{neg(WILL, SGA)}, events: []recEvent{opt(SGA, L, true)}},
		{name: "DO NAWS accepted and size sent", in: cat(IAC, DO, NAWS), sends: []string{neg(WILL, NAWS), nawsDefault}, events: []recEvent{opt(NAWS, L, true)}},
		{name: "DO NAWS twice: one WILL, one size", in: cat(IAC, DO, NAWS, IAC, DO, NAWS), sends: []string{neg(WILL, NAWS), nawsDefault}, events: []recEvent{opt(NAWS, L, true)}},
		{name: "DO STATUS refused", in: cat(IAC, DO, STATUS), sends: []string{neg(WONT, STATUS)}},
		{name: "DO LINEMODE refused", in: cat(IAC, DO, LINEMODE), sends: []string{neg(WONT, LINEMODE)}},
		{name: "DO LFLOW refused", in: cat(IAC, DO, LFLOW), sends: []string{neg(WONT, LFLOW)}},
		{name: "DO ECHO refused", in: cat(IAC, DO, ECHO), sends: []string{neg(WONT, ECHO)}},
		{name: "DO TM refused", in: cat(IAC, DO, TM), sends: []string{neg(WONT, TM)}},
		{name: "DO EOR refused", in: cat(IAC, DO, EOROPT), sends: []string{neg(WONT, EOROPT)}},
		{name: "DO unknown refused", in: cat(IAC, DO, 77), sends: []string{neg(WONT, 77)}},
		{name: "DONT when off: silence", in: cat(IAC, DONT, TTYPE, IAC, DONT, 77)},
		{name: "DO then DONT TTYPE", in: cat(IAC, DO, TTYPE, IAC, DONT, TTYPE, IAC, DONT, TTYPE),
			sends:  []string{neg(WILL, TTYPE), neg(WONT, TTYPE)},
			events: []recEvent{opt(TTYPE, L, true), opt(TTYPE, L, false)}},

		// Our own requests (WANTYES / WANTNO and the queue bit).
		{name: "request WILL NAWS, peer agrees",
			pre:    func(c *Conn, s Sink) { c.Request(NAWS, L, true, s) },
			in:     cat(IAC, DO, NAWS),
			sends:  []string{neg(WILL, NAWS), nawsDefault},
			events: []recEvent{opt(NAWS, L, true)}},
		{name: "request WILL NAWS, peer refuses: no reply",
			pre:   func(c *Conn, s Sink) { c.Request(NAWS, L, true, s) },
			in:    cat(IAC, DONT, NAWS, IAC, DONT, NAWS),
			sends: []string{neg(WILL, NAWS)}},
		{name: "request DO ECHO, peer agrees: no reply",
			pre:    func(c *Conn, s Sink) { c.Request(ECHO, R, true, s) },
			in:     cat(IAC, WILL, ECHO),
			sends:  []string{neg(DO, ECHO)},
			events: []recEvent{opt(ECHO, R, true)}},
		{name: "request DO of refused option is allowed",
			pre:    func(c *Conn, s Sink) { c.Request(STATUS, R, true, s) },
			in:     cat(IAC, WILL, STATUS),
			sends:  []string{neg(DO, STATUS)},
			events: []recEvent{opt(STATUS, R, true)}},
		{name: "request twice sends once",
			pre:   func(c *Conn, s Sink) { c.Request(ECHO, R, true, s); c.Request(ECHO, R, true, s) },
			sends: []string{neg(DO, ECHO)}},
		{name: "enable then disable while pending: queued, then WANTNO",
			pre: func(c *Conn, s Sink) {
				c.Request(ECHO, R, true, s)
				c.Request(ECHO, R, false, s) // WANTYES OPPOSITE: nothing sent
			},
			in:    cat(IAC, WILL, ECHO, IAC, WONT, ECHO), // WILL -> WANTNO + DONT; WONT -> NO
			sends: []string{neg(DO, ECHO), neg(DONT, ECHO)}},
		{name: "enable, disable, enable again cancels the queue",
			pre: func(c *Conn, s Sink) {
				c.Request(ECHO, R, true, s)
				c.Request(ECHO, R, false, s)
				c.Request(ECHO, R, true, s)
			},
			in:     cat(IAC, WILL, ECHO),
			sends:  []string{neg(DO, ECHO)},
			events: []recEvent{opt(ECHO, R, true)}},
		{name: "disable then enable while WANTNO: queued WANTYES after WONT",
			pre: func(c *Conn, s Sink) {
				c.Receive(cat(IAC, WILL, ECHO), s)
				c.Request(ECHO, R, false, s)
				c.Request(ECHO, R, true, s)
			},
			in:     cat(IAC, WONT, ECHO, IAC, WILL, ECHO),
			sends:  []string{neg(DO, ECHO), neg(DONT, ECHO), neg(DO, ECHO)},
			events: []recEvent{opt(ECHO, R, true), opt(ECHO, R, false), opt(ECHO, R, true)}},
		{name: "WANTNO answered by WILL (error): NO, silent",
			pre: func(c *Conn, s Sink) {
				c.Receive(cat(IAC, DO, TTYPE), s)
				c.Request(TTYPE, L, false, s)
			},
			in:     cat(IAC, DO, TTYPE),
			sends:  []string{neg(WILL, TTYPE), neg(WONT, TTYPE)},
			events: []recEvent{opt(TTYPE, L, true), opt(TTYPE, L, false)}},
		{name: "WANTYES OPPOSITE answered by DONT: NO, silent",
			pre: func(c *Conn, s Sink) {
				c.Request(NAWS, L, true, s)
				c.Request(NAWS, L, false, s)
			},
			in:    cat(IAC, DONT, NAWS),
			sends: []string{neg(WILL, NAWS)}},
		{name: "disable when off: nothing", pre: func(c *Conn, s Sink) { c.Request(NAWS, L, false, s) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			r := &recorder{}
			if tc.pre != nil {
				tc.pre(c, r)
			}
			c.Receive(tc.in, r)
			if got := r.sendStrings(); !slices.Equal(got, tc.sends) {
				t.Errorf("sends\n got %q\nwant %q", got, tc.sends)
			}
			want := tc.events
			if want == nil {
				want = []recEvent{}
			}
			if got := strip(r.events); !slices.Equal(got, want) {
				t.Errorf("events\n got %+v\nwant %+v", got, want)
			}
			if len(r.data) != 0 {
				t.Errorf("unexpected data %q", r.data)
			}
			for o := range 256 {
				if !validQ(c.us[o]) || !validQ(c.him[o]) {
					t.Errorf("invalid state for option %d: %d %d", o, c.us[o], c.him[o])
				}
			}
		})
	}
}

func TestEnabledAndPending(t *testing.T) {
	c := New(Config{})
	r := &recorder{}
	c.Request(NAWS, true, true, r)
	if c.Enabled(NAWS, true) || !c.Pending(NAWS, true) {
		t.Fatal("NAWS should be pending")
	}
	c.Receive(cat(IAC, DO, NAWS, IAC, WILL, ECHO), r)
	if !c.Enabled(NAWS, true) || c.Pending(NAWS, true) || !c.Enabled(ECHO, false) || c.Enabled(ECHO, true) {
		t.Fatal("wrong states")
	}
}

func TestSubnegotiationAnswers(t *testing.T) {
	sb := func(o byte, parts ...any) string {
		return string(cat(IAC, SB, o, cat(parts...), IAC, SE))
	}
	tests := []struct {
		name  string
		cfg   Config
		in    []byte
		sends []string
	}{
		{name: "TTYPE default", in: cat(IAC, DO, TTYPE, IAC, SB, TTYPE, SubSEND, IAC, SE),
			sends: []string{neg(WILL, TTYPE), sb(TTYPE, SubIS, "xterm-256color")}},
		{name: "TTYPE 0xFF doubled", cfg: Config{Term: "a\xffb"}, in: cat(IAC, DO, TTYPE, IAC, SB, TTYPE, SubSEND, IAC, SE),
			sends: []string{neg(WILL, TTYPE), sb(TTYPE, SubIS, "a", IAC, IAC, "b")}},
		{name: "TTYPE single term repeats", cfg: Config{Term: "ansi"},
			in:    cat(IAC, DO, TTYPE, bytes.Repeat(cat(IAC, SB, TTYPE, SubSEND, IAC, SE), 3)),
			sends: []string{neg(WILL, TTYPE), sb(TTYPE, SubIS, "ansi"), sb(TTYPE, SubIS, "ansi"), sb(TTYPE, SubIS, "ansi")}},
		{name: "TTYPE cycle (RFC 1091)", cfg: Config{Term: "A", ExtraTerms: []string{"B", "C"}},
			in: cat(IAC, DO, TTYPE, bytes.Repeat(cat(IAC, SB, TTYPE, SubSEND, IAC, SE), 6)),
			sends: []string{neg(WILL, TTYPE), sb(TTYPE, SubIS, "A"), sb(TTYPE, SubIS, "B"), sb(TTYPE, SubIS, "C"),
				sb(TTYPE, SubIS, "C"), sb(TTYPE, SubIS, "A"), sb(TTYPE, SubIS, "B")}},
		{name: "TTYPE cycle restarts when re-enabled", cfg: Config{Term: "A", ExtraTerms: []string{"B"}},
			in:    cat(IAC, DO, TTYPE, IAC, SB, TTYPE, SubSEND, IAC, SE, IAC, DONT, TTYPE, IAC, DO, TTYPE, IAC, SB, TTYPE, SubSEND, IAC, SE),
			sends: []string{neg(WILL, TTYPE), sb(TTYPE, SubIS, "A"), neg(WONT, TTYPE), neg(WILL, TTYPE), sb(TTYPE, SubIS, "A")}},
		{name: "TTYPE SEND while not enabled: ignored", in: cat(IAC, SB, TTYPE, SubSEND, IAC, SE)},
		{name: "TTYPE IS from server: ignored", in: cat(IAC, DO, TTYPE, IAC, SB, TTYPE, SubIS, "x", IAC, SE),
			sends: []string{neg(WILL, TTYPE)}},
		{name: "TSPEED default", in: cat(IAC, DO, TSPEED, IAC, SB, TSPEED, SubSEND, IAC, SE),
			sends: []string{neg(WILL, TSPEED), sb(TSPEED, SubIS, "38400,38400")}},
		{name: "TSPEED configured", cfg: Config{Speed: "9600,4800"}, in: cat(IAC, DO, TSPEED, IAC, SB, TSPEED, SubSEND, IAC, SE),
			sends: []string{neg(WILL, TSPEED), sb(TSPEED, SubIS, "9600,4800")}},
		{name: "NEW-ENVIRON none configured: empty IS", in: cat(IAC, DO, NEWENVIRON, IAC, SB, NEWENVIRON, SubSEND, IAC, SE),
			sends: []string{neg(WILL, NEWENVIRON), sb(NEWENVIRON, SubIS)}},
		{name: "NEW-ENVIRON none configured, vars asked: empty IS", in: cat(IAC, DO, NEWENVIRON, IAC, SB, NEWENVIRON, SubSEND, EnvVAR, "USER", EnvUSERVAR, IAC, SE),
			sends: []string{neg(WILL, NEWENVIRON), sb(NEWENVIRON, SubIS)}},
		{name: "NEW-ENVIRON all, escaped", cfg: testCfg, in: cat(IAC, DO, NEWENVIRON, IAC, SB, NEWENVIRON, SubSEND, IAC, SE),
			sends: []string{neg(WILL, NEWENVIRON), sb(NEWENVIRON, SubIS,
				EnvVAR, "DISPLAY", EnvVALUE, ":0",
				EnvUSERVAR, "LANG", EnvVALUE, "en", EnvESC, EnvVALUE, IAC, IAC, EnvESC, EnvESC,
				EnvUSERVAR, "ODD", EnvESC, EnvUSERVAR, EnvVALUE, "v",
				EnvVAR, "USER", EnvVALUE, "bob")}},
		{name: "NEW-ENVIRON VAR only", cfg: testCfg, in: cat(IAC, DO, NEWENVIRON, IAC, SB, NEWENVIRON, SubSEND, EnvVAR, IAC, SE),
			sends: []string{neg(WILL, NEWENVIRON), sb(NEWENVIRON, SubIS,
				EnvVAR, "DISPLAY", EnvVALUE, ":0", EnvVAR, "USER", EnvVALUE, "bob")}},
		{name: "NEW-ENVIRON named (escaped name, wrong type, unknown)", cfg: testCfg,
			in: cat(IAC, DO, NEWENVIRON, IAC, SB, NEWENVIRON, SubSEND, EnvUSERVAR, "ODD", EnvESC, EnvUSERVAR,
				EnvUSERVAR, "USER", EnvVAR, "USER", EnvVAR, "NOPE", IAC, SE),
			sends: []string{neg(WILL, NEWENVIRON), sb(NEWENVIRON, SubIS,
				EnvUSERVAR, "ODD", EnvESC, EnvUSERVAR, EnvVALUE, "v", EnvVAR, "USER", EnvVALUE, "bob")}},
		{name: "NAWS 255 columns doubled", cfg: Config{Cols: 255, Rows: 24}, in: cat(IAC, DO, NAWS),
			sends: []string{neg(WILL, NAWS), sb(NAWS, 0, IAC, IAC, 0, 24)}},
		{name: "NAWS 0xFFFF x 0xFF00 doubled", cfg: Config{Cols: 0xFFFF, Rows: 0xFF00}, in: cat(IAC, DO, NAWS),
			sends: []string{neg(WILL, NAWS), sb(NAWS, IAC, IAC, IAC, IAC, IAC, IAC, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := feed(tc.cfg, tc.in)
			if got := r.sendStrings(); !slices.Equal(got, tc.sends) {
				t.Errorf("sends\n got %q\nwant %q", got, tc.sends)
			}
		})
	}
}

func TestUnhandledSubnegEvent(t *testing.T) {
	r := feed(Config{}, cat(IAC, SB, 201, "a", IAC, IAC, "b", IAC, SE, IAC, SB, TTYPE, SubSEND, IAC, SE))
	want := []recEvent{
		{Kind: EventSubneg, Option: 201, Payload: "a\xffb"},
		{Kind: EventSubneg, Option: TTYPE, Payload: "\x01"},
	}
	if got := strip(r.events); !slices.Equal(got, want) {
		t.Fatalf("got %+v", got)
	}
	if len(r.sends) != 0 {
		t.Fatalf("sends %q", r.sendStrings())
	}
}

func TestSubnegOverflow(t *testing.T) {
	payload := bytes.Repeat([]byte{'x'}, MaxSubneg+100)
	in := cat(IAC, DO, TTYPE, IAC, SB, TTYPE, SubSEND, payload, IAC, SE, "after")
	r := feed(Config{}, in)
	if string(r.data) != "after" {
		t.Fatalf("data %q", r.data)
	}
	if len(r.sends) != 1 { // only WILL TTYPE, the SEND is not answered
		t.Fatalf("sends %q", r.sendStrings())
	}
	ev := r.events[len(r.events)-1]
	if ev.Kind != EventSubneg || len(ev.Payload) != MaxSubneg || ev.Payload[0] != SubSEND {
		t.Fatalf("event %v len %d", ev.Kind, len(ev.Payload))
	}
}

func TestIACInsideSBNotSE(t *testing.T) {
	// libtelnet behaviour: the SB is finished (and answered), then the byte
	// after IAC is processed as a command.
	r := feed(Config{}, cat(IAC, DO, TTYPE, IAC, SB, TTYPE, SubSEND, IAC, GA, "z", IAC, SB, 201, IAC, WILL, ECHO))
	want := []string{neg(WILL, TTYPE), string(cat(IAC, SB, TTYPE, SubIS, "xterm-256color", IAC, SE)), neg(DO, ECHO)}
	if got := r.sendStrings(); !slices.Equal(got, want) {
		t.Fatalf("sends %q", got)
	}
	if string(r.data) != "z" {
		t.Fatalf("data %q", r.data)
	}
	wantEv := []recEvent{
		opt(TTYPE, true, true),
		{Kind: EventPrompt, Prompt: PromptGA},
		{Kind: EventSubneg, Option: 201, Payload: ""},
		opt(ECHO, false, true),
	}
	if got := strip(r.events); !slices.Equal(got, wantEv) {
		t.Fatalf("events %+v", got)
	}
}

func TestReceiveData(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		data  string
		plain bool
	}{
		{"plain", cat("hello\r\nworld\n"), "hello\r\nworld\n", true},
		{"bare CR passes", cat("a\rb"), "a\rb", true},
		{"CR at end", cat("ab\r"), "ab\r", true},
		{"CR NUL", cat("a\r\x00b"), "a\rb", false},
		{"CR NUL at end", cat("a\r\x00"), "a\r", false},
		{"CR CR NUL", cat("\r\r\x00"), "\r\r", false},
		{"CR NUL NUL", cat("\r\x00\x00"), "\r\x00", false},
		{"NUL alone", cat("\x00a"), "\x00a", true},
		{"IAC IAC", cat("a", IAC, IAC, "b"), "a\xffb", false},
		{"IAC IAC IAC IAC", cat(IAC, IAC, IAC, IAC), "\xff\xff", false},
		{"CR IAC NOP NUL", cat("\r", IAC, NOP, "\x00"), "\r\x00", false},
		{"binary keeps CR NUL", cat(IAC, WILL, BINARY, "a\r\x00b\r"), "a\r\x00b\r", false},
		{"binary off again", cat(IAC, WILL, BINARY, "\r\x00", IAC, WONT, BINARY, "\r\x00"), "\r\x00\r", false},
		{"empty", nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			r := &recorder{}
			plain := c.Receive(tc.in, r)
			if string(r.data) != tc.data {
				t.Errorf("data %q want %q", r.data, tc.data)
			}
			if plain != tc.plain {
				t.Errorf("plain %v", plain)
			}
			if plain && r.dataCalls != 1 {
				t.Errorf("plain with %d Data calls", r.dataCalls)
			}
			if r.emptyCalls != 0 {
				t.Errorf("%d empty Data calls", r.emptyCalls)
			}
		})
	}
}

func TestPlainIsSameSlice(t *testing.T) {
	c := New(Config{})
	in := []byte("some text\r\nmore\r\n")
	var got []byte
	s := &funcSink{data: func(p []byte) { got = p }}
	if !c.Receive(in, s) || &got[0] != &in[0] || len(got) != len(in) {
		t.Fatal("plain chunk not passed through as is")
	}
	// CR at the end of a chunk, NUL at the start of the next.
	if !c.Receive([]byte("x\r"), s) {
		t.Fatal("want plain")
	}
	if c.Receive([]byte("\x00y"), s) || string(got) != "y" {
		t.Fatalf("got %q", got)
	}
}

type funcSink struct {
	data  func([]byte)
	send  func([]byte)
	event func(Event)
}

func (f *funcSink) Data(p []byte) {
	if f.data != nil {
		f.data(p)
	}
}
func (f *funcSink) Send(p []byte) {
	if f.send != nil {
		f.send(p)
	}
}
func (f *funcSink) Event(e Event) {
	if f.event != nil {
		f.event(e)
	}
}

func TestPromptsAndCommandsOrdered(t *testing.T) {
	r := feed(Config{}, cat("login: ", IAC, GA, "pw", IAC, EOR, "x", IAC, AYT, IAC, NOP, IAC, DM, IAC, SE, IAC, 7))
	want := []recEvent{
		{Kind: EventPrompt, Prompt: PromptGA, DataPos: 7},
		{Kind: EventPrompt, Prompt: PromptEOR, DataPos: 9},
		{Kind: EventCommand, Command: AYT, DataPos: 10},
		{Kind: EventCommand, Command: NOP, DataPos: 10},
		{Kind: EventCommand, Command: DM, DataPos: 10},
		{Kind: EventCommand, Command: SE, DataPos: 10},
		{Kind: EventCommand, Command: 7, DataPos: 10},
	}
	if !slices.Equal(r.events, want) {
		t.Fatalf("events %+v", r.events)
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name   string
		binary bool
		in     string
		want   string
	}{
		{"plain", false, "ls -l\r\n", "ls -l\r\n"},
		{"IAC doubled", false, "a\xffb\xff", "a\xff\xffb\xff\xff"},
		{"bare CR", false, "a\rb", "a\r\x00b"},
		{"CR at end", false, "a\r", "a\r\x00"},
		{"CR CR LF", false, "\r\r\n", "\r\x00\r\n"},
		{"binary CR untouched", true, "a\rb\r", "a\rb\r"},
		{"binary IAC doubled", true, "\r\xff", "\r\xff\xff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			r := &recorder{}
			if tc.binary {
				c.Receive(cat(IAC, DO, BINARY), r)
				r.sends = nil
			}
			c.Encode([]byte(tc.in), r)
			if got := r.sendStrings(); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
	r := &recorder{}
	New(Config{}).Encode(nil, r)
	if len(r.sends) != 0 {
		t.Fatal("empty Encode sent something")
	}
}

func TestSendCommandAndResize(t *testing.T) {
	c := New(Config{})
	r := &recorder{}
	for _, cmd := range []byte{IP, BRK, AYT, NOP, AO, EC, EL, GA, DM, EOR} {
		c.SendCommand(cmd, r)
	}
	for _, cmd := range []byte{WILL, WONT, DO, DONT, SB, IAC} {
		c.SendCommand(cmd, r) // ignored
	}
	want := []string{}
	for _, cmd := range []byte{IP, BRK, AYT, NOP, AO, EC, EL, GA, DM, EOR} {
		want = append(want, string([]byte{IAC, cmd}))
	}
	if got := r.sendStrings(); !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}

	r = &recorder{}
	c.Resize(100, 40, r) // NAWS not enabled: stored only
	if len(r.sends) != 0 {
		t.Fatal("Resize sent without NAWS")
	}
	c.Receive(cat(IAC, DO, NAWS), r)
	c.Resize(255, 0xFF, r)
	want = []string{neg(WILL, NAWS), string(cat(IAC, SB, NAWS, 0, 100, 0, 40, IAC, SE)),
		string(cat(IAC, SB, NAWS, 0, IAC, IAC, 0, IAC, IAC, IAC, SE))}
	if got := r.sendStrings(); !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}
	if w, h := c.Size(); w != 255 || h != 255 {
		t.Fatal("Size")
	}
}

func TestReentrantRequestFromEvent(t *testing.T) {
	// A host that turns NAWS off as soon as it is enabled must see a
	// consistent sequence: WILL, size, WONT.
	c := New(Config{})
	var sends []string
	s := &funcSink{send: func(p []byte) { sends = append(sends, string(p)) }}
	s.event = func(e Event) {
		if e.Kind == EventOption && e.Option == NAWS && e.Enabled {
			c.Request(NAWS, true, false, s)
		}
	}
	c.Receive(cat(IAC, DO, NAWS, IAC, DONT, NAWS), s)
	want := []string{neg(WILL, NAWS), string(cat(IAC, SB, NAWS, 0, 80, 0, 24, IAC, SE)), neg(WONT, NAWS)}
	if !slices.Equal(sends, want) {
		t.Fatalf("got %q", sends)
	}
}

func TestNoAllocs(t *testing.T) {
	c := New(testCfg)
	s := &funcSink{}
	var in []byte
	for _, v := range corpus() {
		in = append(in, v...)
	}
	in = append(in, IAC, DO, TTYPE, IAC, DO, NEWENVIRON, IAC, DO, NAWS, IAC, DO, TSPEED)
	in = append(in, cat(IAC, SB, NEWENVIRON, SubSEND, EnvVAR, "USER", EnvUSERVAR, IAC, SE)...)
	in = append(in, IAC, SB, TTYPE, SubSEND, IAC, SE)
	c.Receive(in, s) // warm the buffers
	c.Receive(in, s)
	user := []byte("a\xff\rb")
	n := testing.AllocsPerRun(20, func() {
		c.Receive(in, s)
		c.Encode(user, s)
		c.Resize(255, 255, s)
	})
	if n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

func TestNames(t *testing.T) {
	for o, want := range map[byte]string{BINARY: "BINARY", NAWS: "NAWS", NEWENVIRON: "NEW-ENVIRON", EOROPT: "EOR", 201: "GMCP", 150: "150"} {
		if got := OptionName(o); got != want {
			t.Errorf("OptionName(%d) = %q", o, got)
		}
	}
	for cmd, want := range map[byte]string{IAC: "IAC", SE: "SE", EOR: "EOR", GA: "GA", 3: "3"} {
		if got := CommandName(cmd); got != want {
			t.Errorf("CommandName(%d) = %q", cmd, got)
		}
	}
	if EventOption.String() != "option" || PromptEOR.String() != "EOR" {
		t.Error("String")
	}
}
