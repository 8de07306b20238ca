package mcp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools the fast argument path is for, with their registered bounds.
func fastSchemas() (send, read, ref, keys *jsonschema.Schema) {
	return schema[sendIn](telnetSendSchema), schema[readIn](telnetReadSchema),
		schema[sessionIn](sessionRef), schema[sendKeysIn](sendKeysSchema)
}

// argCorpus is arguments of every shape: plain ones the fast path takes,
// and near misses it must leave to the general path (whose error is the
// one the client sees).
func argCorpus(r *rand.Rand) []string {
	out := []string{
		``, `null`, ` null `, `{}`, `[]`, `1`, `"s"`, `{`, `{"sessionId":"s"`, `{"sessionId":"s"}x`, `{"sessionId":"s"} `,
		`{"sessionId":"s"}`, `{"sessionId":"t1","command":"echo hi"}`, `{"sessionId":"t1","command":"echo hi","noNewline":true}`,
		`{"sessionId":"t1","command":"x","signal":"ip"}`, `{"sessionId":"t1","command":"x","signal":"kill"}`,
		`{"sessionId":"t1","command":"x","noNewline":"true"}`, `{"sessionId":"t1","command":"x","noNewline":null}`,
		`{"sessionId":"t1","until":"\nt3x17x\\r?\\n.*[#$] $","timeoutMs":10000}`,
		`{"sessionId":"t1","until":"\u00e9\u65e5","timeoutMs":10000}`, `{"sessionId":"t1","until":"\ud83d\ude42"}`,
		`{"sessionId":"t1","until":"\ud83d"}`, `{"sessionId":"t1","until":"a\/b\"c\\d\b\f\t"}`, `{"sessionId":"t1","until":"\u0000"}`,
		`{"sessionId":"t1","until":"\x"}`, `{"sessionId":"t1","until":"\u12"}`, "{\"sessionId\":\"t1\",\"until\":\"a\tb\"}",
		"{\"sessionId\":\"caf\xc3\"}", "{\"sessionId\":\"\xff\"}", `{"sessionId":"é"}`,
		`{"sessionId":"s","timeoutMs":300000}`, `{"sessionId":"s","timeoutMs":300001}`, `{"sessionId":"s","timeoutMs":-1}`,
		`{"sessionId":"s","timeoutMs":-0}`, `{"sessionId":"s","timeoutMs":1.0}`, `{"sessionId":"s","timeoutMs":1e3}`,
		`{"sessionId":"s","timeoutMs":01}`, `{"sessionId":"s","timeoutMs":"5"}`, `{"sessionId":"s","timeoutMs":99999999999999999999}`,
		`{"sessionId":"s","maxBytes":0}`, `{"sessionId":"s","maxBytes":1}`, `{"sessionId":"s","encoding":"hex"}`,
		`{"sessionId":"s","encoding":"HEX"}`, `{"sessionId":"s","prompt":true,"exit":false,"idleMs":5}`,
		`{"sessionId":"s","sessionId":"t"}`, `{"session_id":"s"}`, `{"sessionId":"s","session_id":"s"}`, `{"sessionId":"s","session_id":"t"}`,
		`{"SessionId":"s"}`, `{"sessionId":"s","colour":"red"}`, `{"sessionId":""}`, `{"sessionId":null}`, `{"sessionId":5}`,
		`{"sessionId":"` + strings.Repeat("x", 128) + `"}`, `{"sessionId":"` + strings.Repeat("x", 129) + `"}`,
		`{"sessionId":"` + strings.Repeat("é", 128) + `"}`, `{"sessionId":"` + strings.Repeat("é", 129) + `"}`,
		`{"sessionId":"s","until":"` + strings.Repeat("a", 1024) + `"}`, `{"sessionId":"s","until":"` + strings.Repeat("a", 1025) + `"}`,
		`{"session_id":"s","text":"ls\r","view":"ansi"}`, `{"session_id":"s","keys":["C-c"]}`, `{"session_id":"s","keys":"C-c Enter"}`,
		`{"session_id":"s","text":"x","until":"\\$ $","timeoutMs":500}`, `{"session_id":"s","sessionId":"s"}`,
		` { "sessionId" : "s" , "timeoutMs" : 5 } `, `{"sessionId":"s",}`, `{,"sessionId":"s"}`, `{"sessionId" "s"}`,
		`{"sessionId":"s","until":tru}`, `{"sessionId":"s","prompt":tru}`, `{"sessionId":"s","prompt":TRUE}`,
	}
	// Mutations of the plain ones: a byte changed, dropped or doubled.
	base := len(out)
	for range 3000 {
		b := []byte(out[r.IntN(base)])
		if len(b) == 0 {
			continue
		}
		i := r.IntN(len(b))
		switch r.IntN(3) {
		case 0:
			b[i] = (`{}[]",:\ 0123456789.-eEtrufalsn` + "\x00\xc3\xa9")[r.IntN(34)]
		case 1:
			b = append(b[:i], b[i+1:]...)
		case 2:
			b = append(b[:i+1], b[i:]...)
		}
		out = append(out, string(b))
	}
	return out
}

