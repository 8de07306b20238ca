package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/plugins/vt/core"
)

// BenchmarkFloodCores is the load that needs the server's CPU: n programs
// under PTYs each writing coloured text (Ghostty's SGR + CJK payload, 4
// MiB, over and over) as fast as termhost takes it in, every chunk through
// the session's pump, its plugin walk and its screen. Nobody reads: the
// figure is how many cores termhost keeps busy taking the output in
// (issue 19, item 2: "the server using both cores when the load does"),
// from its user+system time over the phase's wall clock, and the rate it
// takes the bytes in (each program's `cat` counts the passes it finished).
// TERMHOST_LOAD_SECONDS sets the phase (3 s by default), TERMHOST_LOAD_BIN
// the executable and TERMHOST_LOAD_ARGS more arguments, as for
// BenchmarkConcurrentLoad.
func BenchmarkFloodCores(b *testing.B) {
	d := 3 * time.Second
	if s, err := strconv.Atoi(os.Getenv("TERMHOST_LOAD_SECONDS")); err == nil && s > 0 && s <= 120 {
		d = time.Duration(s) * time.Second
	}
	dir := b.TempDir()
	payload := filepath.Join(dir, "payload")
	const size = 4 << 20
	if err := os.WriteFile(payload, core.GhosttyPayloads(size)["sgr_cjk"], 0o600); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			for b.Loop() {
				c, err := startLoadClient(append([]string{"--log-level", "warn"}, strings.Fields(os.Getenv("TERMHOST_LOAD_ARGS"))...)...)
				if err != nil {
					b.Fatal(err)
				}
				counts := make([]string, n)
				for i := range n {
					counts[i] = filepath.Join(dir, fmt.Sprintf("passes-%d", i))
					os.Remove(counts[i])
					// Each finished pass appends a byte to the count file.
					cmd := fmt.Sprintf("while :; do cat %s; printf x >> %s; done", payload, counts[i])
					if _, err := c.tool("start_pty", map[string]any{"command": cmd}); err != nil {
						c.close()
						b.Fatal(err)
					}
				}
				time.Sleep(500 * time.Millisecond) // the plugins loaded, the output streaming
				passes := func() int {
					t := 0
					for _, f := range counts {
						st, err := os.Stat(f)
						if err == nil {
							t += int(st.Size())
						}
					}
					return t
				}
				before, err := cpuTime(c.cmd.Process.Pid)
				if err != nil {
					c.close()
					b.Fatal(err)
				}
				p0, start := passes(), time.Now()
				time.Sleep(d)
				after, err := cpuTime(c.cmd.Process.Pid)
				p1, wall := passes(), time.Since(start)
				c.close()
				if err != nil {
					b.Fatal(err)
				}
				if p1 == p0 {
					b.Fatalf("no program finished a pass of the %d-byte payload in %v: the load did not run", size, wall)
				}
				b.ReportMetric((after-before).Seconds()/wall.Seconds(), "cores")
				b.ReportMetric(float64((p1-p0)*size)/wall.Seconds()/1e6, "MB/s")
			}
		})
	}
}
