package session

import (
	"bytes"
	"reflect"
	"sync"
	"testing"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// A plugin built against ABI 1.0 emits events without sources and exec
// output as base64 data events; a 1.1 plugin emits channel bytes. The
// walker decodes both once into the same typed events: the hook gets the
// channel bytes (1.0's data event included), no data is ever recorded as
// an event, and what does not decode is dropped while the session goes on.
func TestEventStreamDecodesOnce(t *testing.T) {
	r := newRegistry(t, Limits{}, Config{})
	stream := [][]byte{
		[]byte(`{"type":"prompt","mark":"GA"}`),
		[]byte(`{"type":"prompt","dialect":"cisco_ios","hostname":"R1","mode":"privileged","submode":"","prompt":"R1#"}`),
		[]byte(`{"type":"command","command":246}`),
		[]byte(`{"type":"command"}`),
		[]byte(`{"type":"pager","text":"--More--","pages":2}`),
		[]byte(`{"type":"data","ch":2,"stream":"stderr","data":"b29wcw=="}`), // "oops", ABI 1.0
		[]byte(`not an event`),
		[]byte(`{"type":"exit","ch":2,"code":1}`),
		[]byte(`{"type":"closed","reason":"bye"}`),
	}
	plug := &fake{name: "v1", data: func(dir abi.Dir, p []byte, sk wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Inbound && bytes.Contains(p, []byte("go")) {
			for _, e := range stream {
				sk.Emit(abi.Event, e)
			}
			sk.Emit(abi.Channel, abi.AppendChannel(nil, 2, abi.FdStdout, []byte("out"))) // ABI 1.1
			sk.Emit(abi.Channel, abi.AppendChannel(nil, 9, abi.FdStdout, []byte("nobody reads this")))
		}
		return abi.Continue, nil
	}}
	var mu sync.Mutex
	var data []abi.ChannelData
	spec := Spec{Stages: []Stage{EventFunc(func(e *Event) bool {
		d, ok := e.Body.(*abi.ChannelData)
		if !ok || d.Ch != 2 {
			return false
		}
		mu.Lock()
		data = append(data, abi.ChannelData{Ch: d.Ch, Fd: d.Fd, Data: bytes.Clone(d.Data)})
		mu.Unlock()
		return true
	})}}
	s, peer, _ := testKind(t, r, spec, []*fake{plug}, nil)
	write(peer, "go!")
	readUntil(t, s, "go!")
	var evs []Event
	eventually(t, "the events", func() bool { evs = s.Events(0); return len(evs) >= 7 })
	want := []abi.Payload{
		&abi.Prompt{Source: abi.SourceTelnet, Mark: "GA"},
		&abi.Prompt{Source: abi.SourceDialect, Dialect: "cisco_ios", Hostname: "R1", Mode: "privileged", Prompt: "R1#"},
		&abi.Command{Source: abi.SourceTelnet, Code: 246},
		&abi.Command{Source: abi.SourceShell},
		&abi.Pager{Text: "--More--", Pages: 2, Answered: true},
		&abi.Exit{Ch: 2, Code: new(int)},
		&abi.Closed{Reason: "bye"},
	}
	*want[5].(*abi.Exit).Code = 1
	if len(evs) != len(want) {
		t.Fatalf("%d events recorded, want %d: %+v", len(evs), len(want), evs)
	}
	for i, e := range evs {
		if e.Type != want[i].EventType() || !reflect.DeepEqual(e.Body, want[i]) {
			t.Errorf("event %d: %s %#v, want %#v", i, e.Type, e.Body, want[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	wantData := []abi.ChannelData{{Ch: 2, Fd: abi.FdStderr, Data: []byte("oops")}, {Ch: 2, Fd: abi.FdStdout, Data: []byte("out")}}
	if !reflect.DeepEqual(data, wantData) {
		t.Errorf("channel data %+v, want %+v", data, wantData)
	}
	if !s.Alive() {
		t.Error("the session ended")
	}
}
