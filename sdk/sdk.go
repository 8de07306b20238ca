// Package sdk is what a termhost plugin imports. A plugin is a Go main
// package built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared; it
// registers a Factory in an init function and the SDK turns the numeric
// exports of ABI v1.1 (sdk/ABI.md) into calls on the per-session values the
// factory returns:
//
//	package main
//
//	import "github.com/termhost/termhost/sdk"
//
//	func init() { sdk.Register(func(o sdk.Open) (sdk.Session, error) { return &upper{}, nil }) }
//	func main() {}
//
//	type upper struct{}
//
//	func (upper) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
//		if dir == sdk.Outbound {
//			return sdk.Continue // keystrokes pass unchanged
//		}
//		out.ToUser(bytes.ToUpper(p))
//		return sdk.Consumed
//	}
//
// The same Runtime that serves the wasm exports can be driven natively
// (NewRuntime), which is how sdk/sdktest runs one set of plugin tests both
// natively and inside wazero.
package sdk

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/termhost/termhost/sdk/abi"
)

// Re-exported ABI types, so a plugin needs only this import.
type (
	Dir    = abi.Dir
	Action = abi.Action
	Kind   = abi.Kind
)

const (
	Inbound  = abi.Inbound
	Outbound = abi.Outbound
	Continue = abi.Continue
	Consumed = abi.Consumed
	Close    = abi.Close
	Settled  = abi.Settled
)

// Open describes a session being opened on this plugin instance.
type Open struct {
	SID     uint32
	Kind    Kind
	Options []byte // per-session JSON options from the host (may be empty)
	Config  []byte // instance-wide JSON configuration from on_configure (may be empty)
}

// Factory makes the per-session value for a newly opened session.
type Factory func(Open) (Session, error)

// Session handles one session's chunks. Data is called once per received
// chunk (Inbound) or per piece of user input (Outbound). p is only valid
// during the call.
type Session interface {
	Data(out *Out, dir Dir, p []byte) Action
}

// Controller is implemented by sessions that answer on_control requests
// (resize, interrupt, queries). req is a JSON object with an "op" field; the
// returned reply (JSON, may be nil) is sent on the reply stream.
type Controller interface {
	Control(out *Out, req []byte) (reply []byte, err error)
}

// Ticker is implemented by sessions that want time to pass: Tick is called
// from on_tick and returns when it next wants to be called (Unix ms), or 0.
type Ticker interface {
	Tick(out *Out, nowMs int64) (nextMs int64)
}

// Closer is implemented by sessions that want to know when they end.
type Closer interface {
	Close(out *Out)
}

// Stateful is implemented by sessions whose state can move to another
// instance (hot swap, fail-over). ExportState is only called between chunks.
type Stateful interface {
	ExportState() ([]byte, error)
	ImportState(state []byte) error
}

// EmitFunc receives every emission of a Runtime.
type EmitFunc func(sid uint32, stream abi.Stream, p []byte)

// HostCallFunc serves a plugin's host calls (see Out.HostCall): req is one
// JSON object with an "op" field; a non-nil error refuses it, with the
// error's text as the reason.
type HostCallFunc func(sid uint32, req []byte) ([]byte, error)

// ErrNoHostCalls: the host serves no host calls to this session.
var ErrNoHostCalls = errors.New("the host serves no host calls to this session")

// RefusedError is a host call the host refused; Reason is its message.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Out is a session's way to emit. Bytes passed to it are copied by the host
// before the call returns, so buffers may be reused at once.
type Out struct {
	sid   uint32
	emit  EmitFunc
	rt    *Runtime
	evbuf []byte // Emit's encoding buffer
	chbuf []byte // Channel's
}

// SID is the session id the host gave on open.
func (o *Out) SID() uint32 { return o.sid }

// ToUser emits bytes toward the user (the next plugin in the chain, then the
// session's buffer and screen).
func (o *Out) ToUser(p []byte) {
	if len(p) > 0 {
		o.emit(o.sid, abi.ToUser, p)
	}
}

