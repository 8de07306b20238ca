package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	cpty "github.com/creack/pty"
	"golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/link/pty/shell"
	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/frrtest"
	"github.com/termhost/termhost/plugins/telnet/proto"
)

// BenchmarkRunCommandOverhead (issue 32, item 7): what run_command adds to
// a command's own time, per session kind and per program class. Each row
// opens one termhost session (a `termhost serve` of its own, driven by the
// lean JSON-RPC client of bench_test.go, so go-sdk's client cost is not
// counted) and, beside it, the floor: the same exchange without termhost,
// a bare client that writes the command line and reads until the
// program's prompt is back —
//   - PTY: creack/pty running the same program with the same environment
//     (host/link/pty/shell.Prepare, as launch_app does: for bash its
//     integration's rc file), read with blocking reads until the OSC 133 B
//     mark of the next prompt (integrated shell) or the prompt's text;
//   - Telnet: a TCP client through termhost's own TCP link (link.TCP) and
//     the telnet plugin's sans-IO core (plugins/telnet/proto) run natively,
//     which answers the server's options as the plugin does;
//   - SSH: golang.org/x/crypto/ssh, a PTY session's shell.
//
// The calls alternate, termhost then floor, after a warm-up; every
// command's own time is near zero (`true`, `echo x`, `1`, `show clock`,
// `show version`), so the difference is what run_command costs: readiness,
// the send, the end detection and the MCP call. Each termhost result must
// end at a prompt (reason prompt or done) with exactly the command's output,
// and each floor exchange must hold it, or the benchmark fails.
//
// Reported per row (ms): th-p50/p99/max (termhost's whole call),
// floor-p50/p99, over-p50 and over-p99 (termhost's percentile minus the
// floor's) and over-max (termhost's slowest call minus the floor's p50: the goal is
// at most 100 ms). Each row logs the prompt sources run_command reported
// and how long its first call took (it waits for the first prompt); with
// -v the parent logs every row as a Markdown table, each figure the median
// of the runs (-count) and their range:
//
//	go test -v -run '^$' -bench 'RunCommandOverhead' -benchtime 300x -count 5 ./cmd/termhost/
func BenchmarkRunCommandOverhead(b *testing.B) {
	load, _ := os.ReadFile("/proc/loadavg")
	var table []overheadResult
	for _, row := range overheadRows() {
		b.Run(row.name, func(b *testing.B) {
			table = append(table, benchOverheadRow(b, row))
		})
	}
	if len(table) > 0 {
		b.Log("\n" + overheadTable(table, strings.TrimSpace(string(load))))
	}
}

// overheadTable is the rows as a Markdown table: with several runs of a
// row (-count), each figure is the median of the runs and their range.
func overheadTable(table []overheadResult, load string) string {
	var names []string
	runs := map[string][]overheadResult{}
	for _, r := range table {
		if runs[r.name] == nil {
			names = append(names, r.name)
		}
		runs[r.name] = append(runs[r.name], r)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "run_command over its floor, ms (median of the runs, their range in brackets; load average before: %s)\n\n", load)
	sb.WriteString("| row | command | runs × calls | promptSource | termhost p50 | termhost p99 | termhost max | floor p50 | floor p99 | overhead p50 | overhead p99 | max − floor p50 | first call |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		rs := runs[name]
		fig := func(f func(overheadResult) float64) string {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			slices.Sort(v)
			if len(v) == 1 {
				return fmt.Sprintf("%.3f", v[0])
			}
			return fmt.Sprintf("%.3f (%.3f–%.3f)", v[len(v)/2], v[0], v[len(v)-1])
		}
		var sources []string
		for _, r := range rs {
			if !slices.Contains(sources, r.sources) {
				sources = append(sources, r.sources)
			}
		}
		fmt.Fprintf(&sb, "| %s | `%s` | %d × %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			name, rs[0].command, len(rs), rs[0].calls, strings.Join(sources, "; "),
			fig(func(r overheadResult) float64 { return r.th50 }), fig(func(r overheadResult) float64 { return r.th99 }),
			fig(func(r overheadResult) float64 { return r.thMax }),
			fig(func(r overheadResult) float64 { return r.fl50 }), fig(func(r overheadResult) float64 { return r.fl99 }),
			fig(func(r overheadResult) float64 { return r.th50 - r.fl50 }), fig(func(r overheadResult) float64 { return r.th99 - r.fl99 }),
			fig(func(r overheadResult) float64 { return r.thMax - r.fl50 }), fig(func(r overheadResult) float64 { return r.first }))
	}
	return sb.String()
}

