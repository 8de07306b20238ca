package mcp_test

// Helpers for the seed-000 properties: generators, a model of the Telnet
// client's answers, and views of the session list. Every helper that
// asserts takes the property's *rapid.T (as tb).

import (
	"slices"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

const (
	iac  = 0xff
	will = 0xfb
	wont = 0xfc
	do   = 0xfd
	dont = 0xfe
	sb   = 0xfa
	se   = 0xf0
)

// listed returns telnet_list's entries by session id.
func listed(t tb, cs *sdk.ClientSession) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, e := range mustCall(t, cs, "telnet_list", map[string]any{})["sessions"].([]any) {
		m := e.(map[string]any)
		id, _ := m["sessionId"].(string)
		if _, dup := out[id]; dup {
			t.Fatalf("session %s listed twice", id)
		}
		out[id] = m
	}
	return out
}

// listedIDs returns the ids telnet_list shows, sorted.
func listedIDs(t tb, cs *sdk.ClientSession) []string {
	t.Helper()
	var ids []string
	for id := range listed(t, cs) {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// sorted returns a sorted copy of ids (nil for none, like listedIDs).
func sorted(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(ids))
}

// waitUnread waits, without reading, until telnet_list says the session
// holds n unread bytes; it fails if it sees more, or after 5 s.
func waitUnread(t tb, cs *sdk.ClientSession, id string, n int) {
	t.Helper()
	var unread float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		e, ok := listed(t, cs)[id]
		if !ok {
			t.Fatalf("session %s is not listed", id)
		}
		unread = e["unreadBytes"].(float64)
		if int(unread) == n {
			return
		}
		if int(unread) > n {
			break
		}
	}
	t.Fatalf("session %s holds %v unread bytes, want %d", id, unread, n)
}

// bytesExcept draws n bytes (min ≤ n ≤ max) none of which is in not.
func bytesExcept(min, max int, not ...byte) *rapid.Generator[[]byte] {
	var alphabet []byte
	for b := range 256 {
		if !slices.Contains(not, byte(b)) {
			alphabet = append(alphabet, byte(b))
		}
	}
	return rapid.SliceOfN(rapid.SampledFrom(alphabet), min, max)
}

// cuts draws how to split n bytes into pieces: the lengths of the pieces,
// each at least 1, summing to n.
func cuts(t *rapid.T, n, maxPiece int, label string) []int {
	var out []int
	for n > 0 {
		k := rapid.IntRange(1, min(n, maxPiece)).Draw(t, label)
		out = append(out, k)
		n -= k
	}
	return out
}

// runeOfWidth draws a character whose UTF-8 encoding is w bytes long. One
// byte: printable ASCII, tab and LF (CR has its own Telnet rules and ESC
// sequences their own property).
func runeOfWidth(w int) *rapid.Generator[rune] {
	switch w {
	case 1:
		return rapid.OneOf(rapid.RuneFrom([]rune{'\t', '\n'}), rapid.Int32Range(' ', '~'))
	case 2:
		return rapid.OneOf(rapid.RuneFrom([]rune{'é', 'ß', 'ж', 'ÿ', 'ק'}), rapid.Int32Range(0x80, 0x7ff))
	case 3:
		return rapid.OneOf(rapid.RuneFrom([]rune{'€', '한', '中', '─', '\uFFFD', '\uFEFF'}),
			rapid.Int32Range(0x800, 0xffff).Filter(func(r rune) bool { return !(r >= 0xd800 && r <= 0xdfff) }))
	default:
		return rapid.OneOf(rapid.RuneFrom([]rune{'😀', '𝄞', '𠜎'}), rapid.Int32Range(0x10000, utf8.MaxRune))
	}
}

// multiByteText draws text in which characters of 1, 2, 3 and 4 bytes are
// equally likely, and which holds at least one of 2, 3 and 4 bytes each.
func multiByteText(t *rapid.T) string {
	rs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) rune {
		return runeOfWidth(rapid.IntRange(1, 4).Draw(t, "width")).Draw(t, "char")
	}), 0, 30).Draw(t, "chars")
	for w := 2; w <= 4; w++ {
		i := rapid.IntRange(0, len(rs)).Draw(t, "at")
		rs = slices.Insert(rs, i, runeOfWidth(w).Draw(t, "required"))
	}
	return string(rs)
}

// telnetEscape is what a Telnet client must put on the wire for text in
// non-binary mode: 0xFF doubled, a bare CR followed by NUL.
func telnetEscape(p []byte) []byte {
	var out []byte
	for i, c := range p {
		out = append(out, c)
		switch {
		case c == iac:
			out = append(out, iac)
		case c == '\r' && (i+1 == len(p) || p[i+1] != '\n'):
			out = append(out, 0)
		}
	}
	return out
}

// client is a model of termhost's Telnet client for option negotiation:
// RFC 1143 under termhost's option policy, for a client that never asks
// for an option itself (so no WANT states).
type client struct {
	us, him [256]bool // enabled on our side / the peer's side
}

var (
	remoteOK = map[byte]bool{0: true, 1: true, 3: true, 25: true}                      // BINARY ECHO SGA EOR
	localOK  = map[byte]bool{0: true, 3: true, 24: true, 31: true, 32: true, 39: true} // BINARY SGA TTYPE NAWS TSPEED NEW-ENVIRON
)

// receive applies the peer's verb for opt and returns the client's answer.
func (c *client) receive(verb, opt byte) []byte {
	switch verb {
	case will:
		switch {
		case c.him[opt]:
			return nil // already enabled: no answer, no loop
		case remoteOK[opt]:
			c.him[opt] = true
			return []byte{iac, do, opt}
		}
		return []byte{iac, dont, opt}
	case wont:
		if c.him[opt] {
			c.him[opt] = false
			return []byte{iac, dont, opt}
		}
		return nil
	case do:
		switch {
		case c.us[opt]:
			return nil
		case localOK[opt]:
			c.us[opt] = true
			r := []byte{iac, will, opt}
			if opt == 31 { // NAWS: the window size follows at once
				r = append(r, iac, sb, 31, 0, 80, 0, 24, iac, se)
			}
			return r
		}
		return []byte{iac, wont, opt}
	case dont:
		if c.us[opt] {
			c.us[opt] = false
			return []byte{iac, wont, opt}
		}
		return nil
	}
	panic("not a verb")
}

func verbName(v byte) string {
	return map[byte]string{will: "WILL", wont: "WONT", do: "DO", dont: "DONT"}[v]
}