// Whatever the fast path takes, it decodes as the general path does; what
// it leaves, the general path answers (same value, same error).
func TestFastArgsAgreeWithDecodeArgs(t *testing.T) {
	send, read, ref, keys := fastSchemas()
	r := rand.New(rand.NewPCG(3, 4))
	corpus := argCorpus(r)
	taken := 0
	check := func(name string, fast, slow func(string) (any, error)) {
		for _, args := range corpus {
			got, gotErr := fast(args)
			want, wantErr := slow(args)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s %q:\n got %+v, %v\nwant %+v, %v", name, args, got, gotErr, want, wantErr)
			}
		}
	}
	pair := func(sc *jsonschema.Schema, fast, slow func(json.RawMessage) (any, error)) (func(string) (any, error), func(string) (any, error)) {
		return func(a string) (any, error) { return fast(json.RawMessage(a)) }, func(a string) (any, error) { return slow(json.RawMessage(a)) }
	}
	f, s := pair(send, func(a json.RawMessage) (any, error) { return decodeArgs[sendIn](send, a) }, func(a json.RawMessage) (any, error) { return decodeArgsGeneral[sendIn](send, a) })
	check("telnet_send", f, s)
	f, s = pair(read, func(a json.RawMessage) (any, error) { return decodeArgs[readIn](read, a) }, func(a json.RawMessage) (any, error) { return decodeArgsGeneral[readIn](read, a) })
	check("telnet_read", f, s)
	f, s = pair(ref, func(a json.RawMessage) (any, error) { return decodeArgs[sessionIn](ref, a) }, func(a json.RawMessage) (any, error) { return decodeArgsGeneral[sessionIn](ref, a) })
	check("session", f, s)
	f, s = pair(keys, func(a json.RawMessage) (any, error) { return decodeArgs[sendKeysIn](keys, a) }, func(a json.RawMessage) (any, error) { return decodeArgsGeneral[sendKeysIn](keys, a) })
	check("send_keys", f, s)
	for _, args := range corpus {
		var in readIn
		if newFastArgs(reflect.TypeFor[readIn](), read).decode(json.RawMessage(args), &in) {
			taken++
		}
	}
	if taken < 20 {
		t.Fatalf("the fast path took only %d of %d telnet_read arguments", taken, len(corpus))
	}
}

// The usual calls' arguments are read in one pass: a handful of
// allocations, not the map, the normalization and the second decode of
// the general path (issue 19: 25-30 µs of JSON per round trip under load).
func TestFastArgsAllocations(t *testing.T) {
	send, read, _, keys := fastSchemas()
	fr, fs, fk := newFastArgs(reflect.TypeFor[readIn](), read), newFastArgs(reflect.TypeFor[sendIn](), send), newFastArgs(reflect.TypeFor[sendKeysIn](), keys)
	for _, c := range []struct {
		name string
		max  float64
		do   func()
	}{
		{"telnet_read", 4, func() {
			decodeArgsWith[readIn](fr, read, json.RawMessage(`{"sessionId":"t1","until":"\nt3x17x\\r?\\n.*[#$] $","timeoutMs":10000}`))
		}},
		{"telnet_send", 4, func() {
			decodeArgsWith[sendIn](fs, send, json.RawMessage(`{"sessionId":"t1","command":"echo t3x17x"}`))
		}},
		{"send_keys", 4, func() { decodeArgsWith[sendKeysIn](fk, keys, json.RawMessage(`{"session_id":"p1","text":"ls\r"}`)) }},
	} {
		if n := testing.AllocsPerRun(200, c.do); n > c.max {
			t.Errorf("%s: %v allocations per decode, want at most %v", c.name, n, c.max)
		}
	}
}

// envelopeLines are request lines of every shape for the envelope and
// params readers.
func envelopeLines(r *rand.Rand) []string {
	out := []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"telnet_read","arguments":{"sessionId":"t1","until":"x"}}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"telnet_send","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{}}`, `{"jsonrpc":"2.0","id":null,"method":"m"}`,
		`{"jsonrpc":"2.0","id":"a\"b","method":"m"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"1.0","id":1,"method":"m"}`, `{"jsonrpc":2,"id":1,"method":"m"}`, `{"JSONRPC":"2.0","id":1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,{"y":"\u00e9"}],"z":-1.5e3}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, ` {"jsonrpc":"2.0","id":1,"method":"m"} `,
		`{"jsonrpc":"2.0","id":1,"method":"m"}}`, `{"jsonrpc":"2.0","id":1,"method":"m",}`, `{"jsonrpc":"2.0","id":01,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m\u0041"}`, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"arguments\":{\"s\":\"\xff\"}}}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`,
	}
	base := len(out)
	for range 3000 {
		b := []byte(out[r.IntN(base)])
		i := r.IntN(len(b))
		switch r.IntN(3) {
		case 0:
			b[i] = `{}[]",:\ 0123456789.-eEtrufalsn`[r.IntN(31)]
		case 1:
			b = append(b[:i], b[i+1:]...)
		case 2:
			b = append(b[:i+1], b[i:]...)
		}
		out = append(out, string(b))
	}
	return out
}

