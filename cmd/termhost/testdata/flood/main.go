// Command flood is a hostile test plugin: on every inbound chunk from the
// device simulator (one that mentions its hostname, edge-r1) it emits
// 48 MiB toward the user 50 times over (2.4 GiB per chunk), all from one
// buffer inside its own 64 MiB of memory. The host must not hold all of
// that at once. Other chunks pass, so the plugin gets past the host's
// canary and floods only a live session.
package main

import (
	"bytes"

	"github.com/termhost/termhost/sdk"
)

var big []byte

func init() { sdk.Register(func(sdk.Open) (sdk.Session, error) { return session{}, nil }) }

func main() {}

type session struct{}

func (session) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	if dir == sdk.Outbound || !bytes.Contains(p, []byte("edge-r1")) {
		return sdk.Continue
	}
	if big == nil {
		big = make([]byte, 48<<20)
		for i := range big {
			big[i] = 'x'
		}
	}
	for range 50 {
		out.ToUser(big)
	}
	return sdk.Consumed
}
