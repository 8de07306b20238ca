package abi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// Every typed event encodes to JSON that encoding/json reads back as the
// same members, and Decode gives back the same value.
func TestEventRoundTrip(t *testing.T) {
	evs := []Payload{
		&Prompt{Source: SourceDialect, Dialect: "cisco_ios", Hostname: "R1", Mode: "config", Submode: "config-if", Prompt: "R1(config-if)#"},
		&Prompt{Source: SourceDialect, Dialect: "linux", Mode: "user", Prompt: "$", User: "bob", Cwd: "~"},
		&Prompt{Source: SourceShell, ExitCode: ptr(1), DurationMs: ptr(int64(12))},
		&Prompt{Source: SourceTelnet, Mark: "EOR"},
		&Done{Source: SourceShell, ExitCode: ptr(0)},
		&Done{},
		&Command{Source: SourceShell},
		&Command{Source: SourceTelnet, Code: 0},
		&Command{Source: SourceTelnet, Code: 246},
		&Pager{Text: "--More--", Pages: 3, Answered: true},
		&Pager{Text: "-- more --", Pages: 1},
		&PagerLimit{Pages: 1000, Quit: true},
		&PagerLimit{Pages: 2},
		&Question{Text: "Proceed with reload? [confirm]"},
		&Login{Field: "password"},
		&Error{Text: "% Invalid input detected at '^' marker."},
		&Error{Ch: 4, Message: "channel 4: open: refused", Stage: "channel"},
		&Dialect{Name: "huawei", Detected: true},
		&Title{Title: "vim \"a\\b\"\t\x01 ünï"},
		&Option{Option: "NAWS", Side: "local", Enabled: true},
		&Connected{ServerVersion: "SSH-2.0-OpenSSH_9.6", Cipher: "chacha20-poly1305@openssh.com"},
		&Banner{Message: "welcome\r\n"},
		&Closed{Reason: "disconnected"},
		&Opened{Ch: 2},
		&Exit{Ch: 2, Code: ptr(0)},
		&Exit{Ch: 3, Signal: "TERM"},
		&ChannelClosed{Ch: 2},
		&PluginFailed{Plugin: "telnet", Version: "1.0.0", Error: "trap", Outcome: "restored"},
		&ChainOverflow{Error: "too much"},
		&Unknown{Type: "shout", Fields: map[string]any{"count": 3.0, "who": "me"}},
	}
	for _, e := range evs {
		b := e.AppendEvent(nil)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%T: %s is not JSON: %v", e, b, err)
		}
		if m["type"] != string(e.EventType()) {
			t.Errorf("%s: type %v, want %s", b, m["type"], e.EventType())
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("decode %s\n got %#v\nwant %#v", b, got, e)
		}
		if f := FieldsJSON(e); f != nil {
			var fm map[string]any
			if err := json.Unmarshal(f, &fm); err != nil || len(fm) != len(m)-1 {
				t.Errorf("fields of %s: %s (%v)", b, f, err)
			}
		} else if len(m) != 1 {
			t.Errorf("fields of %s: nil", b)
		}
	}
}

