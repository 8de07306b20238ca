package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/sdk/abi"
	"github.com/termhost/termhost/sdk/sdktest"
)

// TestShellMarks: a prompt cycle's marks leave the stream and become events,
// in order with the bytes around them, natively and inside wazero.
func TestShellMarks(t *testing.T) {
	sdktest.Both(t, newSession, "shell.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		if _, err := p.Open(1, abi.KindPTY, nil); err != nil {
			t.Fatal(err)
		}
		var user strings.Builder
		var events []map[string]any
		feed := func(chunk string) {
			t.Helper()
			a, ems, err := p.Data(1, abi.Inbound, []byte(chunk))
			if err != nil {
				t.Fatal(err)
			}
			if a == abi.Continue {
				user.WriteString(chunk)
				return
			}
			for _, e := range ems {
				switch e.Stream {
				case abi.ToUser:
					user.Write(e.Data)
				case abi.Event:
					var ev map[string]any
					if err := json.Unmarshal(e.Data, &ev); err != nil {
						t.Fatal(err)
					}
					ev["at"] = user.Len()
					events = append(events, ev)
				}
			}
		}
		feed("\x1b]133;A\x1b\\$ \x1b]133;B\x1b\\")
		feed("false\r\n\x1b]133;C\x1b\\")
		feed("\x1b]133;D;1\x1b")     // cut inside the terminator
		feed("\\\x1b]133;A\x1b\\$ ") // prompt text before its B
		feed("\x1b]13")              // cut inside the introducer
		feed("3;B\x07")
		feed("plain output")
		if got, want := user.String(), "$ false\r\n$ plain output"; got != want {
			t.Errorf("to_user = %q, want %q", got, want)
		}
		var kinds []string
		for _, ev := range events {
			kinds = append(kinds, ev["type"].(string))
		}
		if strings.Join(kinds, ",") != "prompt,command,done,prompt" {
			t.Fatalf("events = %v", events)
		}
		if events[2]["at"] != 9 || events[2]["exitCode"] != 1.0 {
			t.Errorf("done = %v; want at 9 (the end of the output) with exitCode 1", events[2])
		}
		events = append(events[:2], events[3:]...)
		if events[0]["at"] != 2 || events[0]["exitCode"] != nil {
			t.Errorf("first prompt = %v; want at 2 with no exit code", events[0])
		}
		if events[2]["at"] != 11 || events[2]["exitCode"] != 1.0 || events[2]["durationMs"] == nil {
			t.Errorf("second prompt = %v; want at 11 with exitCode 1 and a duration", events[2])
		}
		a, _, err := p.Data(1, abi.Outbound, []byte("ls\r"))
		if err != nil || a != abi.Continue {
			t.Errorf("outbound: %v %v", a, err)
		}
	})
}
