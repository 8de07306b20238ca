package main

// Idle sessions' memory (issue 19, item 3): what an idle Telnet or bash
// session costs the server once it has settled, and that a screen evicted
// from the shared vt instance reads the same when it is rebuilt.

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
	"github.com/termhost/termhost/plugins"
)

// idleSettle is how long sessions sit idle before the reading (the issue
// measured after a 10 s settle).
const idleSettle = 10 * time.Second

// BenchmarkIdleSessionSettled: the server's resident memory per idle
// session, 10 s after the last one opened: Telnet sessions to a loopback
// BusyBox telnetd shell, and bash sessions under a PTY with a short
// scrollback (a listing of about a screenful). The baseline is read after
// two sessions of the kind (its plugins compiled, their pools of two
// instances made), settled the same way.
// TERMHOST_IDLE_SESSIONS sets the number (default 50);
// TERMHOST_IDLE_PROFILE=DIR saves the heap and goroutine profiles there;
// TERMHOST_IDLE_SMAPS=1 logs the server's resident memory by mapping and
// how much of each embedded plugin's bytes is resident (root:
// /proc/pid/pagemap), and TERMHOST_IDLE_RANGES="label start end;…" (file
// offsets in hex, e.g. of .rodata and .gopclntab from readelf -S) how much
// of each range of the binary is.
func BenchmarkIdleSessionSettled(b *testing.B) {
	n := 50
	if v, err := strconv.Atoi(os.Getenv("TERMHOST_IDLE_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	b.Run("telnet", func(b *testing.B) {
		if _, err := os.Stat("/bin/busybox"); err != nil {
			b.Skip("busybox not installed")
		}
		port := busyboxTelnetd(b, "/bin/sh")
		idleMemory(b, n, func(h *hostProc) string {
			id := h.connect(port)
			h.must("telnet_read", map[string]any{"sessionId": id, "until": `[$#] $`, "timeoutMs": 10000})
			return id
		})
	})
	// Ended sessions the registry keeps (readable until reaped): each
	// printed a listing and exited.
	b.Run("telnet-ended", func(b *testing.B) {
		if _, err := os.Stat("/bin/busybox"); err != nil {
			b.Skip("busybox not installed")
		}
		port := busyboxTelnetd(b, "/bin/sh")
		idleMemory(b, n, func(h *hostProc) string {
			id := h.connect(port)
			h.must("telnet_read", map[string]any{"sessionId": id, "until": `[$#] $`, "timeoutMs": 10000})
			h.must("telnet_send", map[string]any{"sessionId": id, "command": "ls -l /bin | head -40; exit"})
			if !testutil.Poll(10*time.Second, func() bool {
				return h.call(5*time.Second, "telnet_send", map[string]any{"sessionId": id, "command": ""}).isErr
			}) {
				b.Fatalf("session %s did not end", id)
			}
			return id
		})
	})
	b.Run("bash", func(b *testing.B) {
		if _, err := exec.LookPath("bash"); err != nil {
			b.Skip("bash missing")
		}
		idleMemory(b, n, func(h *hostProc) string {
			id := h.must("launch_app", map[string]any{"command": "bash", "env": map[string]string{"HOME": b.TempDir(), "PS1": `\$ `}})["session_id"].(string)
			h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 20000})
			h.must("send_keys", map[string]any{"session_id": id, "text": "ls -l /usr/bin | head -40", "keys": "Enter", "prompt": true, "timeoutMs": 20000})
			return id
		})
	})
}

