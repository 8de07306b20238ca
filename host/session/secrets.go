package session

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/termhost/termhost/sdk/abi"
)

// DefaultMaxSecrets bounds the secrets a server masks (the oldest go).
const DefaultMaxSecrets = 256

// MaxSecretLen is the longest secret the host types: what a prompt reads
// is a line, and a session holds back at most this much while it decides.
const MaxSecretLen = 4096

// SecretSet is every secret typed during the server's life (logins,
// send_secret, set_mode), owned by the Registry and shared by every
// session: exact copies are masked in every session's output before it
// reaches the buffer (and so reads, the screen, the scrollback), in
// plugin events and in the log, for as long as the server runs (SPEC
// TRUST-2). Bounded: past its size the oldest secret is no longer masked.
type SecretSet struct {
	max  int
	mu   sync.Mutex
	snap atomic.Pointer[secretSnap] // nil while empty: the fast path
}

// secretSnap is an immutable view of the set; sessions load it once per
// chunk.
type secretSnap struct {
	list   [][]byte // oldest first
	maxLen int
}

// NewSecretSet makes an empty set of at most max secrets
// (DefaultMaxSecrets when max <= 0).
func NewSecretSet(max int) *SecretSet {
	if max <= 0 {
		max = DefaultMaxSecrets
	}
	return &SecretSet{max: max}
}

// Add remembers a secret (a copy). Adding one that is there moves it to
// the newest end.
func (t *SecretSet) Add(secret []byte) {
	if t == nil || len(secret) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var list [][]byte
	if old := t.snap.Load(); old != nil {
		list = make([][]byte, 0, len(old.list)+1)
		for _, s := range old.list {
			if !bytes.Equal(s, secret) {
				list = append(list, s)
			}
		}
	}
	list = append(list, bytes.Clone(secret))
	if len(list) > t.max {
		list = list[len(list)-t.max:]
	}
	n := &secretSnap{list: list}
	for _, s := range list {
		n.maxLen = max(n.maxLen, len(s))
	}
	t.snap.Store(n)
}

// Len is the number of secrets masked.
func (t *SecretSet) Len() int {
	if s := t.load(); s != nil {
		return len(s.list)
	}
	return 0
}

func (t *SecretSet) load() *secretSnap {
	if t == nil {
		return nil
	}
	return t.snap.Load()
}

// MaskString returns s with every copy of a secret turned into asterisks.
func (t *SecretSet) MaskString(s string) string {
	snap := t.load()
	if snap == nil {
		return s
	}
	var b []byte
	for _, sec := range snap.list {
		if b == nil {
			if !strings.Contains(s, string(sec)) {
				continue
			}
			b = []byte(s)
		}
		maskAll(b, sec)
	}
	if b == nil {
		return s
	}
	return string(b)
}

// maskAll turns every copy of sec in b into asterisks, in place.
func maskAll(b, sec []byte) {
	for i := 0; ; {
		j := bytes.Index(b[i:], sec)
		if j < 0 {
			return
		}
		for k := i + j; k < i+j+len(sec); k++ {
			b[k] = '*'
		}
		i += j + 1
	}
}

// maskEvent masks, in place, every string of a decoded event's body: the
// string members of sdk/abi's event structs, the values of an unknown
// type's members.
func (t *SecretSet) maskEvent(body abi.Payload) {
	if u, ok := body.(*abi.Unknown); ok {
		t.maskValue(u.Fields, 0)
		return
	}
	v := reflect.ValueOf(body)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	v = v.Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.String && f.CanSet() {
			f.SetString(t.MaskString(f.String()))
		}
	}
}

// maskValue masks the strings in a decoded JSON value (an event's
// fields), in place where it can; depth bounds a hostile nesting.
func (t *SecretSet) maskValue(v any, depth int) any {
	if depth > 32 {
		return v
	}
	switch x := v.(type) {
	case string:
		return t.MaskString(x)
	case map[string]any:
		for k, e := range x {
			x[k] = t.maskValue(e, depth+1)
		}
	case []any:
		for i, e := range x {
			x[i] = t.maskValue(e, depth+1)
		}
	}
	return v
}

// Handler wraps a log handler so that no record it writes holds a secret
// of the set: the message and every string attribute are masked.
func (t *SecretSet) Handler(h slog.Handler) slog.Handler {
	return &maskHandler{t: t, h: h}
}

type maskHandler struct {
	t *SecretSet
	h slog.Handler
}

func (m *maskHandler) Enabled(ctx context.Context, l slog.Level) bool { return m.h.Enabled(ctx, l) }

func (m *maskHandler) Handle(ctx context.Context, r slog.Record) error {
	if m.t.load() == nil {
		return m.h.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, m.t.MaskString(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(m.t.maskAttr(a, 0))
		return true
	})
	return m.h.Handle(ctx, out)
}

func (m *maskHandler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = m.t.maskAttr(a, 0)
	}
	return &maskHandler{t: m.t, h: m.h.WithAttrs(masked)}
}

func (m *maskHandler) WithGroup(name string) slog.Handler {
	return &maskHandler{t: m.t, h: m.h.WithGroup(name)}
}

// maskAttr masks an attribute's value: strings, errors and anything else
// printed as text (its text is what the log would show).
func (t *SecretSet) maskAttr(a slog.Attr, depth int) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, t.MaskString(v.String()))
	case slog.KindGroup:
		if depth > 8 {
			return a
		}
		g := v.Group()
		out := make([]any, len(g))
		for i, e := range g {
			out[i] = t.maskAttr(e, depth+1)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if s := v.String(); len(s) > 0 {
			if m := t.MaskString(s); m != s {
				return slog.String(a.Key, m)
			}
		}
	}
	return a
}
