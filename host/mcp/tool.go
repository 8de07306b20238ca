package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// handler is a typed tool handler: it returns the result (marshalled as
// one compact JSON text block) or an error, which the group's voice turns
// into what the client sees.
type handler[In any] func(ctx context.Context, req *sdk.CallToolRequest, in In) (any, error)

// addTool registers a tool through go-sdk's raw AddTool, so that the SDK
// neither validates nor fills in arguments: we do, in one voice. The input
// schema is derived from In and refined by edit (bounds, enums, lengths);
// that same schema is what the arguments are checked against. Absent or
// null arguments are an empty object. A panic in h is an INTERNAL_ERROR
// result with the stack in the log; it never ends the server.
func addTool[In any](s *Server, v voice, t *sdk.Tool, edit func(props map[string]*jsonschema.Schema), h handler[In]) {
	sc := schema[In](edit)
	if err := bounded(sc); err != nil {
		panic(fmt.Sprintf("tool %s: %v", t.Name, err))
	}
	t.InputSchema = sc
	fast := newFastArgs(reflect.TypeFor[In](), sc)
	raw := func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("tool handler panicked", "tool", t.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = s.fail(v, fmt.Errorf("%w: %s failed unexpectedly (%v); the server is still running", errInternal, t.Name, p))
			}
		}()
		var raw json.RawMessage
		if req != nil && req.Params != nil {
			raw = req.Params.Arguments
		}
		in, err := decodeArgsWith[In](fast, sc, raw)
		if err != nil {
			return s.fail(v, err)
		}
		out, err := h(ctx, req, in)
		if err != nil {
			return s.fail(v, err)
		}
		return ok(out)
	}
	s.mcp.AddTool(t, raw)
	if s.tools == nil {
		s.tools = make(map[string]registeredTool)
	}
	s.tools[t.Name] = registeredTool{name: t.Name, h: raw}
}

// ok wraps v as a tool result: compact JSON in one text block (a result
// made by the handler itself, such as an image, as it is).
func ok(v any) (*sdk.CallToolResult, error) {
	if res, made := v.(*sdk.CallToolResult); made {
		return res, nil
	}
	if a, can := v.(jsonAppender); can {
		buf := getBuf()
		defer putBuf(buf)
		if b, done := a.appendJSON(*buf); done {
			*buf = b
			return textResult(string(b)), nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encode the result: %v", errInternal, err)
	}
	return textResult(string(b)), nil
}

// textResult is a result of one text block, made in one allocation (the
// result, its content slice and the text block are three otherwise, for
// every call).
func textResult(text string) *sdk.CallToolResult {
	r := new(struct {
		res     sdk.CallToolResult
		block   sdk.TextContent
		content [1]sdk.Content
	})
	r.block.Text = text
	r.content[0] = &r.block
	r.res.Content = r.content[:]
	return &r.res
}

// jsonAppender is a result of a hot tool that writes its own JSON, byte
// for byte what encoding/json writes for it (TestResultsWriteTheirJSON),
// without reflection; done is false for what it leaves to encoding/json.
type jsonAppender interface {
	appendJSON(b []byte) (out []byte, done bool)
}

// schema derives an input schema from T and lets edit refine it (enums,
// bounds) — the tags alone cannot say everything.
func schema[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema for %T: %v", *new(T), err))
	}
	if sc.Properties == nil {
		sc.Properties = map[string]*jsonschema.Schema{}
	}
	if edit != nil {
		edit(sc.Properties)
	}
	return sc
}

func ptr[T any](v T) *T { return &v }

// maxKeyLen bounds the keys of an object argument (env: variable names).
const maxKeyLen = 256

// decodeArgs checks raw arguments against sc and decodes them into In.
//
// The usual arguments, plain values of a tool whose fields are strings,
// integers and booleans, are read in one pass (fastArgs); the rest, and
// every error, take the general path.
func decodeArgs[In any](sc *jsonschema.Schema, raw json.RawMessage) (In, error) {
	return decodeArgsWith[In](newFastArgs(reflect.TypeFor[In](), sc), sc, raw)
}

// decodeArgsWith is decodeArgs with the tool's fast decoder built once,
// when it was registered (nil: none).
func decodeArgsWith[In any](fast *fastArgs, sc *jsonschema.Schema, raw json.RawMessage) (In, error) {
	var in In
	if fast != nil && fast.decode(raw, &in) {
		return in, nil
	}
	return decodeArgsGeneral[In](sc, raw)
}

// decodeArgsGeneral is decodeArgs for every input: the arguments decoded
// into a map, normalized, checked against the schema field by field, then
// decoded into In.
func decodeArgsGeneral[In any](sc *jsonschema.Schema, raw json.RawMessage) (In, error) {
	var in In
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args any
	if err := dec.Decode(&args); err != nil {
		return in, &ArgError{Field: "arguments", Msg: "not valid JSON: " + err.Error()}
	}
	obj, isObj := args.(map[string]any)
	if !isObj {
		return in, &ArgError{Field: "arguments", Msg: "must be an object, got " + describe(args)}
	}
	changed, err := normalize(sc, obj)
	if err != nil {
		return in, err
	}
	if err := checkObject(sc, obj); err != nil {
		return in, err
	}
	if changed {
		if raw, err = json.Marshal(obj); err != nil {
			return in, fmt.Errorf("%w: encode arguments: %v", errInternal, err)
		}
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		// checkObject has vouched for every field; this is a bug.
		return in, fmt.Errorf("%w: decode arguments: %v", errInternal, err)
	}
	return in, nil
}

