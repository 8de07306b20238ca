package mcp

import (
	"reflect"
	"testing"
)

// BenchmarkDirectPathJSON reads the two request lines of issue 19's load
// round trip as the direct path does: the envelope (with the call's
// params in the same pass) and the arguments.
func BenchmarkDirectPathJSON(b *testing.B) {
	lines := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1234,"method":"tools/call","params":{"name":"telnet_send","arguments":{"sessionId":"t17","command":"echo t17x1234x"}}}`),
		[]byte(`{"jsonrpc":"2.0","id":1235,"method":"tools/call","params":{"name":"telnet_read","arguments":{"sessionId":"t17","until":"\nt17x1234x\\r?\\n.*[#$] $","timeoutMs":10000}}}`),
	}
	send, read, _, _ := fastSchemas()
	sendArgs := newFastArgs(reflect.TypeFor[sendIn](), send)
	readArgs := newFastArgs(reflect.TypeFor[readIn](), read)
	b.ReportAllocs()
	for b.Loop() {
		for k, line := range lines {
			e, ok := fastEnvelope(line)
			if !ok || !e.call.ok {
				b.Fatal("not taken")
			}
			if k == 0 {
				var in sendIn
				if !sendArgs.decode(e.call.args, &in) {
					b.Fatal("send args")
				}
			} else {
				var in readIn
				if !readArgs.decode(e.call.args, &in) {
					b.Fatal("read args")
				}
			}
		}
	}
}