// overheadWarmup: calls on each side before the timed ones.
const overheadWarmup = 20

// overheadTimeout bounds one call or exchange (a broken end fails the
// benchmark instead of hanging it).
const overheadTimeout = 10 * time.Second

// overheadRow is one session kind and program class.
type overheadRow struct {
	name, command string
	// output: what the command prints, as run_command must return it.
	output func(string) bool
	// floorHas: what the floor's exchange must hold after the echo's
	// line.
	floorHas string
	// open starts the peer, a termhost with a session on it, and the
	// floor's own session with the same program.
	open func(b *testing.B) (*leanClient, string, *floorSide)
}

// overheadResult is a row's figures, in ms.
type overheadResult struct {
	name, command, sources               string
	calls                                int
	first, th50, th99, thMax, fl50, fl99 float64
}

// printsExactly: the output is want.
func printsExactly(want string) func(string) bool { return func(s string) bool { return s == want } }

func overheadRows() []overheadRow {
	bashPrompt := regexp.MustCompile(`\x1b\]133;B`) // the integration's prompt-end mark
	shellPrompt := regexp.MustCompile(`[#$] $`)
	return []overheadRow{
		{name: "pty-bash-integrated", command: "true", output: printsExactly(""),
			open: ptyOverhead("bash", nil, bashPrompt)},
		{name: "pty-bash-integrated-echo", command: "echo x", output: printsExactly("x\n"), floorHas: "x\r\n",
			open: ptyOverhead("bash", nil, bashPrompt)},
		{name: "pty-bash-norc", command: "true", output: printsExactly(""),
			open: ptyOverhead("bash", []string{"--norc"}, shellPrompt)},
		{name: "pty-python3-repl", command: "1", output: printsExactly("1\n"), floorHas: "1\r\n",
			open: ptyOverhead("python3", []string{"-q"}, regexp.MustCompile(`>>> $`))},
		{name: "telnet-busybox-sh", command: "true", output: printsExactly(""),
			open: func(b *testing.B) (*leanClient, string, *floorSide) {
				if _, err := os.Stat("/bin/busybox"); err != nil {
					b.Skip("busybox not installed")
				}
				port := busyboxTelnetd(b, "/bin/sh")
				c := startLean(b, "--log-level", "info")
				id := c.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
				return c, id, telnetFloor(b, port, shellPrompt)
			}},
		{name: "telnet-devsim-ios", command: "show clock", floorHas: " UTC ",
			output: regexp.MustCompile(`\A\d\d:\d\d:\d\d\.\d{3} UTC \w{3} \w{3} +\d+ \d{4}\n\z`).MatchString,
			open: func(b *testing.B) (*leanClient, string, *floorSide) {
				_, port := startDevsim(b, devsim.Config{Personality: "cisco_ios", NoLogin: true, NoColor: true})
				c := startLean(b, "--log-level", "info")
				id := c.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port, "dialect": "cisco_ios"})["sessionId"].(string)
				return c, id, telnetFloor(b, port, regexp.MustCompile(`edge-r1>$`))
			}},
		{name: "telnet-frr-zebra", command: "show version", floorHas: "FRRouting",
			output: func(s string) bool { return strings.HasPrefix(s, "FRRouting ") && !strings.Contains(s, "frr-test>") },
			open: func(b *testing.B) (*leanClient, string, *floorSide) {
				r := frrtest.Start(b)
				c := startLean(b, "--log-level", "info")
				id := c.call(b, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": r.Port, "dialect": "frr"})["sessionId"].(string)
				prompt := r.Hostname + `> $`
				for _, step := range [][2]string{{"", `Password: ?$`}, {r.Password, prompt}} {
					if step[0] != "" {
						c.call(b, "telnet_send", map[string]any{"sessionId": id, "command": step[0]})
					}
					if res := c.call(b, "telnet_read", map[string]any{"sessionId": id, "until": step[1], "timeoutMs": 10000}); res["reason"] != "matched" {
						b.Fatalf("FRR login through termhost: %v", res)
					}
				}
				fl := telnetFloor(b, r.Port, regexp.MustCompile(`Password: ?$`))
				fl.prompt = regexp.MustCompile(prompt)
				fl.exchange(b, r.Password)
				return c, id, fl
			}},
		{name: "ssh-sh", command: "true", output: printsExactly(""),
			open: func(b *testing.B) (*leanClient, string, *floorSide) {
				sb := newSSHBench(b)
				c := startLean(b, "--log-level", "info", "--credentials", sb.credFile, "--rules", filepath.Join(sb.dir, "rules.json"),
					"--known-hosts", filepath.Join(sb.dir, "known_hosts"), "--no-user-known-hosts")
				id := c.call(b, "ssh_shell", map[string]any{"credentialId": "bench"})["session_id"].(string)
				return c, id, sshFloor(b, sb, shellPrompt)
			}},
	}
}

