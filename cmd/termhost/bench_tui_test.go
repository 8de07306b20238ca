package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkTUILatency, over stdio with a minimal JSON-RPC client, against a
// bash under a PTY with shell integration:
//   - view: view_screen (80x24, plain) — a read-only call;
//   - cursor: get_cursor_position;
//   - keys: send_keys of one character, then view_screen until the
//     character shows — "type, then see";
//   - prompt: send_keys "true" + Enter with prompt: true — a shell command
//     until its prompt is back, in one call.
func BenchmarkTUILatency(b *testing.B) {
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("bash missing")
	}
	c := startLean(b, "--log-level", "warn")
	id := c.call(b, "launch_app", map[string]any{"command": "bash", "env": map[string]string{"HOME": b.TempDir(), "PS1": "$ "}})["session_id"].(string)
	c.call(b, "wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 10000})
	var view, cursor, keys, prompt []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		c.call(b, "view_screen", map[string]any{"session_id": id})
		view = append(view, time.Since(start))

		start = time.Now()
		c.call(b, "get_cursor_position", map[string]any{"session_id": id})
		cursor = append(cursor, time.Since(start))

		ch := string(rune('a' + i%26))
		start = time.Now()
		c.call(b, "send_keys", map[string]any{"session_id": id, "text": ch})
		for {
			r := c.call(b, "get_cursor_position", map[string]any{"session_id": id})
			if r["col"].(float64) > 2 {
				break
			}
		}
		keys = append(keys, time.Since(start))
		c.call(b, "send_keys", map[string]any{"session_id": id, "keys": "C-u"}) // clear the line
		c.call(b, "wait_for", map[string]any{"session_id": id, "screenStable": 20, "timeoutMs": 2000})

		start = time.Now()
		r := c.call(b, "send_keys", map[string]any{"session_id": id, "text": "true", "keys": "Enter", "prompt": true, "timeoutMs": 10000})
		prompt = append(prompt, time.Since(start))
		if r["reason"] != "prompt" {
			b.Fatalf("prompt wait: %v", r)
		}
	}
	percentiles(b, view, "ms-view")
	percentiles(b, cursor, "ms-cursor")
	percentiles(b, keys, "ms-keys-seen")
	percentiles(b, prompt, "ms-cmd-prompt")
}

// BenchmarkCatThroughput: `cat` of a 100 MB text file through a PTY
// session into the screen (PTY → chain → ring → vt) until the process
// exits; the same bytes from a Telnet peer (TCP → telnet → ring → vt)
// until it hangs up; and the file through tmux in the same run. MB/s
// each, and the PTY's ratio to tmux.
func BenchmarkCatThroughput(b *testing.B) {
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
	c := startLean(b, "--log-level", "warn")
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	peer := startPeer(b, 0, burstThenClose(data))
	var ours, telnet, tmux []float64
	for b.Loop() {
		start := time.Now()
		id := c.call(b, "launch_app", map[string]any{"command": "cat", "args": []string{file}})["session_id"].(string)
		r := c.call(b, "wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 300000})
		if r["reason"] != "exit" {
			b.Fatalf("cat: %v", r)
		}
		ours = append(ours, size/time.Since(start).Seconds()/1e6)
		c.call(b, "stop_app", map[string]any{"session_id": id})

		start = time.Now()
		tid := c.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": peer.port})["sessionId"].(string)
		r = c.call(b, "wait_for", map[string]any{"session_id": tid, "exit": true, "timeoutMs": 300000})
		if r["reason"] != "exit" {
			b.Fatalf("telnet: %v", r)
		}
		telnet = append(telnet, size/time.Since(start).Seconds()/1e6)
		c.call(b, "telnet_disconnect", map[string]any{"sessionId": tid})
		if _, err := exec.LookPath("tmux"); err == nil {
			tmux = append(tmux, tmuxCat(b, file, size))
		}
	}
	b.ReportMetric(median64(ours), "MB/s-pty")
	b.ReportMetric(median64(telnet), "MB/s-telnet")
	if len(tmux) > 0 {
		b.ReportMetric(median64(tmux), "MB/s-tmux")
		b.ReportMetric(median64(ours)/median64(tmux), "x-tmux")
	}
}

// tmuxCat times tmux showing file with cat in a detached 80x24 pane.
func tmuxCat(b *testing.B, file string, size int) float64 {
	sock := filepath.Join(b.TempDir(), "s")
	start := time.Now()
	cmd := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24",
		"sh", "-c", "cat '"+file+"'; tmux -S '"+sock+"' wait-for -S done")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v %s", err, out)
	}
	if out, err := exec.Command("tmux", "-S", sock, "wait-for", "done").CombinedOutput(); err != nil {
		b.Fatalf("tmux wait: %v %s", err, out)
	}
	mbs := float64(size) / time.Since(start).Seconds() / 1e6
	exec.Command("tmux", "-S", sock, "kill-server").Run()
	return mbs
}

func median64(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// BenchmarkPTYSessionMemory: the server's resident memory per idle bash
// session with 10,000 lines of 80 columns in its scrollback, at 100
// sessions.
func BenchmarkPTYSessionMemory(b *testing.B) {
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("bash missing")
	}
	const n = 100
	for b.Loop() {
		h := startHost(b, "--log-level", "warn")
		h.pluginsLoaded()
		time.Sleep(200 * time.Millisecond)
		before := h.rssMB()
		for i := 0; i < n; i++ {
			id := h.must("launch_app", map[string]any{"command": "bash", "env": map[string]string{"HOME": b.TempDir()}})["session_id"].(string)
			h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 20000})
			r := h.must("send_keys", map[string]any{"session_id": id,
				"text": `for i in $(seq 10000); do printf '%080d\n' $i; done`, "keys": "Enter", "prompt": true, "timeoutMs": 60000})
			if r["reason"] != "prompt" {
				b.Fatalf("fill %d: %v", i, r)
			}
			if i == 0 {
				v := h.must("view_screen", map[string]any{"session_id": id, "format": "scrollback", "limit": 1})
				if v["total_lines"].(float64) < 10000 {
					b.Fatalf("scrollback holds %v lines", v["total_lines"])
				}
			}
		}
		// Idle: the server returns freed memory after 3 s of quiet.
		time.Sleep(6 * time.Second)
		after := h.rssMB()
		b.ReportMetric(float64(after-before)/n, "MB/session")
		b.ReportMetric(float64(after), "MB-total")
		b.Logf("RSS %d MB before, %d MB with %d sessions", before, after, n)
		h.stop()
	}
}