// idleMemory opens two sessions with open, settles, reads the server's
// RSS, opens n more, settles and reports the growth per session: at 10 s
// (the reading) and at 20 s (once a plugin no session uses has
// been unloaded: 10 s after its last session left).
func idleMemory(b *testing.B, n int, open func(h *hostProc) string) {
	for b.Loop() {
		h := startHost(b, "--log-level", "info", "--debug-addr", "127.0.0.1:0", "--max-sessions", strconv.Itoa(n+10))
		addr := pprofAddr(b, h)
		// settle: RSS after 10 and 20 s idle, and RssAnon at 20 s (KiB).
		settle := func() (at10, at20, anon20 int64) {
			time.Sleep(idleSettle)
			at10 = h.rssKiB()
			time.Sleep(idleSettle)
			at20 = h.rssKiB()
			v, err := procStatusBytes(h.pid, "RssAnon")
			if err != nil {
				b.Fatal(err)
			}
			return at10, at20, v >> 10
		}
		// The profiler's answers below read the binary's symbol tables:
		// pages that stay resident once touched. Touch them now, so that
		// both readings hold them, not only the second.
		goroutines(b, addr)
		memDetail(h, addr)
		// Two sessions first: each plugin's pool (2 instances) exists in
		// both readings; what is left is what a session adds.
		first := open(h)
		second := open(h)
		before10, before, anonBefore := settle()
		detail0 := memDetail(h, addr)
		g0 := goroutines(b, addr)
		dir := os.Getenv("TERMHOST_IDLE_PROFILE")
		name := b.Name()[len("BenchmarkIdleSessionSettled/"):]
		if dir != "" {
			saveProfile(b, addr, "heap", filepath.Join(dir, name+".base.heap"))
		}
		for range n {
			open(h)
		}
		after10, after, anonAfter := settle()
		g1 := goroutines(b, addr)
		b.ReportMetric(float64(after10-before10)/float64(n), "KiB/session@10s")
		b.ReportMetric(float64(after-before)/float64(n), "KiB/session@20s")
		// Anonymous memory only: the binary's clean pages (symbol tables,
		// read-only data) that the process touched again since the plugin
		// registry last paged them out (host/plugin: releaseExePages) are
		// a few MiB whatever the number of sessions.
		b.ReportMetric(float64(anonAfter-anonBefore)/float64(n), "KiB-anon/session@20s")
		b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/session")
		b.ReportMetric(float64(after)/1024, "MiB-total")
		b.Logf("RSS after two sessions %d KiB (10 s) %d KiB (20 s); after %d more %d KiB (10 s) %d KiB (20 s); goroutines %d → %d; heap: %s",
			before10, before, n, after10, after, g0, g1, soakHeap(addr))
		b.Logf("plugin sessions: %s", pluginSessions(h))
		b.Logf("at 20 s, KiB: after two sessions %s; after %d more %s", detail0, n, memDetail(h, addr))
		// The first view of a screen that left: vt compiled again from
		// the cache (unloaded, no session used it) and the state imported;
		// then another with vt loaded.
		for i, id := range []string{first, second} {
			start := time.Now()
			h.must("view_screen", map[string]any{"session_id": id})
			ms := float64(time.Since(start).Microseconds()) / 1000
			b.ReportMetric(ms, []string{"ms-first-view-cold", "ms-first-view-warm"}[i])
		}
		if dir != "" {
			for _, p := range []string{"heap", "goroutine"} {
				saveProfile(b, addr, p, filepath.Join(dir, name+"."+p))
			}
		}
		h.stop()
	}
}

func (h *hostProc) rssKiB() int64 {
	v, err := procStatusBytes(h.pid, "VmRSS")
	if err != nil {
		h.t.Fatal(err)
	}
	return v >> 10
}

// memDetail is where the server's memory is: its resident anonymous and
// file-backed pages, and the Go runtime's own accounts (KiB); with
// TERMHOST_IDLE_SMAPS, also by mapping and how much of the embedded
// plugins and of TERMHOST_IDLE_RANGES is resident.
func memDetail(h *hostProc, addr string) string {
	var out []string
	for _, f := range []string{"RssAnon", "RssFile"} {
		if v, err := procStatusBytes(h.pid, f); err == nil {
			out = append(out, fmt.Sprintf("%s %d", f, v>>10))
		}
	}
	if os.Getenv("TERMHOST_IDLE_SMAPS") != "" {
		out = append(out, residentByMapping(h.pid)...)
		out = append(out, embeddedResident(h.pid)...)
	}
	return strings.Join(append(out, runtimeFigures(addr, 10, "KiB", "HeapInuse", "HeapIdle", "HeapReleased", "GCSys", "OtherSys", "BuckHashSys")), ", ")
}

// residentByMapping is process pid's resident KiB per mapping (file,
// offset and permissions; "[anon]" for the anonymous ones together), those
// of 512 KiB or more, from /proc/pid/smaps.
func residentByMapping(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return []string{err.Error()}
	}
	name := ""
	byName := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-"):
			name = "[anon]"
			if len(f) >= 6 {
				name = f[5] + "@" + f[2] + "+" + f[1]
			}
		case len(f) >= 2 && f[0] == "Rss:":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			byName[name] += n
		}
	}
	var out []string
	for k, v := range byName {
		if v >= 512 {
			out = append(out, fmt.Sprintf("%s %d", k, v))
		}
	}
	return out
}

