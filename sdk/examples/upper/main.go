// Command upper is the smallest useful termhost plugin: a dialect that
// upper-cases everything the peer sends and emits a "shout" event whenever a
// line ends with '!'. It is the worked example of the README's plugin guide.
package main

import (
	"bytes"

	"github.com/termhost/termhost/sdk"
)

func init() { sdk.Register(newSession) }

func main() {}

type session struct{ shouts int }

func newSession(sdk.Open) (sdk.Session, error) { return &session{}, nil }

func (s *session) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	if dir == sdk.Outbound {
		return sdk.Continue // keystrokes pass unchanged
	}
	out.ToUser(bytes.ToUpper(p))
	if bytes.Contains(p, []byte("!\r\n")) || bytes.Contains(p, []byte("!\n")) {
		s.shouts++
		out.Event(map[string]any{"type": "shout", "count": s.shouts})
	}
	return sdk.Consumed
}
