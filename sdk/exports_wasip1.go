//go:build wasip1

package sdk

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/termhost/termhost/sdk/abi"
)

// inCap is the initial size of the guest-owned input buffer. The host never
// passes more than the buffer holds in one call; larger chunks arrive as
// several calls, and a larger state snapshot or control request makes the
// host ask for a larger buffer first (in_grow).
const inCap = 64 << 10

// maxIn bounds what in_grow accepts (the host's own bound on state is 16 MiB).
const maxIn = 16 << 20

var (
	inArr [inCap]byte
	inBuf = inArr[:]
	rt    *Runtime
)

// Register installs the plugin's factory. Call it from an init function.
func Register(f Factory) {
	rt = NewRuntime(f, emitHost)
	rt.SetHostCall(callHost)
}

//go:wasmimport termhost emit
func hostEmit(sid uint32, stream uint32, ptr unsafe.Pointer, n uint32)

//go:wasmimport termhost now_ms
func hostNow() int64

//go:wasmimport termhost call
func hostCall(sid uint32, req unsafe.Pointer, reqLen uint32, resp unsafe.Pointer, respCap uint32) int32

// callBuf is the first answer buffer tried; an answer that does not fit is
// asked for again in a buffer of the size the host says it needs.
const callBuf = 4 << 10

func callHost(sid uint32, req []byte) ([]byte, error) {
	var rp unsafe.Pointer
	if len(req) > 0 {
		rp = unsafe.Pointer(&req[0])
	}
	resp := make([]byte, callBuf)
	for try := 0; ; try++ {
		r := hostCall(sid, rp, uint32(len(req)), unsafe.Pointer(&resp[0]), uint32(len(resp)))
		switch {
		case r >= 0:
			return resp[:r:r], nil
		case r == abi.CallNoHandler:
			return nil, ErrNoHostCalls
		case r == abi.CallBadRequest:
			return nil, fmt.Errorf("host call refused: the request (%d bytes) is malformed or larger than %d bytes", len(req), abi.MaxCallRequest)
		case r == abi.CallTooSmall:
			need := binary.LittleEndian.Uint32(resp)
			if try > 0 || need <= uint32(len(resp)) || need > abi.MaxCallAnswer {
				return nil, fmt.Errorf("host call: the host's answer does not fit (%d bytes)", need)
			}
			resp = make([]byte, need)
			rp, req = nil, nil // collect the answer the host kept
		case r <= abi.CallRefused:
			n := min(int(abi.CallRefused-r), len(resp))
			return nil, &RefusedError{Reason: string(resp[:n])}
		default:
			return nil, fmt.Errorf("host call: unknown result %d", r)
		}
	}
}

// NowMs is the host's clock in Unix milliseconds.
func NowMs() int64 { return hostNow() }

func emitHost(sid uint32, stream abi.Stream, p []byte) {
	if len(p) == 0 {
		hostEmit(sid, uint32(stream), nil, 0)
		return
	}
	hostEmit(sid, uint32(stream), unsafe.Pointer(&p[0]), uint32(len(p)))
}

func in(n uint32) []byte {
	if n > uint32(len(inBuf)) {
		n = uint32(len(inBuf))
	}
	return inBuf[:n:n]
}

func runtime() *Runtime {
	if rt == nil {
		panic("termhost sdk: plugin did not call sdk.Register in an init function")
	}
	return rt
}

//go:wasmexport termhost_abi_v1
func abiV1() {}

//go:wasmexport in_buf
func exportInBuf() uint32 { return uint32(uintptr(unsafe.Pointer(&inBuf[0]))) }

//go:wasmexport in_cap
func exportInCap() uint32 { return uint32(len(inBuf)) }

// exportInGrow replaces the input buffer with one of at least n bytes and
// returns its address (0: refused).
//
//go:wasmexport in_grow
func exportInGrow(n uint32) uint32 {
	if n > maxIn {
		return 0
	}
	if n > uint32(len(inBuf)) {
		inBuf = make([]byte, n)
	}
	return uint32(uintptr(unsafe.Pointer(&inBuf[0])))
}

//go:wasmexport on_configure
func exportConfigure(n uint32) int32 { return runtime().Configure(in(n)) }

//go:wasmexport on_open
func exportOpen(sid, kind, n uint32) int32 { return runtime().Open(sid, Kind(kind), in(n)) }

//go:wasmexport on_data
func exportData(sid, dir, n uint32) int32 { return runtime().Data(sid, Dir(dir), in(n)) }

//go:wasmexport on_control
func exportControl(sid, n uint32) int32 { return runtime().Control(sid, in(n)) }

//go:wasmexport on_tick
func exportTick(now int64) int64 { return runtime().Tick(now) }

//go:wasmexport on_close
func exportClose(sid uint32) { runtime().Close(sid) }

//go:wasmexport state_export
func exportStateExport(sid uint32) int32 { return runtime().StateExport(sid) }

//go:wasmexport state_import
func exportStateImport(sid, n uint32) int32 { return runtime().StateImport(sid, in(n)) }

// staticcheck does not count //go:wasmexport functions as used, so they and
// all they reach would be reported dead. These lines are the file's last, so
// that the line numbers above (kept in the plugins' binaries) do not move.
//lint:file-ignore U1000 reached from //go:wasmexport functions
