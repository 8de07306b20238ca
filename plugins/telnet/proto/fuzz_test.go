package proto

import (
	"bytes"
	"maps"
	"slices"
	"testing"
)

// refDecode is a deliberately naive, byte-at-a-time reference for the data
// a Conn delivers: the same rules, no scanning tricks, no negotiation
// engine. Remote BINARY is tracked directly from WILL/WONT BINARY, which is
// exact as long as the Conn made no requests of its own (the Q states of
// the peer's side then only ever move between NO and YES, and we accept
// BINARY).
func refDecode(in []byte) []byte {
	const (
		data = iota
		iac
		opt
		sbopt
		sb
		sbiac
	)
	var out []byte
	state, cr, binary := data, false, false
	var verb byte
	for i := 0; i < len(in); i++ {
		b := in[i]
		switch state {
		case data:
			if cr {
				cr = false
				if b == 0 {
					continue
				}
			}
			if b == IAC {
				state = iac
				continue
			}
			out = append(out, b)
			cr = b == '\r' && !binary
		case iac:
			state = data
			switch b {
			case IAC:
				out = append(out, IAC)
			case WILL, WONT, DO, DONT:
				verb, state = b, opt
			case SB:
				state = sbopt
			}
		case opt:
			state = data
			if b == BINARY && verb == WILL {
				binary = true
			}
			if b == BINARY && verb == WONT {
				binary = false
			}
		case sbopt:
			state = sb
		case sb:
			if b == IAC {
				state = sbiac
			}
		case sbiac:
			switch b {
			case SE:
				state = data
			case IAC:
				state = sb
			default:
				state = iac
				i-- // process b again as a command
			}
		}
	}
	return out
}

func TestRefDecodeAgreesOnCorpus(t *testing.T) {
	c := corpus()
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if got, want := feed(Config{}, c[name]).data, refDecode(c[name]); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
}

func FuzzReceive(f *testing.F) {
	for _, s := range corpus() {
		f.Add(s)
	}
	f.Add([]byte("plain text\r\nwith lines\r\n"))
	f.Add([]byte("\r"))
	f.Add([]byte{IAC})
	f.Add([]byte{IAC, SB})
	f.Add([]byte{IAC, SB, TTYPE, IAC})
	f.Add([]byte{'\r', IAC, IAC, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, cfg := range []Config{{}, testCfg, {DropNOP: true}} {
			c := New(cfg)
			r := &recorder{}
			plain := c.Receive(in, r)
			if r.emptyCalls != 0 {
				t.Fatal("empty Data call")
			}
			want := refDecode(in)
			if !bytes.Equal(r.data, want) {
				t.Fatalf("data\n got %q\nwant %q", r.data, want)
			}
			if len(in) > 0 && bytes.IndexByte(in, IAC) < 0 && bytes.IndexByte(in, '\r') < 0 {
				if !bytes.Equal(r.data, in) || !plain || r.dataCalls != 1 {
					t.Fatalf("plain input changed: plain=%v calls=%d", plain, r.dataCalls)
				}
			}
			if plain && (r.dataCalls != 1 || !bytes.Equal(r.data, in)) {
				t.Fatal("plain == true but input not passed through as one call")
			}
			for o := range 256 {
				if !validQ(c.us[o]) || !validQ(c.him[o]) {
					t.Fatalf("invalid Q state for %d", o)
				}
			}
			// Split at a point derived from the input, with and without a
			// snapshot hop: same results.
			if len(in) > 0 {
				k := int(in[len(in)/2]) * len(in) / 256
				if d := r.diff(feed(cfg, in[:k], in[k:])); d != "" {
					t.Fatalf("split at %d:\n%s", k, d)
				}
				if d := r.diff(feedSnap(t, cfg, in[:k], in[k:])); d != "" {
					t.Fatalf("snapshot at %d:\n%s", k, d)
				}
			}
		}
	})
}

func FuzzUnmarshalState(f *testing.F) {
	for _, s := range corpus() {
		c := New(testCfg)
		c.Receive(s[:len(s)/2], &recorder{})
		f.Add(c.MarshalState())
	}
	f.Add(New(Config{}).MarshalState())
	f.Add([]byte("TNP\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := New(Config{})
		if err := c.UnmarshalState(b); err != nil {
			return
		}
		snap := c.MarshalState()
		n := New(Config{})
		if err := n.UnmarshalState(snap); err != nil {
			t.Fatalf("re-marshalled snapshot rejected: %v", err)
		}
		if !bytes.Equal(n.MarshalState(), snap) {
			t.Fatal("snapshot not stable")
		}
		r := &recorder{}
		for _, s := range corpus() {
			c.Receive(s, r)
		}
		c.Resize(1, 2, r)
		c.Encode([]byte("a\r\xff"), r)
		c.Request(NAWS, true, true, r)
	})
}
