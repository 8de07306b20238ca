package main

import (
	"encoding/json"
	"strconv"
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
		st := &stream{t: t, p: p}
		feed := st.feed
		feed("\x1b]133;A\x1b\\$ \x1b]133;B\x1b\\")
		feed("false\r\n\x1b]133;C\x1b\\")
		feed("\x1b]133;D;1\x1b")     // cut inside the terminator
		feed("\\\x1b]133;A\x1b\\$ ") // prompt text before its B
		feed("\x1b]13")              // cut inside the introducer
		feed("3;B\x07")
		feed("plain output")
		if got, want := st.user.String(), "$ false\r\n$ plain output"; got != want {
			t.Errorf("to_user = %q, want %q", got, want)
		}
		var kinds []string
		for _, ev := range st.events {
			kinds = append(kinds, ev["type"].(string))
		}
		if strings.Join(kinds, ",") != "prompt,command,done,prompt" {
			t.Fatalf("events = %v", st.events)
		}
		if st.events[2]["at"] != 9 || st.events[2]["exitCode"] != 1.0 {
			t.Errorf("done = %v; want at 9 (the end of the output) with exitCode 1", st.events[2])
		}
		st.events = append(st.events[:2], st.events[3:]...)
		if st.events[0]["at"] != 2 || st.events[0]["exitCode"] != nil {
			t.Errorf("first prompt = %v; want at 2 with no exit code", st.events[0])
		}
		if st.events[2]["at"] != 11 || st.events[2]["exitCode"] != 1.0 || st.events[2]["durationMs"] == nil {
			t.Errorf("second prompt = %v; want at 11 with exitCode 1 and a duration", st.events[2])
		}
		a, _, err := p.Data(1, abi.Outbound, []byte("ls\r"))
		if err != nil || a != abi.Continue {
			t.Errorf("outbound: %v %v", a, err)
		}
	})
}

// TestStatusMarks: a POSIX shell's prompts (S;code, A, B) report the
// status only after a command line was typed, with a done event where the
// output ends; the first prompt, one after an empty line and one drawn
// again carry none. bash's D path is not used.
func TestStatusMarks(t *testing.T) {
	sdktest.Both(t, newSession, "shell.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		if _, err := p.Open(1, abi.KindPTY, nil); err != nil {
			t.Fatal(err)
		}
		st := &stream{t: t, p: p}
		feed := st.feed
		// typ types keys: a command line sent at an idle prompt is a
		// command's start (the shell marks none of its own).
		typ := func(keys string) {
			t.Helper()
			a, ems, err := p.Data(1, abi.Outbound, []byte(keys))
			if err != nil || a != abi.Continue {
				t.Fatalf("outbound %q: %v %v %v", keys, a, ems, err)
			}
			for _, e := range ems {
				var ev map[string]any
				if e.Stream != abi.Event || json.Unmarshal(e.Data, &ev) != nil || ev["type"] != "command" {
					t.Fatalf("outbound %q emitted %v %q", keys, e.Stream, e.Data)
				}
				ev["at"] = st.user.Len()
				st.events = append(st.events, ev)
			}
		}
		// take returns the events since the last call, as "type:at:code".
		take := func() string {
			var s []string
			for _, ev := range st.events {
				d := ev["type"].(string) + ":" + strconv.Itoa(ev["at"].(int))
				if c, ok := ev["exitCode"]; ok {
					d += ":" + strconv.Itoa(int(c.(float64)))
				}
				if ev["type"] == "prompt" && (ev["exitCode"] != nil) != (ev["durationMs"] != nil) {
					d += ":duration?"
				}
				s = append(s, d)
			}
			st.events = st.events[:0]
			return strings.Join(s, " ")
		}
		prompt := func(code string) string {
			return "\x1b]133;S;" + code + "\x07\x1b]133;A\x07$ \x1b]133;B\x07"
		}
		typ("tr") // typed before the first prompt: read after it
		feed(prompt("0"))
		if got := take(); got != "prompt:2" {
			t.Errorf("first prompt: %s", got)
		}
		typ("ue\r")
		feed("true\r\n" + prompt("0"))
		if got := take(); got != "command:2 done:8:0 prompt:10:0" {
			t.Errorf("true: %s", got)
		}
		typ("\x1b[3;3R") // the screen's answer to BusyBox's cursor query
		typ("false\r")
		feed("false\r\n\x1b]133;S;1") // cut inside the status mark
		feed("\x07\x1b]13")
		feed("3;A\x07$ \x1b]133;B\x07")
		if got := take(); got != "command:10 done:17:1 prompt:19:1" {
			t.Errorf("false: %s", got)
		}
		typ("\r")
		feed("\r\n" + prompt("1"))
		if got := take(); got != "prompt:23" {
			t.Errorf("empty line: %s", got)
		}
		feed(prompt("1")) // drawn again (a resize)
		if got := take(); got != "prompt:25" {
			t.Errorf("redrawn: %s", got)
		}
		typ("ab\x7f\x7f\r") // typed and erased
		feed("\r\n" + prompt("1"))
		if got := take(); got != "prompt:29" {
			t.Errorf("erased line: %s", got)
		}
		typ("\x1b[A\r") // history: not followed
		feed("false\r\n" + prompt("1"))
		if got := take(); got != "command:29 prompt:38" {
			t.Errorf("history line: %s", got)
		}
		typ("read x\r")
		typ("\r") // read's input, not a command line
		feed("read x\r\n\r\n" + prompt("0"))
		feed(prompt("0")) // drawn again
		if got := take(); got != "command:38 done:48:0 prompt:50:0 prompt:52" {
			t.Errorf("read: %s", got)
		}
		if got, want := st.user.String(), "$ true\r\n$ false\r\n$ \r\n$ $ \r\n$ false\r\n$ read x\r\n\r\n$ $ "; got != want {
			t.Errorf("to_user = %q, want %q", got, want)
		}
		// A mark cut off by the end of the stream is given back.
		feed("\x1b]133;S;")
		ems, err := p.CloseSession(1)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(sdktest.Collect(ems, abi.ToUser)); got != "\x1b]133;S;" {
			t.Errorf("at close: %q", got)
		}
	})
}

// stream feeds a plugin inbound chunks and keeps what reached the user and
// the events, each with the user offset it was emitted at.
type stream struct {
	t      *testing.T
	p      sdktest.Plugin
	user   strings.Builder
	events []map[string]any
}

func (st *stream) feed(chunk string) {
	st.t.Helper()
	a, ems, err := st.p.Data(1, abi.Inbound, []byte(chunk))
	if err != nil {
		st.t.Fatal(err)
	}
	if a == abi.Continue {
		st.user.WriteString(chunk)
		return
	}
	for _, e := range ems {
		switch e.Stream {
		case abi.ToUser:
			st.user.Write(e.Data)
		case abi.Event:
			var ev map[string]any
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				st.t.Fatal(err)
			}
			ev["at"] = st.user.Len()
			st.events = append(st.events, ev)
		}
	}
}
