package plugin

import (
	"errors"
	"strings"
	"testing"

	"github.com/termhost/termhost/sdk/abi"
)

// Host calls reach the handler of the session that made them, refusals
// carry their reason, a session without a handler is refused, and the
// handler stays with the session across a fail-over.
func TestHostCalls(t *testing.T) {
	r := open(t, Config{Embedded: embedded(counter1), PoolSize: 1})
	a := attach(t, r, "counter", "")
	b := attach(t, r, "counter", "") // same instance (pool of one)
	var seen []string
	a.SetHostCall(func(req []byte) ([]byte, error) {
		seen = append(seen, "a:"+string(req))
		if strings.Contains(string(req), "no") {
			return nil, errors.New("not today")
		}
		return []byte("yes " + strings.Repeat("x", 10000)), nil // larger than the SDK's first buffer
	})
	call := func(s *Binding, req string) string {
		t.Helper()
		ems, err := control(s, []byte(`{"op":"call","req":`+req+`}`))
		if err != nil {
			t.Fatalf("control: %v", err)
		}
		return collect(ems, abi.Reply)
	}
	if got := call(a, `{"op":"ask"}`); !strings.HasPrefix(got, `{"answer":"yes xxx`) || len(got) < 10000 {
		t.Errorf("answer: %.60s… (%d bytes)", got, len(got))
	}
	if got := call(a, `{"op":"no"}`); got != `{"error":"not today"}` {
		t.Errorf("refusal: %s", got)
	}
	if got := call(b, `{"op":"ask"}`); !strings.Contains(got, "no host calls") {
		t.Errorf("no handler: %s", got)
	}
	if len(seen) != 2 || seen[0] != `a:{"op":"ask"}` {
		t.Errorf("handler saw %q", seen)
	}
	send(t, a, "once:panic") // a moves to a fresh instance
	if got := call(a, `{"op":"again"}`); !strings.HasPrefix(got, `{"answer":"yes`) {
		t.Errorf("after fail-over: %.60s", got)
	}
}