// ToPeer emits bytes toward the peer. One call is one write on the wire.
func (o *Out) ToPeer(p []byte) {
	if len(p) > 0 {
		o.emit(o.sid, abi.ToPeer, p)
	}
}

// Emit emits one typed event (sdk/abi's Prompt, Pager, Title …; sdk/ABI.md
// "Events"), encoded without reflection in a buffer the session reuses.
func (o *Out) Emit(e abi.Payload) {
	o.evbuf = e.AppendEvent(o.evbuf[:0])
	o.emit(o.sid, abi.Event, o.evbuf)
}

// Channel emits bytes of side channel ch's output stream fd (abi.FdStdout,
// abi.FdStderr) on the channel stream (ABI 1.1): bulk output that belongs
// to something other than the session's screen (an SSH exec's stdout)
// travels as bytes, never inside an event.
func (o *Out) Channel(ch uint32, fd uint8, p []byte) {
	o.chbuf = abi.AppendChannel(o.chbuf[:0], ch, fd, p)
	o.emit(o.sid, abi.Channel, o.chbuf)
}

// Event emits one event of a plugin's own type; v is marshalled to a JSON
// object that must carry a "type" field. The events sdk/abi defines go
// through Emit.
func (o *Out) Event(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		o.Logf("sdk: event not marshallable: %v", err)
		return
	}
	o.emit(o.sid, abi.Event, b)
}

// EventJSON emits an event already encoded as a JSON object (for instance
// by an abi Payload's AppendEvent).
func (o *Out) EventJSON(b []byte) { o.emit(o.sid, abi.Event, b) }

// Logf emits a log line; the host logs it with the plugin's name.
func (o *Out) Logf(format string, args ...any) {
	o.emit(o.sid, abi.Log, []byte(fmt.Sprintf(format, args...)))
}

// HostCall makes a synchronous request to the host: req is one JSON object
// with an "op" field; the answer's format depends on the op. It returns
// ErrNoHostCalls when the host serves none, a *RefusedError when the host
// refused the request. It may be called from any goroutine while an export
// of the plugin runs (goroutines run only then). The answer is the
// caller's: it may be zeroed after use.
func (o *Out) HostCall(req []byte) ([]byte, error) {
	h := o.rt.call
	if h == nil {
		return nil, ErrNoHostCalls
	}
	return h(o.sid, req)
}

// Checkpoint offers the host a state snapshot to restore from if this
// instance fails later. Stateful plugins call it when their state changes in
// a way worth keeping (for telnet: after option negotiation).
func (o *Out) Checkpoint(state []byte) { o.emit(o.sid, abi.State, state) }

// Runtime dispatches ABI calls to sessions. It is single-threaded, like a
// wasm instance: callers serialize calls.
type Runtime struct {
	factory  Factory
	emit     EmitFunc
	call     HostCallFunc
	config   []byte
	sessions map[uint32]*entry
}

type entry struct {
	s   Session
	out Out
}

// NewRuntime returns a Runtime that sends every emission to emit.
func NewRuntime(f Factory, emit EmitFunc) *Runtime {
	return &Runtime{factory: f, emit: emit, sessions: make(map[uint32]*entry)}
}

// SetHostCall sets what serves the sessions' host calls (nil: none). In a
// wasm plugin the SDK sets it to the host's import; natively a test
// harness sets its own.
func (r *Runtime) SetHostCall(h HostCallFunc) { r.call = h }

// Configure stores the instance-wide configuration (JSON, may be empty).
func (r *Runtime) Configure(cfg []byte) int32 {
	if len(cfg) > 0 && !json.Valid(cfg) {
		r.emit(0, abi.Log, []byte("configure: configuration is not valid JSON"))
		return abi.ErrBadArg
	}
	r.config = append(r.config[:0], cfg...)
	return abi.OK
}