// aliases are the spellings of one argument that the seeds use on
// different tools: a model that learnt `sessionId` on telnet_read tries it
// on view_screen. A tool documents one; the others are accepted for it.
var aliases = [][]string{
	{"sessionId", "session_id", "processId"},
	{"session_ids", "sessionIds"},
}

// normalize rewrites, before the schema check, what a client sends in
// another shape than the schema's but with one meaning: an alias of the
// tool's own argument name (aliases), and an array or object sent as a
// string holding its JSON (the MCP Inspector CLI sends `args=["a"]` as the
// string `["a"]`) — for a field that takes a string or an array (keys),
// too, when the whole string is a JSON array. A field that takes only
// strings is never reinterpreted. It reports whether obj changed.
func normalize(sc *jsonschema.Schema, obj map[string]any) (bool, error) {
	changed := false
	for _, group := range aliases {
		own := ""
		for _, name := range group {
			if sc.Properties[name] != nil {
				own = name
				break
			}
		}
		if own == "" {
			continue
		}
		for _, alt := range group {
			v, given := obj[alt]
			if alt == own || !given || sc.Properties[alt] != nil {
				continue
			}
			if mine, both := obj[own]; both && mine != nil && v != nil && !sameJSON(mine, v) {
				return changed, &ArgError{Field: own, Msg: fmt.Sprintf("given twice with different values (as %s and as %s)", own, alt)}
			}
			if obj[own] == nil {
				obj[own] = v
			}
			delete(obj, alt)
			changed = true
		}
	}
	for name, v := range obj {
		str, isStr := v.(string)
		prop := sc.Properties[name]
		if !isStr || prop == nil {
			continue
		}
		trimmed := strings.TrimSpace(str)
		want := ""
		switch {
		case strings.HasPrefix(trimmed, "["):
			want = "array"
		case strings.HasPrefix(trimmed, "{"):
			want = "object"
		}
		// The common case, a plain string, stops here, before the schema's
		// types are gathered.
		if want == "" || !slices.Contains(types(prop), want) {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.UseNumber()
		var parsed any
		if err := dec.Decode(&parsed); err != nil || jsonType(parsed) != want {
			continue // left as it is: the schema check says what was expected
		}
		if _, err := dec.Token(); err != io.EOF {
			continue // left as it is: the schema check says what was expected
		}
		obj[name] = parsed
		changed = true
	}
	return changed, nil
}

// sameJSON reports whether two decoded JSON values are equal.
func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// checkObject checks an arguments object against the tool's schema: no
// unknown fields, required fields present, each value of its type and
// within its bounds. Fields are checked in sorted order, so the first
// error is the same every time.
func checkObject(sc *jsonschema.Schema, obj map[string]any) error {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range obj {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		prop := sc.Properties[name]
		if prop == nil {
			accepted := slices.Sorted(func(yield func(string) bool) {
				for k := range sc.Properties {
					if !yield(k) {
						return
					}
				}
			})
			msg := "unknown field"
			if len(accepted) > 0 {
				msg += " (accepted: " + strings.Join(accepted, ", ") + ")"
			} else {
				msg += " (this tool takes no arguments)"
			}
			return &ArgError{Field: name, Msg: msg}
		}
		if obj[name] == nil && !slices.Contains(sc.Required, name) {
			continue // null for an optional field: not given
		}
		if err := checkValue(name, prop, obj[name]); err != nil {
			return err
		}
	}
	for _, name := range sc.Required {
		if _, present := obj[name]; !present {
			return &ArgError{Field: name, Msg: "required" + expectedSuffix(sc.Properties[name])}
		}
	}
	return nil
}

// bounded checks, when a tool is registered, that every number, string and
// array of its schema has an upper bound: what tools/list advertises is
// what is checked, and nothing unbounded gets through either.
func bounded(sc *jsonschema.Schema) error {
	for name, p := range sc.Properties {
		if err := boundedField(name, p); err != nil {
			return err
		}
	}
	return nil
}

func boundedField(name string, p *jsonschema.Schema) error {
	for _, typ := range types(p) {
		switch {
		case typ == "integer" && p.Maximum == nil,
			typ == "string" && p.MaxLength == nil && len(p.Enum) == 0,
			typ == "array" && p.MaxItems == nil,
			typ == "object" && p.AdditionalProperties != nil && p.MaxProperties == nil:
			return fmt.Errorf("field %s (%s) has no upper bound", name, typ)
		case typ == "array" && p.Items != nil:
			if err := boundedField(name+"[]", p.Items); err != nil {
				return err
			}
		case typ == "object" && p.AdditionalProperties != nil:
			if err := boundedField(name+"{}", p.AdditionalProperties); err != nil {
				return err
			}
		}
	}
	return nil
}

// types are a schema's types other than null: one, or several for a field
// that takes either (keys: a string or an array).
func types(sc *jsonschema.Schema) []string {
	if sc.Type != "" {
		return []string{sc.Type}
	}
	var out []string
	for _, t := range sc.Types {
		if t != "null" {
			out = append(out, t)
		}
	}
	return out
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// expectedSuffix says, for a missing field, what it should be.
func expectedSuffix(sc *jsonschema.Schema) string {
	if sc == nil || sc.Description == "" {
		return ""
	}
	return " (" + sc.Description + ")"
}

func checkValue(field string, sc *jsonschema.Schema, v any) error {
	bad := func(format string, a ...any) error {
		return &ArgError{Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	if v == nil && slices.Contains(sc.Types, "null") {
		return nil // ["null", "array"] for a slice
	}
	typ := ""
	if ts := types(sc); len(ts) == 1 {
		typ = ts[0]
	} else if len(ts) > 1 {
		typ = jsonType(v)
		if typ == "number" && slices.Contains(ts, "integer") {
			typ = "integer" // and let the integer check say what is wrong
		}
		if !slices.Contains(ts, typ) {
			return bad("must be %s, got %s", orList(ts), describe(v))
		}
	}
	switch typ {
	case "string":
		s, isStr := v.(string)
		if !isStr {
			return bad("must be a string, got %s", describe(v))
		}
		if sc.MaxLength != nil && utf8.RuneCountInString(s) > *sc.MaxLength {
			return bad("must be at most %d characters, got %d", *sc.MaxLength, utf8.RuneCountInString(s))
		}
		if len(sc.Enum) > 0 && !slices.Contains(sc.Enum, any(s)) {
			return bad("must be one of %s, got %s", enumList(sc.Enum), strconv.Quote(clip(s)))
		}
	case "integer":
		n, isNum := v.(json.Number)
		if !isNum {
			return bad("must be an integer%s, got %s", rangeText(sc), describe(v))
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) {
			return bad("must be an integer%s, got %s", rangeText(sc), clip(string(n)))
		}
		if (sc.Minimum != nil && f < *sc.Minimum) || (sc.Maximum != nil && f > *sc.Maximum) {
			return bad("must be an integer%s, got %s", rangeText(sc), clip(string(n)))
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil && sc.Maximum == nil {
			return bad("must be an integer that fits in 64 bits, got %s", clip(string(n)))
		}
	case "boolean":
		if _, isBool := v.(bool); !isBool {
			return bad("must be true or false, got %s", describe(v))
		}
	case "array":
		items, isArr := v.([]any)
		if !isArr {
			return bad("must be an array, got %s", describe(v))
		}
		if sc.MaxItems != nil && len(items) > *sc.MaxItems {
			return bad("must have at most %d items, got %d", *sc.MaxItems, len(items))
		}
		if sc.Items != nil {
			for i, it := range items {
				if err := checkValue(fmt.Sprintf("%s[%d]", field, i), sc.Items, it); err != nil {
					return err
				}
			}
		}
	case "object":
		obj, isObj := v.(map[string]any)
		if !isObj {
			return bad("must be an object, got %s", describe(v))
		}
		if sc.MaxProperties != nil && len(obj) > *sc.MaxProperties {
			return bad("must have at most %d entries, got %d", *sc.MaxProperties, len(obj))
		}
		if ap := sc.AdditionalProperties; ap != nil && sc.Properties == nil {
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if utf8.RuneCountInString(k) > maxKeyLen {
					return bad("key %s is longer than %d characters", strconv.Quote(clip(k)), maxKeyLen)
				}
				if err := checkValue(field+"."+k, ap, obj[k]); err != nil {
					return err
				}
			}
		}
		if sc.Properties != nil {
			for k, val := range obj {
				p := sc.Properties[k]
				if p == nil {
					return bad("unknown field %q", k)
				}
				if err := checkValue(field+"."+k, p, val); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// rangeText says an integer field's bounds: " between 1 and 65535", " of
// at least 0", " of at most 300000".
func rangeText(sc *jsonschema.Schema) string {
	switch {
	case sc.Minimum != nil && sc.Maximum != nil:
		return fmt.Sprintf(" between %s and %s", num(*sc.Minimum), num(*sc.Maximum))
	case sc.Minimum != nil:
		return " of at least " + num(*sc.Minimum)
	case sc.Maximum != nil:
		return " of at most " + num(*sc.Maximum)
	}
	return ""
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// orList joins type names: "a string or an array".
func orList(ts []string) string {
	a := make([]string, len(ts))
	for i, t := range ts {
		switch t {
		case "array", "object", "integer":
			a[i] = "an " + t
		default:
			a[i] = "a " + t
		}
	}
	return strings.Join(a, " or ")
}

func enumList(vals []any) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = fmt.Sprint(v)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// describe names a JSON value for an error message, briefly.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "the string " + strconv.Quote(clip(x))
	case json.Number:
		return "the number " + clip(string(x))
	case bool:
		return strconv.FormatBool(x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// clip shortens what an error quotes back: a 1 MB argument does not come
// back in the error.
func clip(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
