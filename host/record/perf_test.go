package record

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
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
