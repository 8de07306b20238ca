package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowResultLine is resultLine as it was: the result marshalled through
// go-sdk's types.
func slowResultLine(t *testing.T, id jsonrpc.ID, res *sdk.CallToolResult) []byte {
	rid, err := json.Marshal(id.Raw())
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), rid...), `,"result":`...), body...), '}')
}

// The direct path writes a one-text result itself (issue 19: no second
// marshal through the SDK's types); its bytes are encoding/json's, for
// every text: escapes, HTML-safe characters, U+2028/9, invalid UTF-8.
func TestResultLineIsEncodingJSONs(t *testing.T) {
	texts := []string{"", "plain", `{"a":"b\"c","d":[1,2]}`, "<>&", "\u2028\u2029", "\x00\x01\x1f\x7f", "\b\f\n\r\t\\",
		"\xff\xfe", "caf\xc3", "ok é 日本 🙂", string([]byte{0xed, 0xa0, 0x80})}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
			if r.IntN(3) == 0 {
				b[i] = "\"\\<>&\n\x00\xe2\x80\xa8"[r.IntN(10)]
			}
		}
		texts = append(texts, string(b))
	}
	ids := []jsonrpc.ID{}
	for _, v := range []any{float64(1), float64(-7), float64(123456789012345), "abc", "a\"b<", ""} {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, text := range texts {
		id := ids[i%len(ids)]
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
		got, err := resultLine(id, res)
		if err != nil {
			t.Fatal(err)
		}
		if want := slowResultLine(t, id, res); !bytes.Equal(got, want) {
			t.Fatalf("text %q (valid UTF-8 %v):\n got %s\nwant %s", text, utf8.ValidString(text), got, want)
		}
	}
	// What the fast path does not take goes through go-sdk's marshalling.
	for _, res := range []*sdk.CallToolResult{
		{Content: []sdk.Content{&sdk.TextContent{Text: "x"}}, IsError: true},
		{Content: []sdk.Content{&sdk.TextContent{Text: "x"}, &sdk.TextContent{Text: "y"}}},
		{Content: []sdk.Content{&sdk.TextContent{Text: "x"}}, StructuredContent: map[string]any{"a": 1}},
		{Content: []sdk.Content{&sdk.TextContent{Text: "x", Meta: sdk.Meta{"k": "v"}}}},
		{Content: []sdk.Content{}},
	} {
		got, err := resultLine(ids[0], res)
		if err != nil {
			t.Fatal(err)
		}
		if want := slowResultLine(t, ids[0], res); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
}

// Ids read without a decoder are the ids the decoder reads.
func TestParseIDFastPath(t *testing.T) {
	for _, raw := range []string{`1`, `0`, `-5`, `123456789012345`, `1234567890123456789`, `01`, `1.5`, `1e3`, `-0`,
		`"a"`, `""`, `"a\"b"`, `"é"`, `"\u0041"`, `null`, `true`, `[1]`, `{}`} {
		got, gotErr := parseID(json.RawMessage(raw))
		want, wantErr := parseIDSlow(json.RawMessage(raw))
		if (gotErr == nil) != (wantErr == nil) || got != want || idKey(got) != idKey(want) {
			t.Errorf("%s: got %#v (%v), want %#v (%v)", raw, got.Raw(), gotErr, want.Raw(), wantErr)
		}
	}
}

// parseIDSlow is parseID as it was: every id through a decoder.
func parseIDSlow(raw json.RawMessage) (jsonrpc.ID, error) {
	if len(raw) == 0 {
		return jsonrpc.ID{}, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return jsonrpc.ID{}, err
	}
	switch x := v.(type) {
	case string:
		return jsonrpc.MakeID(x)
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return jsonrpc.ID{}, err
		}
		return jsonrpc.MakeID(float64(n))
	}
	return jsonrpc.ID{}, errors.New("not a string or an integer")
}