// An event stream as plugins built against ABI 1.0 emit it (no sources;
// exec output as base64 data events) still decodes, to the same typed
// values the 1.1 plugins' events decode to.
func TestDecodeV1Stream(t *testing.T) {
	cases := []struct {
		v1   string
		want Payload
	}{
		// dialect 1.0 (and today's dialect plugin)
		{`{"dialect":"cisco_ios","hostname":"R1","mode":"config","prompt":"R1(config)#","submode":"","type":"prompt"}`,
			&Prompt{Source: SourceDialect, Dialect: "cisco_ios", Hostname: "R1", Mode: "config", Prompt: "R1(config)#"}},
		{`{"type":"done"}`, &Done{}},
		{`{"pages":3,"text":"--More--","type":"pager"}`, &Pager{Text: "--More--", Pages: 3, Answered: true}},
		{`{"answered":false,"pages":1,"text":"--More--","type":"pager"}`, &Pager{Text: "--More--", Pages: 1}},
		{`{"pages":1000,"quit":true,"type":"pager_limit"}`, &PagerLimit{Pages: 1000, Quit: true}},
		{`{"text":"Proceed? [confirm]","type":"question"}`, &Question{Text: "Proceed? [confirm]"}},
		{`{"field":"enable","type":"login"}`, &Login{Field: "enable"}},
		{`{"text":"% Unknown command","type":"error"}`, &Error{Text: "% Unknown command"}},
		{`{"confident":false,"detected":true,"name":"frr","type":"dialect"}`, &Dialect{Name: "frr", Detected: true}},
		// telnet 1.0
		{`{"type":"option","option":"ECHO","side":"remote","enabled":true}`, &Option{Option: "ECHO", Side: "remote", Enabled: true}},
		{`{"type":"prompt","mark":"GA"}`, &Prompt{Source: SourceTelnet, Mark: "GA"}},
		{`{"type":"command","command":246}`, &Command{Source: SourceTelnet, Code: 246}},
		// shell 1.0
		{`{"type":"command"}`, &Command{Source: SourceShell}},
		{`{"exitCode":2,"source":"shell","type":"done"}`, &Done{Source: SourceShell, ExitCode: ptr(2)}},
		{`{"durationMs":5,"exitCode":2,"source":"shell","type":"prompt"}`, &Prompt{Source: SourceShell, ExitCode: ptr(2), DurationMs: ptr(int64(5))}},
		// vt 1.0
		{`{"title":"top","type":"title"}`, &Title{Title: "top"}},
		// ssh 1.0
		{`{"type":"connected","serverVersion":"SSH-2.0-x","cipher":"aes128-ctr"}`, &Connected{ServerVersion: "SSH-2.0-x", Cipher: "aes128-ctr"}},
		{`{"type":"opened","ch":2}`, &Opened{Ch: 2}},
		{`{"type":"data","ch":2,"stream":"stdout","data":"aGVsbG8K"}`, &ChannelData{Ch: 2, Fd: FdStdout, Data: []byte("hello\n")}},
		{`{"type":"data","ch":2,"stream":"stderr","data":""}`, &ChannelData{Ch: 2, Fd: FdStderr, Data: []byte{}}},
		{`{"type":"exit","ch":2,"code":3}`, &Exit{Ch: 2, Code: ptr(3)}},
		{`{"type":"channel_closed","ch":2}`, &ChannelClosed{Ch: 2}},
		{`{"type":"error","message":"auth failed","stage":"auth"}`, &Error{Message: "auth failed", Stage: "auth"}},
		{`{"type":"closed","reason":"auth failed"}`, &Closed{Reason: "auth failed"}},
		// a plugin's own event
		{`{"type":"shout","count":3,"ch":"x"}`, &Unknown{Type: "shout", Fields: map[string]any{"count": 3.0, "ch": "x"}}},
		{`{"type":"data","value":5}`, &Unknown{Type: "data", Fields: map[string]any{"value": 5.0}}},
		// a member the type does not have is ignored, whatever its shape
		{`{"type":"title","title":"x","pages":"many","extra":[1]}`, &Title{Title: "x"}},
	}
	for _, c := range cases {
		got, err := Decode([]byte(c.v1))
		if err != nil {
			t.Errorf("%s: %v", c.v1, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s\n got %#v\nwant %#v", c.v1, got, c.want)
		}
	}
}

// What is not an event is refused, saying why; a known type with a member
// of the wrong shape names the member and what it expected.
func TestDecodeErrors(t *testing.T) {
	for in, want := range map[string]string{
		`not json`:                           "one JSON object",
		`[1,2]`:                              "one JSON object",
		`{"text":"no type"}`:                 `"type" string member`,
		`{"type":5}`:                         `"type" string member`,
		`{"type":"prompt","exitCode":"one"}`: `member "exitCode": expected int, got a JSON string`,
		`{"type":"pager","pages":true}`:      `member "pages": expected int`,
		`{"type":"data","ch":2,"stream":"stdout","data":"%%%"}`: `member "data": expected base64`,
		`{"type":"data","ch":-1,"stream":"stdout","data":""}`:   `member "ch": expected a channel number`,
	} {
		_, err := Decode([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", in, err, want)
		}
	}
}

func TestChannelEmission(t *testing.T) {
	b := AppendChannel(nil, 7, FdStderr, []byte("oops"))
	d, err := DecodeChannel(b)
	if err != nil || d.Ch != 7 || d.Fd != FdStderr || string(d.Data) != "oops" {
		t.Fatalf("decode %q: %+v, %v", b, d, err)
	}
	if _, err := DecodeChannel(b[:4]); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("short emission: %v", err)
	}
}

// Encoding a typed event in a reused buffer allocates nothing: the
// Telnet plugin emits one per GA mark.
func TestAppendEventAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		buf = Prompt{Source: SourceTelnet, Mark: "GA"}.AppendEvent(buf[:0])
		buf = Option{Option: "NAWS", Side: "local", Enabled: true}.AppendEvent(buf[:0])
	})
	if n != 0 {
		t.Errorf("%v allocations per event", n)
	}
}

// Decoding a typed event costs less than the map the host decoded into
// before.
func BenchmarkDecodePrompt(b *testing.B) {
	ev := []byte(`{"type":"prompt","dialect":"cisco_ios","hostname":"R1","mode":"config","submode":"config-if","prompt":"R1(config-if)#"}`)
	b.Run("typed", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(ev, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