func pprofAddr(t testing.TB, h *hostProc) string {
	t.Helper()
	re := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/debug/pprof/`)
	var addr string
	if !testutil.Poll(10*time.Second, func() bool {
		if m := re.FindStringSubmatch(h.logs.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}) {
		t.Fatalf("no profiler address in the log")
	}
	return addr
}

func goroutines(t testing.TB, addr string) int {
	t.Helper()
	n, err := soakGoroutines(addr)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func saveProfile(t testing.TB, addr, name, path string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile(path, p, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s profile: %s", name, path)
}

// pluginSessions is "name sessions" for every plugin plugins_list shows.
func pluginSessions(h *hostProc) string {
	var out []string
	for _, p := range h.must("plugins_list", map[string]any{})["plugins"].([]any) {
		m := p.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", m["name"], m["sessions"]))
	}
	return strings.Join(out, ", ")
}

// TestIdleScreenSameAfterEviction: a bash session left idle lets its
// screen leave the vt plugin (plugins_list shows no vt session), and
// view_screen shows the same afterwards — plain, with SGR, and the
// scrollback — for a program drawing on the alternate screen with CUP and
// for the shell after it; more output lands on the restored screen.
func TestIdleScreenSameAfterEviction(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	h := startHost(t)
	id := h.must("launch_app", map[string]any{"command": "bash", "env": map[string]string{"HOME": t.TempDir(), "PS1": `\$ `}})["session_id"].(string)
	h.must("wait_for", map[string]any{"session_id": id, "prompt": true, "timeoutMs": 20000})
	h.must("send_keys", map[string]any{"session_id": id, "text": "seq 1 60", "keys": "Enter", "prompt": true, "timeoutMs": 20000})
	views := func() []string {
		var out []string
		for _, f := range []string{"plain", "ansi", "scrollback"} {
			out = append(out, fmtJSON(h.must("view_screen", map[string]any{"session_id": id, "format": f, "limit": 1000})))
		}
		return out
	}
	vtSessions := func() string {
		for _, p := range h.must("plugins_list", map[string]any{})["plugins"].([]any) {
			if m := p.(map[string]any); m["name"] == "vt" {
				return fmt.Sprint(m["sessions"])
			}
		}
		return "none"
	}
	raw := func() string {
		return fmtJSON(h.must("view_screen", map[string]any{"session_id": id, "format": "raw"}))
	}
	check := func(what string) {
		t.Helper()
		for try := 0; ; try++ {
			time.Sleep(time.Second) // let the program's last bytes in
			rawBefore, before := raw(), views()
			if !testutil.Poll(15*time.Second, func() bool { return vtSessions() == "0" }) {
				t.Fatalf("%s: the idle session's screen did not leave the vt plugin (sessions %s)", what, vtSessions())
			}
			after := views()
			if raw() != rawBefore && try < 2 {
				t.Logf("%s: output arrived meanwhile; again", what)
				continue // the views may differ by it
			}
			for i := range before {
				if before[i] != after[i] {
					t.Fatalf("%s: view %d differs after the screen came back:\nbefore %.800s\nafter  %.800s", what, i, before[i], after[i])
				}
			}
			return
		}
	}
	check("the shell")
	// A full-screen program: the alternate screen, colours, CUP, a title;
	// it waits for a key.
	h.must("send_keys", map[string]any{"session_id": id, "keys": "Enter", "text": `printf '\e]0;tui\a\e[?1049h\e[2J\e[5;10H\e[1;31mbox\e[0m\e[10;30H\e[44mblue\e[0m\e[12;1H'; read x; printf '\e[?1049l'`})
	h.must("wait_for", map[string]any{"session_id": id, "until": "blue", "onScreen": true, "timeoutMs": 10000})
	check("a program on the alternate screen")
	h.must("send_keys", map[string]any{"session_id": id, "keys": "Enter", "prompt": true, "timeoutMs": 10000})
	h.must("send_keys", map[string]any{"session_id": id, "text": "echo back-on-the-shell", "keys": "Enter", "prompt": true, "timeoutMs": 10000})
	if v := views(); !strings.Contains(v[0], "back-on-the-shell") || !strings.Contains(v[2], "60") {
		t.Fatalf("after the program: %.800s", v)
	}
	check("the shell after the program")
}

// embeddedResident says how much of each embedded plugin's bytes in the
// binary is resident in process pid (from /proc/pid/pagemap; needs root).
func embeddedResident(pid int) []string {
	exe, err := os.ReadFile(binary)
	if err != nil {
		return []string{err.Error()}
	}
	maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return []string{err.Error()}
	}
	defer pm.Close()
	// The binary's mappings: address range and file offset.
	type mapping struct{ lo, hi, off uint64 }
	var exeMaps []mapping
	for _, l := range strings.Split(string(maps), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || !strings.HasSuffix(f[5], "/termhost") {
			continue
		}
		var m mapping
		fmt.Sscanf(f[0], "%x-%x", &m.lo, &m.hi)
		fmt.Sscanf(f[2], "%x", &m.off)
		exeMaps = append(exeMaps, m)
	}
	var out []string
	resident := func(label string, off, n int) {
		var addr uint64
		for _, m := range exeMaps {
			if uint64(off) >= m.off && uint64(off) < m.off+(m.hi-m.lo) {
				addr = m.lo + uint64(off) - m.off
			}
		}
		if addr == 0 {
			return
		}
		present := 0
		first, last := addr/4096, (addr+uint64(n)-1)/4096
		buf := make([]byte, 8*(last-first+1))
		pm.ReadAt(buf, int64(first*8))
		for i := 0; i+8 <= len(buf); i += 8 {
			if buf[i+7]&0x80 != 0 {
				present++
			}
		}
		out = append(out, fmt.Sprintf("%s %d/%d KiB", label, present*4, n>>10))
	}
	if v := os.Getenv("TERMHOST_IDLE_RANGES"); v != "" {
		for _, r := range strings.Split(v, ";") {
			var label string
			var a, b int
			fmt.Sscanf(r, "%s %x %x", &label, &a, &b)
			resident(label, a, b-a)
		}
	}
	fs.WalkDir(plugins.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		w, err := fs.ReadFile(plugins.FS(), name)
		if err != nil {
			return err
		}
		if off := bytes.Index(exe, w); off >= 0 {
			resident(path.Base(name), off, len(w))
		} else {
			out = append(out, name+" not found")
		}
		return nil
	})
	return out
}
