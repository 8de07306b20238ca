package session

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// TestIdleBufferFreezes: an idle session's raw buffer is compressed, reads
// and Raw see the same bytes and leave it so, and the next output thaws it
// with every byte in its place, the screen fed in order throughout.
func TestIdleBufferFreezes(t *testing.T) {
	var mu sync.Mutex
	var fed []byte
	screen := &fake{name: "screen", data: func(dir abi.Dir, p []byte, _ wasmhost.Sink) (abi.Action, error) {
		if dir == abi.Inbound {
			mu.Lock()
			fed = append(fed, p...)
			mu.Unlock()
		}
		return abi.Continue, nil
	}}
	r := newRegistry(t, Limits{}, Config{BufferSize: 256 << 10})
	s, peer, _ := testKind(t, r, Spec{}, nil, screen)

	var out bytes.Buffer
	for i := range 4000 { // 332,000 bytes: some evicted
		fmt.Fprintf(&out, "%080d\r\n", i)
	}
	first := out.Bytes()
	go peer.Write(first)
	eventually(t, "the output", func() bool { return s.buf.Head() == uint64(len(first)) })

	if n := r.FreezeIdle(time.Hour); n != 0 || s.buf.Frozen() {
		t.Fatalf("a session active just now was frozen (%d bytes released)", n)
	}
	before := s.BufferedBytes()
	if n := r.FreezeIdle(0); n <= 0 || !s.buf.Frozen() || s.BufferedBytes() >= before/4 {
		t.Fatalf("FreezeIdle released %d bytes; frozen %v, %d bytes held of %d", n, s.buf.Frozen(), s.BufferedBytes(), before)
	}
	tail := uint64(len(first) - 256<<10)
	if in := s.Info(); in.Buffered != 256<<10 {
		t.Fatalf("Info of a frozen session: %d bytes buffered", in.Buffered)
	}
	if raw, _ := s.Raw(1000); !bytes.Equal(raw, first[len(first)-1000:]) || !s.buf.Frozen() {
		t.Fatalf("Raw of a frozen buffer: %d bytes; frozen after: %v", len(raw), s.buf.Frozen())
	}
	res := read(t, s, WaitSpec{})
	if !bytes.Equal(res.Data, first[tail:tail+defaultMaxBytes]) || res.Evicted != tail || !s.buf.Frozen() {
		t.Fatalf("read of a frozen buffer: %d bytes, evicted %d; frozen after: %v", len(res.Data), res.Evicted, s.buf.Frozen())
	}

	go peer.Write([]byte("$ "))
	eventually(t, "the prompt", func() bool { return s.buf.Head() == uint64(len(first)+2) })
	if s.buf.Frozen() {
		t.Fatal("output did not thaw the buffer")
	}
	all := append(append([]byte(nil), first...), "$ "...)
	if p, _, ev := s.buf.Read(0, 0); !bytes.Equal(p, all[tail+2:]) || ev != tail+2 {
		t.Fatalf("after the thaw: %d bytes, evicted %d", len(p), ev)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Equal(fed, all) {
		t.Fatalf("the screen was fed %d bytes, want the %d of the stream in order", len(fed), len(all))
	}
}
