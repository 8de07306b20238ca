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
	if stream > abi.Reply {
		panic(fmt.Sprintf("emit: unknown stream %d", stream))
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
