package record

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/host/ringbuf"
)

// cpuNow is the process's user+system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuRate reports, at the end of a benchmark, its throughput by the
// process's CPU time (MB per CPU second: the wall clock of a shared
// machine measures its load).
func cpuRate(b *testing.B, bytesPerOp int) func() {
	c0 := cpuNow()
	return func() {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/(cpuNow()-c0).Seconds()/1e6, "MB/cpu-s")
	}
}

// A flood is written in pieces of about blockSize, a few per FlushEvery
// besides, each write call one piece; it reads back whole; and the
// recorder holds no block once it is written.
func TestRecorderFloodWrites(t *testing.T) {
	const size = 8 << 20
	st := openTest(t, 1<<40, 1<<40)
	r := newRec(t, st, "S1")
	line := []byte(strings.Repeat("x", 78) + "\r\n")
	chunk := bytes.Repeat(line, (32<<10)/len(line))
	start := time.Now()
	for n := 0; n < size; n += len(chunk) {
		r.Output(chunk)
		for r.waiting() > 1<<20 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	r.mu.Lock()
	held := r.cur != nil
	r.mu.Unlock()
	r.flush()
	r.mu.Lock()
	if r.cur != nil || len(r.full) > 0 || r.pending != 0 {
		t.Errorf("after a flush the recorder holds blocks: %v %d %d", r.cur != nil, len(r.full), r.pending)
	}
	r.mu.Unlock()
	r.wmu.Lock()
	writes, written := r.writes, r.written
	r.wmu.Unlock()
	r.Close()
	turns := int(time.Since(start)/FlushEvery) + 1
	if max := int(written/(blockSize*3/4)) + 2*turns + 2; writes > max {
		t.Errorf("%d bytes in %d writes (%d turns of FlushEvery), want at most %d", written, writes, turns, max)
	}
	c := readBack(t, r.Path())
	want := strings.Repeat(string(chunk), (size+len(chunk)-1)/len(chunk))
	if out := c.Output(); out != want || !held {
		i := 0
		for i < min(len(out), len(want)) && out[i] == want[i] {
			i++
		}
		t.Errorf("read back %d bytes of output, want %d, differing from %d (a block held while flooding: %v)", len(out), len(want), i, held)
	}
}

// Output handed from the session's buffer (OutputStaged) costs no
// allocation either, and is recorded as Output would be.
func TestRecorderStagedAllocs(t *testing.T) {
	st := openTest(t, 1<<40, 1<<40)
	r := newRec(t, st, "S1")
	ring := ringbuf.New(1 << 20)
	p := bytes.Repeat([]byte("the quick brown fox\r\n"), 1500)
	turn := func() {
		from := ring.End()
		ring.Stage(p)
		r.OutputStaged(ring, from, len(p))
		ring.Commit()
		r.flush()
	}
	turn()
	turn()
	if n := testing.AllocsPerRun(50, turn); n > 0 {
		t.Errorf("%v allocations per output", n)
	}
	r.Close()
	if got := readBack(t, r.Path()).Output(); got != strings.Repeat(string(p), 53) {
		t.Errorf("read back %d bytes, want %d (53 turns)", len(got), 53*len(p))
	}
}

// BenchmarkRecorderCat: what recording costs a session printing 100 MB
// of 80-column text in the pump's 32 KiB chunks (BenchmarkRecordCatOverhead
// in cmd/termhost without the PTY, the plugins and the emulator): the
// recorder's calls, its encoding and its writes into a file, until Close.
// cpu-s/100MB is the process's CPU time (every goroutine).
func BenchmarkRecorderCat(b *testing.B) {
	const size = 100 << 20
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2)[:78] + "\r\n"
	text := bytes.Repeat([]byte(line), 2*(32<<10)/len(line)+1)
	st := openTest(b, 1<<40, 1<<40)
	var cpu time.Duration
	for b.Loop() {
		c0 := cpuNow()
		r := newRec(b, st, "S1")
		for n, off := 0, 0; n < size; n += 32 << 10 {
			r.Output(text[off : off+32<<10])
			off = (off + 32<<10) % (len(text) - 32<<10)
			for r.waiting() > 1<<20 { // as fast as the writer, never dropping
				time.Sleep(50 * time.Microsecond)
			}
		}
		r.Close()
		cpu += cpuNow() - c0
		if fi, err := os.Stat(r.Path()); err != nil || fi.Size() < size {
			b.Fatalf("the recording holds %d bytes of %d (%v)", fi.Size(), size, err)
		}
		os.Remove(r.Path())
	}
	b.SetBytes(size)
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/100MB")
}

// waiting is how much waits for the writer.
func (r *Recorder) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending
}
