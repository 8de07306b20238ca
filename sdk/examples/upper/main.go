// Command upper is the worked example of the README's plugin guide: a
// dialect plugin that upper-cases everything the peer sends and emits a
// "shout" event, with a running count, whenever a line ends with '!'. The
// count is its state: it moves with the session when a new version of the
// plugin is hot-loaded.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/termhost/termhost/sdk"
)

func init() { sdk.Register(newSession) }

func main() {}

type session struct{ shouts uint64 }

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

// ExportState and ImportState make the plugin stateful: hot reload moves a
// live session to the new version with its count.
func (s *session) ExportState() ([]byte, error) {
	return binary.AppendUvarint(nil, s.shouts), nil
}

func (s *session) ImportState(b []byte) error {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return errors.New("upper: bad state")
	}
	s.shouts = n
	return nil
}
