package mcp_test

// The 14 correctness properties of seed 000 (SPEC TEL-9), each checked with
// pgregory.net/rapid for at least 100 cases, through go-sdk's MCP client
// against the real telnet plugin in wazero and a bare TCP server that writes
// exactly the bytes each case needs.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/termhost/termhost/host"
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

// check runs property n of seed 000 as a subtest named after it, for
// rapid's default 100 cases (-rapid.checks raises it).
func check(t *testing.T, f func(*rapid.T)) {
	t.Helper()
	n, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(t.Name(), "_")[0], "TestProperty"))
	t.Run(seedProperties[n], func(t *testing.T) { rapid.Check(t, f) })
}

// seedProperties are the names the seed gives its properties.
var seedProperties = map[int]string{
	1:  "Property 1: a successful connect creates a unique session, also under concurrency",
	2:  "Property 2: a sent command is followed by CR LF",
	3:  "Property 3: reading returns the buffered data and empties the buffer",
	4:  "Property 4: received data is buffered automatically",
	5:  "Property 5: disconnect closes the socket and removes the session",
	6:  "Property 6: disconnect is idempotent",
	7:  "Property 7: the session list is complete",
	8:  "Property 8: the buffer never exceeds its maximum and drops the oldest bytes",
	9:  "Property 9: valid tool calls are routed to their tool and answered in MCP form",
	10: "Property 10: IAC sequences are interpreted and separated from data",
	11: "Property 11: option negotiation gets the right WILL/WONT/DO/DONT answer",
	12: "Property 12: binary data round-trips through base64 and hex",
	13: "Property 13: UTF-8 is decoded correctly, multi-byte characters whole",
	14: "Property 14: ANSI control sequences are preserved byte for byte",
}

func TestProperty1_ConnectCreatesUniqueSessions(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 12).Draw(rt, "concurrent")
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, msg, isErr := call(t, cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": srv.port()})
				if isErr {
					rt.Errorf("connect: %s", msg)
					return
				}
				ids[i], _ = res["sessionId"].(string)
			}()
		}
		wg.Wait()
		for range n {
			srv.accept(t)
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" || seen[id] {
				rt.Fatalf("ids not unique: %v", ids)
			}
			seen[id] = true
		}
		for _, id := range ids {
			mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
		}
	})
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

func TestProperty2_SendAppendsCRLF(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	check(t, func(rt *rapid.T) {
		cmd := rapid.StringMatching(`[ -~\r\tçé€😀]{0,80}`).Draw(rt, "command")
		mustCall(t, cs, "telnet_send", map[string]any{"sessionId": id, "command": cmd})
		want := telnetEscape([]byte(cmd + "\r\n"))
		if got := recvExactly(t, conn, len(want)); !bytes.Equal(got, want) {
			rt.Fatalf("wire %q, want %q", got, want)
		}
	})
}

func TestProperty3_ReadEmptiesBuffer(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	check(t, func(rt *rapid.T) {
		text := rapid.StringMatching(`[a-zA-Z0-9 .:#>$-]{1,200}`).Draw(rt, "text")
		conn.Write([]byte(text))
		got := readBytes(t, cs, id, len(text))
		if string(got) != text {
			rt.Fatalf("read %q, want %q", got, text)
		}
		res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id})
		if res["data"] != "" || res["bytes"].(float64) != 0 {
			rt.Fatalf("second read returned %v", res)
		}
	})
}

func TestProperty4_ReceivedDataIsBuffered(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	check(t, func(rt *rapid.T) {
		chunks := rapid.SliceOfN(rapid.StringMatching(`[a-z0-9 \n]{1,40}`), 1, 8).Draw(rt, "chunks")
		var all string
		for _, c := range chunks {
			conn.Write([]byte(c))
			all += c
			if rapid.Bool().Draw(rt, "pause") {
				time.Sleep(time.Millisecond)
			}
		}
		conn.Write([]byte("<END>"))
		got := readText(t, cs, id, "<END>")
		if got != all+"<END>" {
			rt.Fatalf("buffered %q, want %q", got, all+"<END>")
		}
	})
}

