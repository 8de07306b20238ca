package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkRecordCatOverhead: BenchmarkCatThroughput's PTY path (cat of
// 100 MB of 80-column text under a PTY session → ring → vt, until the
// process exits), recorded and not, alternating in one server; each
// iteration runs both. Reports the medians of throughput and of the
// server's CPU time per run (utime+stime: on a shared machine the wall
// clock moves with the other load, the CPU the server spends much less),
// and the overheads of recording in each.
func BenchmarkRecordCatOverhead(b *testing.B) {
	const size = 100 << 20
	file := filepath.Join(b.TempDir(), "big.txt")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2)[:78] + "\r\n"
	for n := 0; n < size; n += len(line) {
		f.WriteString(line)
	}
	f.Close()
	// record:true writes under the server's data directory.
	h := startHostEnv(b, []string{"XDG_DATA_HOME=" + filepath.Join(b.TempDir(), "data")},
		"--log-level", "warn", "--record-max-file-mb", "512", "--record-max-total-mb", "2048")
	run := func(record bool) (mbs, cpu float64, path string) {
		t0, _ := cpuTicks(h.pid)
		start := time.Now()
		r := h.must("launch_app", map[string]any{"command": "cat", "args": []string{file}, "record": record})
		id := r["session_id"].(string)
		if w := h.must("wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 300000}); w["reason"] != "exit" {
			b.Fatalf("cat: %v", w)
		}
		mbs = size / time.Since(start).Seconds() / 1e6
		h.must("stop_app", map[string]any{"session_id": id})
		t1, _ := cpuTicks(h.pid)
		path, _ = r["recording"].(string)
		return mbs, float64(t1-t0) / ticksPerSecond, path
	}
	var plain, recorded, cpuPlain, cpuRec []float64
	var fileSize int64
	for b.Loop() {
		mbs, cpu, _ := run(false)
		plain, cpuPlain = append(plain, mbs), append(cpuPlain, cpu)
		mbs, cpu, path := run(true)
		recorded, cpuRec = append(recorded, mbs), append(cpuRec, cpu)
		if fi, err := os.Stat(path); err == nil {
			fileSize = fi.Size()
			os.Remove(path)
		}
	}
	p, r := median64(plain), median64(recorded)
	cp, cr := median64(cpuPlain), median64(cpuRec)
	b.ReportMetric(p, "MB/s-plain")
	b.ReportMetric(r, "MB/s-recorded")
	b.ReportMetric(100*(p-r)/p, "%-slower")
	b.ReportMetric(cp, "cpu-s-plain")
	b.ReportMetric(cr, "cpu-s-recorded")
	b.ReportMetric(100*(cr-cp)/cp, "%-more-cpu")
	// Each pair's own difference: the load of a shared machine drifts
	// between pairs more than within one.
	var diff []float64
	for i := range cpuRec {
		diff = append(diff, cpuRec[i]-cpuPlain[i])
	}
	b.ReportMetric(median64(diff), "cpu-s-more-paired")
	b.ReportMetric(float64(fileSize)/size, "file/output")
}

// BenchmarkRecordBusyShell estimates the size of an hour's recording of a
// busy shell from a bounded run: a bash session (shell integration, so a
// prompt marker per command) running commands back to back, each typed by
// the agent and printing about 2 KB (a directory listing, a process
// table, a file's head), the recording's bytes per command times one
// command a second for an hour.
func BenchmarkRecordBusyShell(b *testing.B) {
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("no bash")
	}
	recs := b.TempDir()
	c := startLean(b, "--log-level", "warn", "--record-dir", recs)
	commands := []string{"ls -l /usr/bin | head -25", "ps aux | head -15", "head -c 1500 /etc/services", "date; uptime; df -h | head -8"}
	for b.Loop() {
		r := c.call(b, "launch_app", map[string]any{"command": "bash", "env": map[string]string{"HOME": b.TempDir()}})
		id, path := r["session_id"].(string), r["recording"].(string)
		c.call(b, "wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 15000})
		start, _ := os.Stat(path)
		const n = 200
		for i := range n {
			w := c.call(b, "send_keys", map[string]any{"session_id": id, "text": commands[i%len(commands)], "keys": "Enter", "prompt": true, "timeoutMs": 15000})
			if w["reason"] != "prompt" {
				b.Fatalf("command %d: %v", i, w)
			}
		}
		c.call(b, "stop_app", map[string]any{"session_id": id})
		time.Sleep(time.Second) // the recorder's last flush
		end, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		per := float64(end.Size()-start.Size()) / n
		b.ReportMetric(per, "B/command")
		b.ReportMetric(per*3600/1e6, "MB/hour-at-1-cmd/s")
	}
}
