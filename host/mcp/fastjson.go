package mcp

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The direct path's hand-written JSON reading (issue 19): the line of a
// tools/call, its params and the arguments of a tool whose fields are
// strings, integers and booleans are read in one pass each, without
// encoding/json's reflection, maps and second passes. Every reader here
// takes only the plain shape of its input (the keys it knows, each once,
// values of the expected type and within the schema's bounds) and says
// "not mine" for anything else; the caller then takes the general path,
// which says what is wrong exactly as before. So the fast path never
// decides an error, and what it accepts it decodes as encoding/json does
// (TestFastArgsAgreeWithDecodeArgs, TestFastEnvelopeAgrees).

// maxFastDepth bounds the nesting the scanner follows; deeper input goes
// the general way (encoding/json allows 10000).
const maxFastDepth = 64

// scanner reads a JSON text from b at i, checking its syntax as it goes.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume takes c after optional white space.
func (s *scanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek is the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end says whether only white space remains.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads a string literal and returns what is between its quotes, and
// whether that is the string itself (no escape, all ASCII).
func (s *scanner) str() (inner []byte, plain, ok bool) {
	if !s.consume('"') {
		return nil, false, false
	}
	start := s.i
	plain = true
	for s.i < len(s.b) {
		// Plain ASCII, the usual run, in one load and test a byte.
		for s.i < len(s.b) && !strStop[s.b[s.i]] {
			s.i++
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			inner = s.b[start:s.i]
			s.i++
			return inner, plain, true
		case c == '\\':
			plain = false
			if s.i+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if hexVal(h) < 0 {
						return nil, false, false
					}
				}
				s.i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			if c >= utf8.RuneSelf {
				plain = false
			}
			s.i++
		}
	}
	return nil, false, false
}

// strStop marks the bytes str looks at one by one: the closing quote, a
// backslash, control characters and non-ASCII bytes.
var strStop = func() (t [256]bool) {
	for c := range t {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf
	}
	return t
}()

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// number reads a number literal (JSON's grammar) and returns it.
func (s *scanner) number() ([]byte, bool) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