func TestProperty5_DisconnectReleasesSession(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	check(t, func(rt *rapid.T) {
		id, conn := connect(t, cs, srv)
		if rapid.Bool().Draw(rt, "unread output") {
			conn.Write([]byte("pending output"))
		}
		mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
		// Closed: EOF, or a reset when unread bytes were still queued.
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			rt.Fatalf("socket not closed: %v", err)
		}
		for _, s := range mustCall(t, cs, "telnet_list", map[string]any{})["sessions"].([]any) {
			if s.(map[string]any)["sessionId"] == id {
				rt.Fatalf("session %s still listed", id)
			}
		}
		if _, msg, isErr := call(t, cs, "telnet_read", map[string]any{"sessionId": id}); !isErr || !strings.Contains(msg, "Session not found") {
			rt.Fatalf("read after disconnect: %q", msg)
		}
	})
}

func TestProperty6_DisconnectIsIdempotent(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	other, _ := connect(t, cs, srv)
	check(t, func(rt *rapid.T) {
		id, _ := connect(t, cs, srv)
		n := rapid.IntRange(2, 5).Draw(rt, "calls")
		for i := range n {
			res, msg, isErr := call(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
			if isErr {
				rt.Fatalf("call %d: %s", i+1, msg)
			}
			if res["disconnected"] != (i == 0) {
				rt.Fatalf("call %d: disconnected=%v", i+1, res["disconnected"])
			}
			list := mustCall(t, cs, "telnet_list", map[string]any{})["sessions"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["sessionId"] != other {
				rt.Fatalf("after call %d the list is %v", i+1, list)
			}
		}
	})
}

func TestProperty7_ListIsComplete(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(rt, "sessions")
		var ids []string
		for range n {
			id, _ := connect(t, cs, srv)
			ids = append(ids, id)
		}
		list := mustCall(t, cs, "telnet_list", map[string]any{})["sessions"].([]any)
		var listed []string
		for _, e := range list {
			m := e.(map[string]any)
			listed = append(listed, m["sessionId"].(string))
			if m["host"] != "127.0.0.1" || int(m["port"].(float64)) != srv.port() {
				rt.Fatalf("entry %v lacks host/port", m)
			}
			if _, err := time.Parse(time.RFC3339Nano, m["connectedAt"].(string)); err != nil {
				rt.Fatalf("connectedAt: %v", err)
			}
		}
		slices.Sort(listed)
		slices.Sort(ids)
		if !slices.Equal(listed, ids) {
			rt.Fatalf("listed %v, opened %v", listed, ids)
		}
		for _, id := range ids {
			mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
		}
	})
}

func TestProperty8_BufferNeverExceedsMax(t *testing.T) {
	const max = 4096
	_, cs := newHost(t, host.Config{BufferSize: max})
	srv := newRawServer(t)
	check(t, func(rt *rapid.T) {
		id, conn := connect(t, cs, srv)
		total := rapid.IntRange(0, 5*max).Draw(rt, "total")
		data := make([]byte, total)
		for i := range data {
			data[i] = 'a' + byte(i%26)
		}
		for len(data) > 0 {
			n := min(len(data), rapid.IntRange(1, 3000).Draw(rt, "chunk"))
			conn.Write(data[:n])
			data = data[n:]
		}
		conn.Close() // the session sees EOF after the last byte
		mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "exit": true, "timeoutMs": 5000, "maxBytes": 1, "encoding": "base64"})
		res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "encoding": "base64", "maxBytes": 1 << 20})
		got, _ := base64.StdEncoding.DecodeString(res["data"].(string))
		kept := min(total, max)
		// The first read took one byte; the rest of the newest max bytes remain.
		if len(got) > max || (total > 0 && len(got) != kept-1) {
			rt.Fatalf("read %d bytes after a 1-byte read, total %d, max %d", len(got), total, max)
		}
		for i, c := range got {
			if want := 'a' + byte((total-len(got)+i)%26); c != want {
				rt.Fatalf("byte %d is %q, want %q: not the newest bytes", i, c, want)
			}
		}
		mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
	})
}

func TestProperty9_ToolCallsAreRouted(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	conn.Write([]byte("x"))
	check(t, func(rt *rapid.T) {
		tool := rapid.SampledFrom([]string{"telnet_send", "telnet_read", "telnet_list", "telnet_nope", "telnet_read_bad"}).Draw(rt, "tool")
		switch tool {
		case "telnet_send":
			res := mustCall(t, cs, tool, map[string]any{"sessionId": id, "command": "x"})
			if res["sentBytes"].(float64) != 3 {
				rt.Fatalf("send result %v", res)
			}
		case "telnet_read":
			res := mustCall(t, cs, tool, map[string]any{"sessionId": id, "encoding": rapid.SampledFrom([]string{"utf8", "hex", "base64", "binary"}).Draw(rt, "enc")})
			if _, ok := res["reason"]; !ok {
				rt.Fatalf("read result %v has no reason", res)
			}
		case "telnet_list":
			if _, ok := mustCall(t, cs, tool, map[string]any{})["sessions"]; !ok {
				rt.Fatal("list result has no sessions")
			}
		case "telnet_nope":
			if _, msg, isErr := call(t, cs, tool, map[string]any{}); !isErr || !strings.Contains(msg, "unknown tool") {
				rt.Fatalf("unknown tool: %q", msg)
			}
		case "telnet_read_bad":
			if _, msg, isErr := call(t, cs, "telnet_read", map[string]any{"sessionId": id, "encoding": "ebcdic"}); !isErr || !strings.Contains(msg, "encoding") {
				rt.Fatalf("bad encoding: %q", msg)
			}
		}
	})
}

