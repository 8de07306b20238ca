package wasmhost

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/termhost/termhost/sdk/abi"
	"github.com/tetratelabs/wazero/api"
)

// Emitter receives a call's emissions while the call runs. p is a view of
// the plugin's memory (or of the host's chunk), valid only until Emit
// returns: an Emitter that keeps bytes copies them.
type Emitter interface {
	Emit(sid uint32, stream abi.Stream, p []byte)
}

// EmitLimitError is the panic value (and so the trap cause) of a call that
// emitted more than its budget.
type EmitLimitError struct {
	Stream abi.Stream
	Limit  int64
}

func (e *EmitLimitError) Error() string {
	return fmt.Sprintf("the plugin emitted more than %d bytes on %s in one call (limit: %dx its input + %d)",
		e.Limit, e.Stream, EmitFactor, EmitBase)
}

func hostEmit(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*Instance)
	if inst == nil {
		return
	}
	sid, stream, ptr, n := uint32(stack[0]), abi.Stream(uint32(stack[1])), uint32(stack[2]), uint32(stack[3])
	if stream > abi.Channel {
		panic(fmt.Sprintf("emit: unknown stream %d", stream))
	}
	if stream == abi.Channel && n < abi.ChannelHeader {
		panic(fmt.Sprintf("emit: a channel emission of %d bytes is shorter than its %d-byte header", n, abi.ChannelHeader))
	}
	left := &inst.left
	if stream == abi.State || stream == abi.Reply {
		left = &inst.big
	}
	if *left -= int64(n); *left < 0 {
		limit := inst.budget
		if stream == abi.State || stream == abi.Reply {
			limit = EmitBig
		}
		panic(&EmitLimitError{Stream: stream, Limit: limit})
	}
	var data []byte
	if n > 0 {
		b, ok := mod.Memory().Read(ptr, n)
		if !ok {
			panic(fmt.Sprintf("emit: [%d, +%d) is outside guest memory", ptr, n))
		}
		data = b
	}
	if inst.emitter != nil {
		inst.emitter.Emit(sid, stream, data)
		if stream != abi.Log {
			return
		}
		// Log lines are also kept: a StatusError quotes them.
	}
	if data != nil {
		start := len(inst.arena)
		inst.arena = append(inst.arena, data...)
		data = inst.arena[start:len(inst.arena):len(inst.arena)]
	}
	inst.out = append(inst.out, abi.Emission{SID: sid, Stream: stream, Data: data})
}

func hostNow(_ context.Context, stack []uint64) {
	stack[0] = uint64(time.Now().UnixMilli())
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

var _ io.Writer = (*tailBuffer)(nil)

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// Sink receives one session's emissions from a plugin call, as the host's
// plugin layer hands them on: Emit while the call runs (p is valid only
// until Emit returns), Discard when the attempt failed and everything it
// emitted since the call began must be forgotten (the call is then retried
// elsewhere, or given up).
type Sink interface {
	Emit(stream abi.Stream, p []byte)
	Discard()
}

// HostCallFunc serves a plugin's host calls (import "call"): req is the
// request of session sid (a view of guest memory, valid only during the
// call); a non-nil error refuses it, its text being the reason. It runs
// while the plugin's call does, on the caller's goroutine, and must not
// call into the same instance.
type HostCallFunc func(sid uint32, req []byte) ([]byte, error)

// SetHostCall sets what serves the instance's host calls; nil (the
// default) refuses them all (CallNoHandler). Not safe to call while a call
// runs.
func (i *Instance) SetHostCall(h HostCallFunc) { i.hostCall = h }

func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*Instance)
	res := func(r int32) { stack[0] = uint64(uint32(r)) }
	if inst == nil || inst.hostCall == nil {
		res(abi.CallNoHandler)
		return
	}
	sid, reqPtr, reqLen, respPtr, respCap := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4])
	mem := mod.Memory()
	if reqLen > abi.MaxCallRequest || uint64(respPtr)+uint64(respCap) > uint64(mem.Size()) {
		res(abi.CallBadRequest)
		return
	}
	req, ok := mem.Read(reqPtr, reqLen)
	if !ok {
		res(abi.CallBadRequest)
		return
	}
	var (
		ans []byte
		err error
	)
	if kept := inst.keptAns; kept != nil && reqLen == 0 && inst.keptSID == sid {
		ans = kept
	} else {
		// The handler's time (a signature, a known_hosts look-up) is not
		// the plugin's: the call's deadline starts again when it returns.
		inst.callStart.Store(0)
		ans, err = inst.hostCall(sid, req)
		inst.callStart.Store(monoNow())
	}
	inst.keptAns = nil
	switch {
	case err != nil:
		reason := err.Error()
		n := min(len(reason), abi.MaxCallReason, int(respCap))
		mem.Write(respPtr, []byte(reason[:n]))
		res(abi.CallRefused - int32(n))
	case len(ans) > abi.MaxCallAnswer:
		const msg = "the host's answer is too long"
		n := min(len(msg), int(respCap))
		mem.Write(respPtr, []byte(msg[:n]))
		res(abi.CallRefused - int32(n))
	case uint32(len(ans)) > respCap:
		if respCap >= 4 {
			mem.WriteUint32Le(respPtr, uint32(len(ans)))
		}
		inst.keptAns, inst.keptSID = append([]byte(nil), ans...), sid
		res(abi.CallTooSmall)
	default:
		mem.Write(respPtr, ans)
		res(int32(len(ans)))
	}
}