// literal reads true, false or null.
func (s *scanner) literal(word string) bool {
	s.ws()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// value skips one value of any type, checking its syntax, and returns its
// bytes.
func (s *scanner) value(depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	s.ws()
	start := s.i
	ok := false
	switch s.peek() {
	case '"':
		_, _, ok = s.str()
	case '{':
		s.i++
		if s.consume('}') {
			ok = true
			break
		}
		for {
			if _, _, ok = s.str(); !ok || !s.consume(':') {
				return nil, false
			}
			if _, ok = s.value(depth + 1); !ok {
				return nil, false
			}
			if s.consume(',') {
				continue
			}
			ok = s.consume('}')
			break
		}
	case '[':
		s.i++
		if s.consume(']') {
			ok = true
			break
		}
		for {
			if _, ok = s.value(depth + 1); !ok {
				return nil, false
			}
			if s.consume(',') {
				continue
			}
			ok = s.consume(']')
			break
		}
	case 't':
		ok = s.literal("true")
	case 'f':
		ok = s.literal("false")
	case 'n':
		ok = s.literal("null")
	default:
		_, ok = s.number()
	}
	if !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// object reads an object, calling member for each key (the key's inner
// bytes when it is plain; a key with escapes is not taken). member reads
// the value itself and returns false to give up.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		key, plain, ok := s.str()
		if !ok || !plain || !s.consume(':') || !member(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// unquote decodes the inside of a string literal the scanner has checked,
// as encoding/json does; false for what it leaves to encoding/json
// (invalid UTF-8, surrogate escapes).
func unquote(inner []byte, plain bool) (string, bool) {
	if plain {
		return string(inner), true
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); {
		c := inner[i]
		if c != '\\' {
			if c >= utf8.RuneSelf {
				r, size := utf8.DecodeRune(inner[i:])
				if r == utf8.RuneError && size <= 1 {
					return "", false
				}
				out = append(out, inner[i:i+size]...)
				i += size
				continue
			}
			out = append(out, c)
			i++
			continue
		}
		switch inner[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := rune(hexVal(inner[i+2])<<12 | hexVal(inner[i+3])<<8 | hexVal(inner[i+4])<<4 | hexVal(inner[i+5]))
			if r >= 0xD800 && r < 0xE000 {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		default: // " \ /
			out = append(out, inner[i+1])
		}
		i += 2
	}
	return string(out), true
}

// internedStrings are the values every request line repeats: fastEnvelope
// points at these instead of allocating a copy (and a pointer) for each.
// Nothing writes through an envelope's pointers.
var internedStrings = func() map[string]*string {
	m := map[string]*string{}
	for _, v := range []string{"2.0", "tools/call", "tools/list", "ping", "initialize",
		"notifications/initialized", "notifications/cancelled"} {
		m[v] = &v
	}
	return m
}()

// interned is v as a *string, shared when it is one of internedStrings.
func interned(v []byte) *string {
	if p := internedStrings[string(v)]; p != nil {
		return p
	}
	str := string(v)
	return &str
}

// fastEnvelope reads the usual request line: an object of jsonrpc and
// method (plain strings), id (an integer or a plain string) and params
// (an object), each at most once, nothing else. It fills e as
// json.Unmarshal would.
func fastEnvelope(line []byte) (e envelope, ok bool) {
	s := scanner{b: line}
	var seen uint8
	once := func(bit uint8) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "jsonrpc":
			v, plain, ok := s.str()
			if !ok || !plain || !once(1) {
				return false
			}
			e.JSONRPC = interned(v)
		case "method":
			v, plain, ok := s.str()
			if !ok || !plain || !once(2) {
				return false
			}
			e.Method = interned(v)
		case "id":
			if !once(4) {
				return false
			}
			var v []byte
			switch s.peek() {
			case '"':
				start := s.i
				if _, plain, ok := s.str(); !ok || !plain {
					return false
				}
				v = s.b[start:s.i]
			default:
				n, ok := s.number()
				if !ok {
					return false
				}
				if _, isInt := plainInt(n); !isInt {
					return false
				}
				v = n
			}
			e.ID = v
		case "params":
			if !once(8) || s.peek() != '{' {
				return false
			}
			// A tools/call's params of the usual shape are read here, in
			// the same pass (callParams); anything else is skipped as a
			// value.
			start := s.i
			if name, args, ok := s.callParams(); ok {
				e.Params, e.call = s.b[start:s.i], fastCall{name: name, args: args, ok: true}
				break
			}
			s.i = start
			v, ok := s.value(0)
			if !ok {
				return false
			}
			e.Params = v
		default:
			return false
		}
		return true
	})
	return e, ok && s.end()
}

// fastCallParams reads a tools/call's params of the usual shape: a name
// (a plain string) and arguments (any value), each at most once, nothing
// else (no _meta: a progress token goes the general way). The params have
// been checked as JSON already.
func fastCallParams(params []byte) (name []byte, args json.RawMessage, ok bool) {
	s := scanner{b: params}
	name, args, ok = s.callParams()
	return name, args, ok && s.end()
}

// callParams reads the object at s as fastCallParams does, leaving s
// after it. Its arguments are read as the envelope's value would read
// them (one level down), so that a line fastEnvelope takes with its
// params read here is one it took before.
func (s *scanner) callParams() (name []byte, args json.RawMessage, ok bool) {
	var gotName, gotArgs bool
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			v, plain, ok := s.str()
			if !ok || !plain || gotName {
				return false
			}
			name, gotName = v, true
		case "arguments":
			v, ok := s.value(1)
			if !ok || gotArgs {
				return false
			}
			args, gotArgs = v, true
		default:
			return false
		}
		return true
	})
	return name, args, ok && gotName
}

// fastCall is a tools/call's params as fastEnvelope read them in its one
// pass (ok), for the direct path.
type fastCall struct {
	name []byte
	args json.RawMessage
	ok   bool
}

// fastArgs decodes the arguments of one tool whose fields are strings,
// integers and booleans, checking them against its schema (types,
// required fields, lengths, enums, integer bounds). Anything else — an
// alias, a null, a number that is not a plain integer, an unknown or
// repeated key, a value out of bounds — it leaves to decodeArgs' general
// path, which says what is wrong.
type fastArgs struct {
	fields []fastField
}

type fastField struct {
	name     string
	index    []int
	kind     reflect.Kind // String, Int or Bool; Invalid: not read here
	maxLen   int          // -1: none
	enum     []string
	min, max *float64
	required bool
}