// Open creates the session sid.
func (r *Runtime) Open(sid uint32, kind Kind, opts []byte) int32 {
	if _, dup := r.sessions[sid]; dup {
		r.emit(sid, abi.Log, []byte(fmt.Sprintf("open: session %d is already open", sid)))
		return abi.ErrBadArg
	}
	if len(opts) > 0 && !json.Valid(opts) {
		r.emit(sid, abi.Log, []byte("open: session options are not valid JSON"))
		return abi.ErrBadArg
	}
	o := Open{SID: sid, Kind: kind, Options: append([]byte(nil), opts...), Config: r.config}
	s, err := r.factory(o)
	if err != nil {
		r.emit(sid, abi.Log, []byte("open: "+err.Error()))
		return abi.ErrGeneric
	}
	r.sessions[sid] = &entry{s: s, out: Out{sid: sid, emit: r.emit, rt: r}}
	return abi.OK
}

func (r *Runtime) lookup(sid uint32, op string) *entry {
	e := r.sessions[sid]
	if e == nil {
		r.emit(sid, abi.Log, []byte(fmt.Sprintf("%s: no open session %d", op, sid)))
	}
	return e
}

// Data hands one chunk to the session and returns its action (or a negative
// status when the session is unknown).
func (r *Runtime) Data(sid uint32, dir Dir, p []byte) int32 {
	e := r.lookup(sid, "data")
	if e == nil {
		return abi.ErrBadArg
	}
	return int32(e.s.Data(&e.out, dir, p))
}

// Control answers an on_control request.
func (r *Runtime) Control(sid uint32, req []byte) int32 {
	e := r.lookup(sid, "control")
	if e == nil {
		return abi.ErrBadArg
	}
	c, ok := e.s.(Controller)
	if !ok {
		r.emit(sid, abi.Log, []byte("control: this plugin takes no control requests"))
		return abi.ErrBadArg
	}
	reply, err := c.Control(&e.out, req)
	if err != nil {
		r.emit(sid, abi.Log, []byte("control: "+err.Error()))
		return abi.ErrBadArg
	}
	if reply != nil {
		r.emit(sid, abi.Reply, reply)
	}
	return abi.OK
}

// Tick calls every Ticker session and returns the earliest next time wanted.
func (r *Runtime) Tick(now int64) int64 {
	var next int64
	for _, e := range r.sessions {
		t, ok := e.s.(Ticker)
		if !ok {
			continue
		}
		if n := t.Tick(&e.out, now); n > 0 && (next == 0 || n < next) {
			next = n
		}
	}
	return next
}

// Close ends the session sid; unknown ids are ignored.
func (r *Runtime) Close(sid uint32) {
	e := r.sessions[sid]
	if e == nil {
		return
	}
	delete(r.sessions, sid)
	if c, ok := e.s.(Closer); ok {
		c.Close(&e.out)
	}
}

// StateExport emits the session's state on the state stream.
func (r *Runtime) StateExport(sid uint32) int32 {
	e := r.lookup(sid, "state_export")
	if e == nil {
		return abi.ErrBadArg
	}
	st, ok := e.s.(Stateful)
	if !ok {
		return abi.ErrNoState
	}
	b, err := st.ExportState()
	if err != nil {
		r.emit(sid, abi.Log, []byte("state_export: "+err.Error()))
		return abi.ErrGeneric
	}
	r.emit(sid, abi.State, b)
	return abi.OK
}

// StateImport restores an open session from a snapshot.
func (r *Runtime) StateImport(sid uint32, state []byte) int32 {
	e := r.lookup(sid, "state_import")
	if e == nil {
		return abi.ErrBadArg
	}
	st, ok := e.s.(Stateful)
	if !ok {
		return abi.ErrNoState
	}
	if err := st.ImportState(state); err != nil {
		r.emit(sid, abi.Log, []byte("state_import: "+err.Error()))
		return abi.ErrBadArg
	}
	return abi.OK
}
