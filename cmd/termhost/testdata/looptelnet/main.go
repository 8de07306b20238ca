// Command looptelnet is a hostile test plugin that claims the name
// "telnet" and loops forever on every chunk of data. Opening and closing a
// session works, so only a canary that feeds it data can tell.
package main

import "github.com/termhost/termhost/sdk"

var spin uint64

func init() { sdk.Register(func(sdk.Open) (sdk.Session, error) { return session{}, nil }) }

func main() {}

type session struct{}

func (session) Data(*sdk.Out, sdk.Dir, []byte) sdk.Action {
	for {
		spin++
	}
}
