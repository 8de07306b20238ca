package mcp

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestCheckJSONRPC: the code of each refusal (-32700 for what does not
// parse, batches included; -32600 for what is not a request) and the id
// given back for a single request that may go on.
func TestCheckJSONRPC(t *testing.T) {
	for _, c := range []struct {
		body string
		code int    // 0: may go on
		id   string // of a body that may go on
	}{
		{``, rpcParseError, ""},
		{`not json`, rpcParseError, ""},
		{`{"jsonrpc":"2.0","id":2,`, rpcParseError, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} x`, rpcParseError, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},`, rpcParseError, ""},
		{`5`, rpcInvalidRequest, ""},
		{`[5]`, rpcInvalidRequest, ""},
		{`[]`, rpcInvalidRequest, ""},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, rpcInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":3,"method":""}`, rpcInvalidRequest, ""},
		{` {"jsonrpc":"2.0","id":7,"method":"ping"} `, 0, `7`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, ``},
		{`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, 0, ``},
	} {
		w := httptest.NewRecorder()
		id, ok := checkJSONRPC(w, []byte(c.body))
		if c.code == 0 {
			if !ok || string(id) != c.id {
				t.Errorf("%q: ok %v, id %s; want ok, id %q", c.body, ok, id, c.id)
			}
			continue
		}
		var m struct {
			Error struct{ Code int } `json:"error"`
		}
		json.Unmarshal(w.Body.Bytes(), &m)
		if ok || w.Code != 400 || m.Error.Code != c.code {
			t.Errorf("%q: ok %v, status %d, code %d; want refused, 400, %d", c.body, ok, w.Code, m.Error.Code, c.code)
		}
	}
}
