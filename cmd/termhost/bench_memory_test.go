package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkServerMemory: what an idle `termhost serve` holds, each
// iteration a fresh server on a warm compilation cache (a private one,
// filled before the timing):
//
//   - idle: VmRSS once the server settled after initialize and
//     tools/list, with no session; and VmHWM then, its peak so far
//     (plugins loading included);
//   - session: the same two after one Telnet session to a loopback
//     BusyBox telnetd was opened, used (one echo) and closed, once the
//     server settled again;
//   - the latency of that first telnet_connect (a fresh server: its
//     first call that needs plugins) and the server's CPU time for it
//     (all its threads, from /proc: a figure a busy machine distorts
//     less), of the read until its prompt, and of a later first
//     launch_app of cat.
//
// Each figure is the median over the iterations, with the spread
// (min and max) beside it; run it with -benchtime 3x or more.
func BenchmarkServerMemory(b *testing.B) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		b.Skip("busybox not installed")
	}
	requireProc(b)
	port := busyboxTelnetd(b, "/bin/sh")

	cache := b.TempDir()
	{ // fill the cache: every plugin compiled once
		s := startMemServer(b, cache)
		s.c.call(b, "plugins_list", map[string]any{})
		id := s.c.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
		s.c.call(b, "telnet_read", map[string]any{"sessionId": id, "until": `[#$] $`, "timeoutMs": 10000})
		s.c.call(b, "telnet_disconnect", map[string]any{"sessionId": id})
		s.stop()
	}

	var idleRSS, idleHWM, sessRSS, sessHWM, connect, connectCPU, prompt, launch []float64
	b.ResetTimer()
	for b.Loop() {
		s := startMemServer(b, cache)
		s.c.request(b, "tools/list", map[string]any{})
		// Settle: whatever start-up work follows tools/list (plugins
		// loading in the background) has ended and its garbage is back.
		time.Sleep(5 * time.Second)
		st := s.settled(b)
		idleRSS, idleHWM = append(idleRSS, st.rss), append(idleHWM, st.hwm)

		cpu0 := s.cpu(b)
		start := time.Now()
		id := s.c.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
		connect = append(connect, ms(time.Since(start)))
		connectCPU = append(connectCPU, ms(s.cpu(b)-cpu0))
		start = time.Now()
		s.c.call(b, "telnet_read", map[string]any{"sessionId": id, "until": `[#$] $`, "timeoutMs": 10000})
		prompt = append(prompt, ms(time.Since(start)))
		s.c.call(b, "telnet_send", map[string]any{"sessionId": id, "command": "echo memory"})
		if r := s.c.call(b, "telnet_read", map[string]any{"sessionId": id, "until": "\nmemory\r?\n.*[#$] $", "timeoutMs": 10000}); r["reason"] != "matched" {
			b.Fatalf("echo: %v", r)
		}
		s.c.call(b, "telnet_disconnect", map[string]any{"sessionId": id})
		// Settle again: long enough for what the server does once its last
		// session ended (a plugin module unused for 10 s is closed; the
		// heap is returned after 3 s of quiet).
		time.Sleep(15 * time.Second)
		st = s.settled(b)
		sessRSS, sessHWM = append(sessRSS, st.rss), append(sessHWM, st.hwm)

		start = time.Now()
		s.c.call(b, "launch_app", map[string]any{"command": "cat"})
		launch = append(launch, ms(time.Since(start)))
		b.Logf("idle %.1f MiB (peak %.1f), after a session %.1f MiB (peak %.1f); first telnet_connect %.1f ms (%.1f ms CPU), prompt %.1f ms, launch_app %.1f ms; %s",
			idleRSS[len(idleRSS)-1], idleHWM[len(idleHWM)-1], st.rss, st.hwm, connect[len(connect)-1], connectCPU[len(connectCPU)-1],
			prompt[len(prompt)-1], launch[len(launch)-1], st.detail)
		s.stop()
	}
	spread(b, idleRSS, "MiB-idle-rss")
	spread(b, idleHWM, "MiB-idle-peak")
	spread(b, sessRSS, "MiB-after-session-rss")
	spread(b, sessHWM, "MiB-after-session-peak")
	spread(b, connect, "ms-first-connect")
	spread(b, connectCPU, "ms-cpu-first-connect")
	spread(b, prompt, "ms-first-prompt")
	spread(b, launch, "ms-first-launch")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// spread reports the median of v as unit, and its min and max.
func spread(b *testing.B, v []float64, unit string) {
	if len(v) == 0 {
		return
	}
	s := slices.Clone(v)
	slices.Sort(s)
	b.ReportMetric(s[len(s)/2], unit)
	b.ReportMetric(s[0], unit+"-min")
	b.ReportMetric(s[len(s)-1], unit+"-max")
}

// memServer is `termhost serve` under a lean client, with its pid.
type memServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	c   *leanClient
}

func startMemServer(b *testing.B, cache string) *memServer {
	cmd := exec.Command(binary, "serve", "--cache-dir", cache, "--log-level", "error")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &memServer{cmd: cmd, in: in, c: &leanClient{in: in, out: bufio.NewReaderSize(out, 1<<20)}}
	s.c.request(b, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "lean", "version": "1"}})
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return s
}

func (s *memServer) stop() {
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// cpu is the CPU time the server's threads have run (schedstat).
func (s *memServer) cpu(b *testing.B) time.Duration {
	dir := "/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var ns int64
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // ended meanwhile
		}
		if f := strings.Fields(string(raw)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			ns += n
		}
	}
	return time.Duration(ns)
}

type procMem struct {
	rss, hwm float64 // MiB
	detail   string  // the parts of VmRSS
}

// settled reads the server's memory once VmRSS has not moved by more
// than 1% over a second (at most 10 s more).
func (s *memServer) settled(b *testing.B) procMem {
	last := s.mem(b)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		now := s.mem(b)
		if d := now.rss - last.rss; d*100 < last.rss && -d*100 < last.rss {
			return now
		}
		last = now
	}
	return last
}

func (s *memServer) mem(b *testing.B) procMem {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	var m procMem
	var parts []string
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			m.rss = kb / 1024
		case "VmHWM:":
			m.hwm = kb / 1024
		case "RssAnon:", "RssFile:":
			parts = append(parts, strings.TrimSuffix(f[0], ":")+" "+strconv.FormatFloat(kb/1024, 'f', 1, 64)+" MiB")
		}
	}
	m.detail = strings.Join(parts, ", ")
	return m
}