// What the one-pass envelope and params readers take, they read as
// encoding/json does; they take the usual lines.
func TestFastEnvelopeAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	taken := 0
	for _, line := range envelopeLines(r) {
		got, ok := fastEnvelope([]byte(line))
		if !ok {
			continue
		}
		taken++
		var want envelope
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Errorf("%q: taken by the fast path, but encoding/json says %v", line, err)
			continue
		}
		if !reflect.DeepEqual(norm(got), norm(want)) {
			t.Errorf("%q:\n got %+v\nwant %+v", line, norm(got), norm(want))
		}
		name, args, ok := fastCallParams(got.Params)
		if got.call.ok != ok || ok && (string(got.call.name) != string(name) || string(got.call.args) != string(args)) {
			t.Errorf("%q: params read in the envelope's pass as %q %s (%v), alone as %q %s (%v)", line, got.call.name, got.call.args, got.call.ok, name, args, ok)
		}
		if !ok {
			continue
		}
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(got.Params, &p); err != nil || p.Name != string(name) || string(p.Arguments) != string(args) {
			t.Errorf("%q: params read as %q %s, encoding/json: %q %s (%v)", line, name, args, p.Name, p.Arguments, err)
		}
	}
	if taken < 10 {
		t.Fatalf("the fast path took only %d lines", taken)
	}
}

// norm makes envelopes comparable (pointers to their strings).
func norm(e envelope) map[string]any {
	m := map[string]any{"id": string(e.ID), "params": string(e.Params), "result": string(e.Result), "error": e.Error}
	if e.JSONRPC != nil {
		m["jsonrpc"] = *e.JSONRPC
	}
	if e.Method != nil {
		m["method"] = *e.Method
	}
	return m
}

// The hot tools' results write their own JSON: encoding/json's bytes,
// escapes and omitted fields included.
func TestResultsWriteTheirJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	texts := []string{"", "plain", "a\"b\\c<d>&\u2028\x00\xff é 日本", "\r\n# "}
	pick := func() string { return texts[r.IntN(len(texts))] }
	for range 2000 {
		var v any
		if r.IntN(4) == 0 {
			v = sendOut{SentBytes: r.IntN(1 << 20), SessionID: pick()}
		} else {
			o := readOut{Data: pick(), Encoding: pick(), Bytes: r.IntN(100) - 1, Reason: pick(), HasMore: r.IntN(2) == 0, State: pick()}
			if r.IntN(2) == 0 {
				o.TimeoutMs = int64(r.IntN(300000)) - 5
			}
			if r.IntN(2) == 0 {
				o.Evicted = uint64(r.IntN(1 << 30))
			}
			if r.IntN(2) == 0 {
				o.Error = pick()
			}
			if r.IntN(8) == 0 {
				o.Events = []eventOut{{Type: "prompt", Fields: json.RawMessage(`{"a":"<"}`)}}
			}
			v = o
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ok(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*sdk.TextContent).Text; got != string(want) {
			t.Fatalf("%+v:\n got %s\nwant %s", v, got, want)
		}
	}
}

// FuzzFastArgs: for any bytes, the fast path either declines or decodes
// what the general path decodes, without error.
func FuzzFastArgs(f *testing.F) {
	for _, a := range argCorpus(rand.New(rand.NewPCG(1, 1)))[:80] {
		f.Add([]byte(a))
	}
	send, read, _, _ := fastSchemas()
	f.Fuzz(func(t *testing.T, raw []byte) {
		var in readIn
		if newFastArgs(reflect.TypeFor[readIn](), read).decode(raw, &in) {
			want, err := decodeArgsGeneral[readIn](read, raw)
			if err != nil || want != in {
				t.Fatalf("%q: fast %+v, general %+v %v", raw, in, want, err)
			}
		}
		var sin sendIn
		if newFastArgs(reflect.TypeFor[sendIn](), send).decode(raw, &sin) {
			want, err := decodeArgsGeneral[sendIn](send, raw)
			if err != nil || want != sin {
				t.Fatalf("%q: fast %+v, general %+v %v", raw, sin, want, err)
			}
		}
		if e, ok := fastEnvelope(raw); ok {
			var want envelope
			if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(norm(e), norm(want)) {
				t.Fatalf("%q: fast %+v, encoding/json %+v %v", raw, norm(e), norm(want), err)
			}
			name, args, ok := fastCallParams(e.Params)
			if e.call.ok != ok || ok && (string(e.call.name) != string(name) || string(e.call.args) != string(args)) {
				t.Fatalf("%q: params in the envelope's pass %q %s %v, alone %q %s %v", raw, e.call.name, e.call.args, e.call.ok, name, args, ok)
			}
		}
	})
}
