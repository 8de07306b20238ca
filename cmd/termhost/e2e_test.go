package main

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termhost/termhost/internal/devsim"
)

// TestStdioEndToEnd drives the built binary over stdio against the device
// simulator, whose writes are cut into random pieces so IAC sequences are
// split anywhere.
func TestStdioEndToEnd(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			h, port := startDevsim(t, devsim.Config{
				EOR: true, Fragment: devsim.RandomFragmenter(seed, 3), FragmentDelay: 50 * time.Microsecond,
			})
			cs := startServe(t)

			id := mustCall(t, cs, "telnet_connect", map[string]any{"host": h, "port": port, "name": "dev"})["sessionId"].(string)
			// The device marks every prompt with EOR, and a mark that comes
			// after the prompt's text was read is still the next read's.
			expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "User Access Verification")
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "admin"})
			expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "Password:")
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": "dev", "command": "termhost"})
			expect(t, cs, map[string]any{"sessionId": "dev", "prompt": true, "timeoutMs": 5000}, "prompt", "edge-r1>")

			// idle: output arrives, then goes quiet.
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "show version"})
			promptSeen(t, cs, id, expectRes(t, cs, map[string]any{"sessionId": id, "idleMs": 300, "timeoutMs": 5000}, "idle", "uptime"))

			// until on a computed value, through the pager-free echo.
			v := strconv.Itoa(int(seed) * 7919 * 104729)
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "echo " + v})
			promptSeen(t, cs, id, expectRes(t, cs, map[string]any{"sessionId": id, "until": `(?m)^` + v + `\r?$`, "timeoutMs": 5000}, "matched", v))

			// waitMs alone is a ceiling, not a sleep.
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "show clock"})
			start := time.Now()
			res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "waitMs": 10000})
			if res["reason"] != "idle" || time.Since(start) > 5*time.Second {
				t.Fatalf("waitMs read: reason %v after %v", res["reason"], time.Since(start))
			}
			promptSeen(t, cs, id, res)

			// The pager, answered with a single key.
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "show interfaces"})
			expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "--More--")
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "q", "noNewline": true})
			expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "edge-r1>")

			// timeout, and the timeout actually used.
			res = mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "until": "never-appears", "timeoutMs": 150})
			if res["reason"] != "timeout" || res["timeoutMs"].(float64) != 150 {
				t.Fatalf("timeout read: %v", res)
			}
			// AYT reaches the device as a Telnet command.
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "", "noNewline": true, "signal": "ayt"})
			expect(t, cs, map[string]any{"sessionId": id, "until": `yes\]`, "timeoutMs": 5000}, "matched", "yes")

			list := mustCall(t, cs, "telnet_list", map[string]any{})["sessions"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["sessionId"] != id || list[0].(map[string]any)["name"] != "dev" {
				t.Fatalf("list: %v", list)
			}
			// exit: the device closes the connection; the output stays readable.
			mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "exit"})
			expect(t, cs, map[string]any{"sessionId": id, "exit": true, "timeoutMs": 5000}, "exit", "")
			if _, msg, isErr := call(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": "x"}); !isErr || !strings.Contains(msg, "Session disconnected") {
				t.Fatalf("send after exit: %q", msg)
			}
			if r := mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id}); r["disconnected"] != true {
				t.Fatalf("first disconnect: %v", r)
			}
			if r := mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id}); r["disconnected"] != false {
				t.Fatalf("second disconnect: %v", r)
			}
			if list := mustCall(t, cs, "telnet_list", map[string]any{})["sessions"].([]any); len(list) != 0 {
				t.Fatalf("list after disconnect: %v", list)
			}
		})
	}
}

// TestBadArguments: every kind of bad input gets a clear error naming the
// field, and the server keeps serving.
func TestBadArguments(t *testing.T) {
	cs := startServe(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"telnet_connect", map[string]any{"port": 23}, "host"},
		{"telnet_connect", map[string]any{"host": "127.0.0.1"}, "port"},
		{"telnet_connect", map[string]any{"host": "", "port": 23}, "host"},
		{"telnet_connect", map[string]any{"host": "127.0.0.1", "port": 0}, "port"},
		{"telnet_connect", map[string]any{"host": "127.0.0.1", "port": 70000}, "port"},
		{"telnet_connect", map[string]any{"host": "127.0.0.1", "port": "twenty-three"}, "port"},
		{"telnet_connect", map[string]any{"host": "127.0.0.1", "port": 23, "timeout": -5}, "timeout"},
		{"telnet_connect", map[string]any{"host": "127.0.0.1", "port": 23, "colour": "red"}, "colour"},
		{"telnet_connect", map[string]any{"host": "127.0.0.1", "port": closedPort}, "connection refused"},
		{"telnet_connect", map[string]any{"host": "no-such-host.invalid", "port": 23}, "cannot resolve host"},
		{"telnet_send", map[string]any{"sessionId": "nope", "command": "x"}, "Session not found"},
		{"telnet_send", map[string]any{"sessionId": "", "command": "x"}, "sessionId"},
		{"telnet_send", map[string]any{"sessionId": "nope"}, "command"},
		{"telnet_send", map[string]any{"sessionId": "nope", "command": "x", "signal": "boom"}, "signal"},
		{"telnet_read", map[string]any{"sessionId": "nope"}, "Session not found"},
		{"telnet_read", map[string]any{}, "sessionId"},
		{"telnet_read", map[string]any{"sessionId": "nope", "encoding": "ebcdic"}, "encoding"},
		{"telnet_read", map[string]any{"sessionId": "nope", "waitMs": -1}, "waitMs"},
		{"telnet_read", map[string]any{"sessionId": "nope", "until": "("}, "until"},
		{"telnet_read", map[string]any{"sessionId": "nope", "maxBytes": 0.5}, "maxBytes"},
		{"telnet_disconnect", map[string]any{}, "sessionId"},
		{"telnet_frobnicate", map[string]any{}, "unknown tool"},
	}
	for _, c := range cases {
		_, msg, isErr := call(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: error=%v %q; want an error mentioning %q", c.tool, c.args, isErr, msg, c.want)
		}
	}
	// Still serving.
	if _, ok := mustCall(t, cs, "telnet_list", map[string]any{})["sessions"]; !ok {
		t.Fatal("telnet_list broken after bad input")
	}
}

// expectRes is expect returning the whole result.
func expectRes(t testing.TB, cs *sdk.ClientSession, args map[string]any, reason, want string) map[string]any {
	t.Helper()
	res := mustCall(t, cs, "telnet_read", args)
	if data, _ := res["data"].(string); res["reason"] != reason || !strings.Contains(data, want) {
		t.Fatalf("telnet_read %v: reason %v, data %q; want reason %s and %q", args, res["reason"], data, reason, want)
	}
	return res
}

// promptSeen makes sure the reader has had the prompt mark that ends the
// output res returned: in res's events, or, if the mark came after the
// prompt's text, in the next read.
func promptSeen(t testing.TB, cs *sdk.ClientSession, id string, res map[string]any) {
	t.Helper()
	evs, _ := res["events"].([]any)
	for _, e := range evs {
		if e.(map[string]any)["type"] == "prompt" {
			return
		}
	}
	expect(t, cs, map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}, "prompt", "")
}