// benchOverheadRow times the row's command through termhost and on the
// floor, alternated, and reports the figures.
func benchOverheadRow(b *testing.B, row overheadRow) overheadResult {
	c, id, fl := row.open(b)
	args := map[string]any{"sessionId": id, "command": row.command, "timeoutMs": overheadTimeout.Milliseconds()}
	sources := map[string]int{}
	call := func(what string) time.Duration {
		t0 := time.Now()
		r := c.call(b, "run_command", args)
		took := time.Since(t0)
		out, _ := r["output"].(string)
		if reason := r["reason"]; (reason != "prompt" && reason != "done") || !row.output(out) {
			b.Fatalf("%s: %s run_command %q: reason %v, output %q (after %v): %v", row.name, what, row.command, reason, out, took, r)
		}
		src, _ := r["promptSource"].(string)
		sources[src]++
		return took
	}
	floor := func(what string) time.Duration {
		got, took := fl.exchange(b, row.command)
		if _, after, _ := bytes.Cut(got, []byte("\n")); !bytes.Contains(after, []byte(row.floorHas)) {
			b.Fatalf("%s: %s floor %q: %q lacks %q", row.name, what, row.command, got, row.floorHas)
		}
		return took
	}
	first := call("first")
	for range overheadWarmup {
		call("warm-up")
		floor("warm-up")
	}
	clear(sources)
	var th, fls []time.Duration
	for b.Loop() {
		th = append(th, call("timed"))
		fls = append(fls, floor("timed"))
	}
	b.ReportMetric(0, "ns/op")
	res := overheadResult{name: row.name, command: row.command, calls: len(th), first: float64(first.Microseconds()) / 1000}
	res.th50, res.th99, res.thMax = quantileMs(th, 0.50), quantileMs(th, 0.99), quantileMs(th, 1)
	res.fl50, res.fl99 = quantileMs(fls, 0.50), quantileMs(fls, 0.99)
	var srcs []string
	for s, n := range sources {
		if s == "" {
			s = "(none)"
		}
		srcs = append(srcs, fmt.Sprintf("%s %d", s, n))
	}
	sort.Strings(srcs)
	res.sources = strings.Join(srcs, ", ")
	for _, m := range []struct {
		v    float64
		unit string
	}{
		{res.th50, "th-p50-ms"}, {res.th99, "th-p99-ms"}, {res.thMax, "th-max-ms"},
		{res.fl50, "floor-p50-ms"}, {res.fl99, "floor-p99-ms"},
		{res.th50 - res.fl50, "over-p50-ms"}, {res.th99 - res.fl99, "over-p99-ms"}, {res.thMax - res.fl50, "over-max-ms"},
	} {
		b.ReportMetric(m.v, m.unit)
	}
	b.Logf("%s: %d calls each side; the first call after the open took %.1f ms; prompt sources: %s; %s",
		row.name, len(th), float64(first.Microseconds())/1000, res.sources, slowCalls(th, fls))
	return res
}