// telnetStream draws a server stream of data and Telnet commands and
// returns it with the application data a client must deliver.
func telnetStream(rt *rapid.T) (wire, data []byte) {
	n := rapid.IntRange(0, 40).Draw(rt, "tokens")
	for range n {
		switch rapid.IntRange(0, 6).Draw(rt, "token") {
		case 0, 1:
			s := rapid.SliceOfN(rapid.ByteRange(0, 0xfe), 1, 20).Draw(rt, "data")
			s = bytes.ReplaceAll(s, []byte{'\r'}, []byte{'\n'}) // CR handling has its own tests
			wire, data = append(wire, s...), append(data, s...)
		case 2:
			wire, data = append(wire, iac, iac), append(data, iac)
		case 3:
			wire = append(wire, iac, rapid.SampledFrom([]byte{0xf1, 0xf9, 0xef, 0xf6}).Draw(rt, "cmd")) // NOP GA EOR AYT
		case 4:
			wire = append(wire, iac, rapid.SampledFrom([]byte{will, wont, do, dont}).Draw(rt, "verb"), rapid.Byte().Draw(rt, "opt"))
		case 5:
			wire = append(wire, iac, sb, 24, 1, iac, se) // TTYPE SEND (answered only if TTYPE is on)
		case 6:
			wire = append(wire, iac, sb, 39, 0, 'X', iac, iac, 'Y', iac, se) // unsolicited SB with IAC IAC inside
		}
	}
	return wire, data
}

func TestProperty10_IACSequencesAreSeparatedFromData(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	check(t, func(rt *rapid.T) {
		id, conn := connect(t, cs, srv)
		go io.Copy(io.Discard, conn) // the client's negotiation replies
		wire, data := telnetStream(rt)
		wire = append(wire, "<END>"...)
		data = append(data, "<END>"...)
		conn.Write(wire)
		got := readBytes(t, cs, id, len(data))
		if !bytes.Equal(got, data) {
			rt.Fatalf("data %q\nwant %q\nwire %q", got, data, wire)
		}
		mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
	})
}

// expectedReply is the RFC 1143 answer of a fresh client under termhost's
// option policy.
func expectedReply(verb, opt byte) []byte {
	remoteOK := map[byte]bool{0: true, 1: true, 3: true, 25: true}
	localOK := map[byte]bool{0: true, 3: true, 24: true, 31: true, 32: true, 39: true}
	switch verb {
	case will:
		if remoteOK[opt] {
			return []byte{iac, do, opt}
		}
		return []byte{iac, dont, opt}
	case do:
		if !localOK[opt] {
			return []byte{iac, wont, opt}
		}
		r := []byte{iac, will, opt}
		if opt == 31 { // NAWS: the window size follows at once
			r = append(r, iac, sb, 31, 0, 80, 0, 24, iac, se)
		}
		return r
	}
	return nil // WONT/DONT of a disabled option: nothing to say
}

func TestProperty11_OptionNegotiationReplies(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	check(t, func(rt *rapid.T) {
		id, conn := connect(t, cs, srv)
		verb := rapid.SampledFrom([]byte{will, wont, do, dont}).Draw(rt, "verb")
		opt := rapid.Byte().Filter(func(b byte) bool { return b != 5 }).Draw(rt, "option")
		// DO STATUS is always refused: its WONT marks the end of the reply.
		conn.Write([]byte{iac, verb, opt, iac, do, 5})
		want := append(expectedReply(verb, opt), iac, wont, 5)
		if got := recvExactly(t, conn, len(want)); !bytes.Equal(got, want) {
			rt.Fatalf("%s %d: reply % x, want % x", verbName(verb), opt, got, want)
		}
		mustCall(t, cs, "telnet_disconnect", map[string]any{"sessionId": id})
	})
}