// newFastArgs builds the decoder of In's arguments, or nil when In's
// shape is not one it knows (every call then takes the general path).
func newFastArgs(t reflect.Type, sc *jsonschema.Schema) *fastArgs {
	f := &fastArgs{}
	if !f.add(t, nil, sc) || len(f.fields) > 64 || len(f.fields) != len(sc.Properties) {
		return nil
	}
	return f
}

func (f *fastArgs) add(t reflect.Type, index []int, sc *jsonschema.Schema) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		idx := append(slices.Clone(index), i)
		tag, hasTag := sf.Tag.Lookup("json")
		name := tag
		if j := strings.IndexByte(tag, ','); j >= 0 {
			name = tag[:j]
		}
		if sf.Anonymous && !hasTag {
			if !f.add(sf.Type, idx, sc) {
				return false
			}
			continue
		}
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			return false
		}
		prop := sc.Properties[name]
		if prop == nil {
			return false
		}
		ff := fastField{name: name, index: idx, kind: sf.Type.Kind(), maxLen: -1, required: slices.Contains(sc.Required, name)}
		want := ""
		switch ff.kind {
		case reflect.String:
			want = "string"
			if prop.MaxLength != nil {
				ff.maxLen = *prop.MaxLength
			}
			for _, v := range prop.Enum {
				s, isStr := v.(string)
				if !isStr {
					return false
				}
				ff.enum = append(ff.enum, s)
			}
		case reflect.Int:
			want = "integer"
			ff.min, ff.max = prop.Minimum, prop.Maximum
		case reflect.Bool:
			want = "boolean"
		}
		if ts := types(prop); want == "" || len(ts) != 1 || ts[0] != want || prop.Const != nil || prop.Pattern != "" {
			// A field of another shape (keys: a string or an array):
			// given, it sends the call the general way.
			ff.kind = reflect.Invalid
		}
		f.fields = append(f.fields, ff)
	}
	return true
}

// decode fills dst (a pointer to the struct) from raw, or reports false
// and leaves dst as it was.
func (f *fastArgs) decode(raw []byte, dst any) bool {
	type val struct {
		s string
		n int64
		b bool
	}
	var vals [64]val
	var seen uint64
	s := scanner{b: raw}
	if s.end() {
		// absent: an empty object
	} else if s.peek() == 'n' {
		if !s.literal("null") || !s.end() {
			return false
		}
	} else if !s.object(func(key []byte) bool {
		k := -1
		for i := range f.fields {
			if f.fields[i].name == string(key) {
				k = i
				break
			}
		}
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		ff := &f.fields[k]
		switch ff.kind {
		case reflect.String:
			inner, plain, ok := s.str()
			if !ok {
				return false
			}
			v, ok := unquote(inner, plain)
			if !ok {
				return false
			}
			if ff.maxLen >= 0 && len(v) > ff.maxLen && utf8.RuneCountInString(v) > ff.maxLen {
				return false
			}
			if ff.enum != nil && !slices.Contains(ff.enum, v) {
				return false
			}
			vals[k].s = v
		case reflect.Int:
			num, ok := s.number()
			if !ok {
				return false
			}
			n, isInt := plainInt(num)
			if !isInt {
				return false
			}
			if x := float64(n); ff.min != nil && x < *ff.min || ff.max != nil && x > *ff.max {
				return false
			}
			vals[k].n = n
		case reflect.Bool:
			switch {
			case s.literal("true"):
				vals[k].b = true
			case s.literal("false"):
			default:
				return false
			}
		default:
			return false
		}
		return true
	}) || !s.end() {
		return false
	}
	for i := range f.fields {
		if f.fields[i].required && seen&(1<<i) == 0 {
			return false
		}
	}
	v := reflect.ValueOf(dst).Elem()
	for i := range f.fields {
		if seen&(1<<i) == 0 {
			continue
		}
		fv := v.FieldByIndex(f.fields[i].index)
		switch f.fields[i].kind {
		case reflect.String:
			fv.SetString(vals[i].s)
		case reflect.Int:
			fv.SetInt(vals[i].n)
		case reflect.Bool:
			fv.SetBool(vals[i].b)
		}
	}
	return true
}