// slowCalls lists the timed termhost calls that took over slowCall, with
// the floor's exchange that followed each.
func slowCalls(th, fls []time.Duration) string {
	var l []string
	n := 0
	for i, d := range th {
		if d > slowCall {
			n++
			if len(l) < 8 {
				l = append(l, fmt.Sprintf("#%d %.1f ms (floor %.1f ms)", i, float64(d.Microseconds())/1000, float64(fls[i].Microseconds())/1000))
			}
		}
	}
	if n == 0 {
		return fmt.Sprintf("no call over %v", slowCall)
	}
	return fmt.Sprintf("%d calls over %v: %s", n, slowCall, strings.Join(l, ", "))
}

// slowCall: a termhost call longer than this is listed in the row's log.
const slowCall = 5 * time.Millisecond

// quantileMs is the q-quantile of d in ms (q 1: the largest), as
// percentiles in bench_test.go picks it.
func quantileMs(d []time.Duration, q float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
}

// ptyOverhead opens a row of a local program: launch_app of it on
// termhost, and the same program under creack/pty for the floor, both with
// HOME a directory of the benchmark's own (the user's start-up files stay
// out) and 80x24.
func ptyOverhead(command string, args []string, prompt *regexp.Regexp) func(b *testing.B) (*leanClient, string, *floorSide) {
	return func(b *testing.B) (*leanClient, string, *floorSide) {
		path, err := exec.LookPath(command)
		if command == "python3" {
			path, err = "/usr/bin/python3", nil // not a pyenv shim
			if _, serr := os.Stat(path); serr != nil {
				err = serr
			}
		}
		if err != nil {
			b.Skipf("%s not installed: %v", command, err)
		}
		home := b.TempDir()
		c := startLean(b, "--log-level", "info")
		a := map[string]any{"command": path, "env": map[string]string{"HOME": home}}
		if len(args) > 0 {
			a["args"] = args
		}
		id := c.call(b, "launch_app", a)["session_id"].(string)
		return c, id, ptyFloor(b, path, args, home, prompt)
	}
}

// floorSide is the bare client of a row: it writes a command line and
// reads until the program's prompt is back.
type floorSide struct {
	write func([]byte) error
	// read reads once and returns the program's bytes (none when a read
	// held only protocol).
	read func(buf []byte) ([]byte, error)
	// kill ends the session: a read that waits longer than
	// overheadTimeout fails.
	kill func()
	// prompt matches what follows the echo's line once the prompt is
	// back.
	prompt *regexp.Regexp
	buf    []byte
}

// readUntil reads until done says the bytes so far are complete.
func (f *floorSide) readUntil(b *testing.B, what string, done func([]byte) bool) []byte {
	var got []byte
	for !done(got) {
		p, err := f.read(f.buf)
		if err != nil {
			b.Fatalf("floor: %s: %v (got %q)", what, err, got)
		}
		got = append(got, p...)
	}
	return got
}

// back: the prompt is back after the echo's line.
func (f *floorSide) back(got []byte) bool {
	i := bytes.IndexByte(got, '\n')
	return i >= 0 && f.prompt.Match(got[i+1:])
}

// exchange sends the command line (Enter is CR, as run_command's) and
// reads until the prompt is back; it returns what came and how long it
// took.
func (f *floorSide) exchange(b *testing.B, cmd string) ([]byte, time.Duration) {
	dog := time.AfterFunc(overheadTimeout, f.kill)
	defer dog.Stop()
	t0 := time.Now()
	if err := f.write([]byte(cmd + "\r")); err != nil {
		b.Fatalf("floor: %s: %v", cmd, err)
	}
	got := f.readUntil(b, cmd, f.back)
	return got, time.Since(t0)
}