func verbName(v byte) string {
	return map[byte]string{will: "WILL", wont: "WONT", do: "DO", dont: "DONT"}[v]
}

func TestProperty12_BinaryDataRoundTrips(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	conn.Write([]byte{iac, will, 0}) // BINARY: no CR rewriting
	if got := recvExactly(t, conn, 3); !bytes.Equal(got, []byte{iac, do, 0}) {
		t.Fatalf("binary not accepted: % x", got)
	}
	check(t, func(rt *rapid.T) {
		data := rapid.SliceOfN(rapid.Byte(), 1, 600).Draw(rt, "data")
		conn.Write(bytes.ReplaceAll(data, []byte{iac}, []byte{iac, iac}))
		enc := rapid.SampledFrom([]string{"base64", "hex"}).Draw(rt, "encoding")
		var got []byte
		deadline := time.Now().Add(5 * time.Second)
		for len(got) < len(data) && time.Now().Before(deadline) {
			res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "encoding": enc, "idleMs": 20, "timeoutMs": 1000})
			var b []byte
			var err error
			if enc == "hex" {
				b, err = hex.DecodeString(res["data"].(string))
			} else {
				b, err = base64.StdEncoding.DecodeString(res["data"].(string))
			}
			if err != nil {
				rt.Fatal(err)
			}
			got = append(got, b...)
		}
		if !bytes.Equal(got, data) {
			rt.Fatalf("%s round trip: got % x, want % x", enc, got, data)
		}
	})
}

func TestProperty13_UTF8IsDecodedWhole(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	check(t, func(rt *rapid.T) {
		text := strings.ReplaceAll(rapid.StringN(1, 60, -1).Draw(rt, "text"), "\r", " ")
		text = strings.ToValidUTF8(text, "?")
		raw := []byte(text)
		var got strings.Builder
		// Write in pieces cut at arbitrary bytes, reading in between, so
		// reads meet characters whose bytes have not all arrived.
		for len(raw) > 0 {
			n := min(len(raw), rapid.IntRange(1, 5).Draw(rt, "piece"))
			conn.Write(raw[:n])
			raw = raw[n:]
			res := mustCall(t, cs, "telnet_read", map[string]any{"sessionId": id, "idleMs": 5, "timeoutMs": 200})
			s := res["data"].(string)
			if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) && !strings.ContainsRune(text, utf8.RuneError) {
				rt.Fatalf("read returned a broken character: %q", s)
			}
			got.WriteString(s)
		}
		conn.Write([]byte("\x01"))
		got.WriteString(strings.TrimSuffix(readText(t, cs, id, "\x01"), "\x01"))
		if got.String() != text {
			rt.Fatalf("decoded %q, want %q", got.String(), text)
		}
	})
}

func TestProperty14_ANSISequencesArePreserved(t *testing.T) {
	_, cs := newHost(t, host.Config{})
	srv := newRawServer(t)
	id, conn := connect(t, cs, srv)
	check(t, func(rt *rapid.T) {
		var b strings.Builder
		for range rapid.IntRange(1, 15).Draw(rt, "parts") {
			switch rapid.IntRange(0, 4).Draw(rt, "kind") {
			case 0:
				b.WriteString(rapid.StringMatching(`[a-zA-Z0-9 .:]{1,12}`).Draw(rt, "text"))
			case 1:
				fmt.Fprintf(&b, "\x1b[%d;%dm", rapid.IntRange(0, 9).Draw(rt, "attr"), rapid.IntRange(30, 47).Draw(rt, "color"))
			case 2:
				fmt.Fprintf(&b, "\x1b[38;2;%d;%d;%dm", rapid.IntRange(0, 255).Draw(rt, "r"), rapid.IntRange(0, 255).Draw(rt, "g"), rapid.IntRange(0, 255).Draw(rt, "b"))
			case 3:
				fmt.Fprintf(&b, "\x1b[%d;%dH\x1b[2J\x1b[K", rapid.IntRange(1, 24).Draw(rt, "row"), rapid.IntRange(1, 80).Draw(rt, "col"))
			case 4:
				b.WriteString("\x1b]0;" + rapid.StringMatching(`[a-z ]{0,10}`).Draw(rt, "title") + "\x07")
			}
		}
		want := b.String() + "<END>"
		conn.Write([]byte(want))
		if got := readText(t, cs, id, "<END>"); got != want {
			rt.Fatalf("read %q, want %q", got, want)
		}
	})
}