// start reads until the first prompt (ready) matches.
func (f *floorSide) start(b *testing.B, ready *regexp.Regexp) {
	dog := time.AfterFunc(overheadTimeout, f.kill)
	defer dog.Stop()
	f.readUntil(b, "first prompt", ready.Match)
}

// ptyFloor starts path with args under creack/pty as launch_app would:
// its environment (the server's with HOME set, then shell.Prepare's
// defaults and, for bash, the integration's rc file), 80x24.
func ptyFloor(b *testing.B, path string, args []string, home string, prompt *regexp.Regexp) *floorSide {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HOME=") })
	prep, err := shell.Prepare(path, args, append(env, "HOME="+home), map[string]bool{"HOME": true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(prep.Cleanup)
	cmd := exec.Command(prep.Command, prep.Args...)
	cmd.Env = prep.Env
	f, err := cpty.StartWithSize(cmd, &cpty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		b.Fatal(err)
	}
	kill := func() { cmd.Process.Kill(); f.Close() }
	b.Cleanup(func() { kill(); cmd.Wait() })
	fl := &floorSide{
		write: func(p []byte) error { _, err := f.Write(p); return err },
		read: func(buf []byte) ([]byte, error) {
			n, err := f.Read(buf)
			return buf[:n], err
		},
		kill: kill, prompt: prompt, buf: make([]byte, 32<<10),
	}
	fl.start(b, prompt)
	return fl
}

// telnetFloorSink gathers what the telnet core decodes and writes its
// answers to the server at once.
type telnetFloorSink struct {
	w    io.Writer
	data []byte
	err  error
}

func (s *telnetFloorSink) Data(p []byte) { s.data = append(s.data, p...) }

func (s *telnetFloorSink) Send(p []byte) {
	if _, err := s.w.Write(p); err != nil && s.err == nil {
		s.err = err
	}
}

func (s *telnetFloorSink) Event(proto.Event) {}

// telnetFloor connects to a Telnet server on loopback through link.TCP and
// the telnet core, and reads until ready matches.
func telnetFloor(b *testing.B, port int, ready *regexp.Regexp) *floorSide {
	nc, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		b.Fatal(err)
	}
	tc := nc.(*net.TCPConn)
	tc.SetNoDelay(true)
	conn := link.NewTCP(tc)
	b.Cleanup(func() { conn.Close() })
	tn := proto.New(proto.Config{})
	sink := &telnetFloorSink{w: conn}
	fl := &floorSide{
		write: func(p []byte) error { tn.Encode(p, sink); return sink.err },
		read: func(buf []byte) ([]byte, error) {
			n, err := conn.Read(buf)
			sink.data = sink.data[:0]
			tn.Receive(buf[:n], sink)
			if err == nil {
				err = sink.err
			}
			return sink.data, err
		},
		kill: func() { conn.Close() }, prompt: ready, buf: make([]byte, 32<<10),
	}
	fl.start(b, ready)
	return fl
}

// sshFloor opens a shell on a PTY channel to sb's sshd with
// golang.org/x/crypto/ssh and reads until the first prompt.
func sshFloor(b *testing.B, sb *sshBench, prompt *regexp.Regexp) *floorSide {
	client, err := ssh.Dial("tcp", sb.addr(), sb.clientConfig(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	s, err := client.NewSession()
	if err != nil {
		b.Fatal(err)
	}
	if err := s.RequestPty("xterm-256color", 24, 80, ssh.TerminalModes{}); err != nil {
		b.Fatal(err)
	}
	in, _ := s.StdinPipe()
	out, _ := s.StdoutPipe()
	if err := s.Shell(); err != nil {
		b.Fatal(err)
	}
	fl := &floorSide{
		write: func(p []byte) error { _, err := in.Write(p); return err },
		read: func(buf []byte) ([]byte, error) {
			n, err := out.Read(buf)
			return buf[:n], err
		},
		kill: func() { client.Close() }, prompt: prompt, buf: make([]byte, 32<<10),
	}
	fl.start(b, prompt)
	return fl
}
