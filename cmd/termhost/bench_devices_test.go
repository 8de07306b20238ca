package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
	"github.com/termhost/termhost/internal/frrtest"
)

// The run_command benchmarks time one command, the whole call, on a device
// over Telnet, and beside it, on the same device in the same run, the
// peers' own calls: Netmiko's send_command (Debian's python3-netmiko, run
// with /usr/bin/python3) and scrapligo's SendCommand (the program in
// internal/peerbench/scrapli, a Go module of its own so that termhost never
// depends on scrapligo, built here with `go build`). The calls are
// interleaved — termhost, Netmiko, scrapligo, termhost, … — so that all
// three run under the same load. Every side is logged in and enabled
// before it is timed; the peers turn paging off (`terminal length 0`) as
// they always do, termhost answers the pager. A peer that is not
// installed, or does not build, is logged and left out. The outputs are
// compared line by line, trailing blanks and CRs aside.

// netmikoScript drives Netmiko's send_command on the device: it connects
// once (Netmiko turns paging off with `terminal length 0`), enables with
// the secret, then runs the command once for every line read from stdin
// and answers each with one line of JSON: the milliseconds the call took
// and its output.
const netmikoScript = `
import json, sys, time
from netmiko import ConnectHandler
host, port, user, pw, secret, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
c = ConnectHandler(device_type="cisco_ios_telnet", host=host, port=port, username=user, password=pw, secret=secret)
c.enable()
for _ in sys.stdin:
    t = time.perf_counter()
    out = c.send_command(cmd)
    ms = (time.perf_counter() - t) * 1000
    print(json.dumps({"ms": ms, "output": out}), flush=True)
c.disconnect()
`

// device is what the peers need to log in and run the command.
type device struct {
	host, port, user, pass, secret, command string
	scrapliPlatform                         string
	// mask hides what may differ between two correct outputs taken at
	// different moments (FRR's packet counters), for the output check.
	mask *regexp.Regexp
	// open opens another enabled termhost session on the device.
	open func() string
}

// peer is a peer's program, driven a call at a time.
type peer struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	err  *strings.Builder
	lat  []time.Duration
	last string
}

// startDevicePeer starts a peer's program; it logs in when it starts.
func startDevicePeer(b *testing.B, name string, argv ...string) *peer {
	p := &peer{name: name, cmd: exec.Command(argv[0], argv[1:]...), err: &strings.Builder{}}
	p.cmd.Stderr = p.err
	in, err := p.cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<20)
	b.Cleanup(func() { p.in.Close(); p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}

// call runs the command once and keeps the peer's own time of the call
// when timed.
func (p *peer) call(b *testing.B, timed bool) {
	if _, err := io.WriteString(p.in, "\n"); err != nil {
		b.Fatalf("%s: %v\n%s", p.name, err, p.err)
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		b.Fatalf("%s: %v\n%s", p.name, err, p.err)
	}
	var r struct {
		MS     float64 `json:"ms"`
		Output string  `json:"output"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		b.Fatalf("%s answered %q: %v", p.name, line, err)
	}
	if timed {
		p.lat = append(p.lat, time.Duration(r.MS*float64(time.Millisecond)))
	}
	p.last = r.Output
}

// startNetmiko starts netmikoScript against d, or returns nil when
// python3-netmiko is not installed.
func startNetmiko(b *testing.B, d device) *peer {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import netmiko").Run() != nil {
		b.Log("python3-netmiko not installed: Netmiko not measured (apt-get install python3-netmiko)")
		return nil
	}
	script := filepath.Join(b.TempDir(), "netmiko_bench.py")
	os.WriteFile(script, []byte(netmikoScript), 0o644)
	return startDevicePeer(b, "netmiko", py, script, d.host, d.port, d.user, d.pass, d.secret, d.command)
}

var scrapliPeer = struct {
	once      sync.Once
	bin, fail string
}{}

// startScrapli starts the scrapligo peer against d, or returns nil (and
// logs why) when it does not build. It is built once per test binary.
func startScrapli(b *testing.B, d device) *peer {
	scrapliPeer.once.Do(func() {
		src, err := filepath.Abs(filepath.Join("..", "..", "internal", "peerbench", "scrapli"))
		if err != nil {
			scrapliPeer.fail = err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "termhost-peerbench-")
		if err != nil {
			scrapliPeer.fail = err.Error()
			return
		}
		bin := filepath.Join(dir, "scrapli")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			scrapliPeer.fail = fmt.Sprintf("%v\n%s", err, out)
			return
		}
		scrapliPeer.bin = bin
	})
	if scrapliPeer.bin == "" {
		b.Logf("the scrapligo peer did not build: scrapligo not measured: %s", scrapliPeer.fail)
		return nil
	}
	return startDevicePeer(b, "scrapligo", scrapliPeer.bin, "-host", d.host, "-port", d.port, "-username", d.user, "-password", d.pass,
		"-enable", d.secret, "-platform", d.scrapliPlatform, "-command", d.command)
}

// normLines splits out into lines without trailing blanks or CRs, and
// without empty lines at either end, masking what d.mask matches.
func normLines(d device, out string) []string {
	var lines []string
	for l := range strings.SplitSeq(out, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if d.mask != nil {
			l = d.mask.ReplaceAllString(l, "#")
		}
		lines = append(lines, l)
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// reportPeer reports a peer's percentiles and line count and whether its
// output is termhost's (same-<name> 1 or 0), logging the first difference.
func reportPeer(b *testing.B, d device, p *peer, ours string) {
	name := p.name
	percentiles(b, p.lat, "ms-"+name)
	want, got := normLines(d, ours), normLines(d, p.last)
	b.ReportMetric(float64(len(got)), "lines-"+name)
	ok := slices.Equal(want, got)
	b.ReportMetric(map[bool]float64{true: 1}[ok], "same-"+name)
	if ok {
		return
	}
	w, g := strings.Join(want, "\n"), strings.Join(got, "\n")
	if cut := len(w) - len(g); cut == len(d.command) && strings.HasSuffix(w, g) {
		// Netmiko 2.4 strips the command's echo by cutting as many
		// characters as the command has, echoed or not.
		b.Logf("%s's output is termhost's without its first %d characters (%q): the device did not echo the command, and %s cut that many anyway",
			name, cut, w[:cut], name)
		return
	}
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			b.Logf("%s's output differs from termhost's at line %d (%d lines, %s %d): termhost %q, %s %q",
				name, i+1, len(want), name, len(got), at(want, i), name, at(got, i))
			return
		}
	}
}

// at is lines[i], or "" past the end.
func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// enableSession enables a dialect session: run_command `enable` stops at
// the password field, the host types the enable secret, and the new prompt
// is read.
func enableSession(b *testing.B, h *hostProc, id, cred, prompt string) {
	r := h.must("run_command", map[string]any{"sessionId": id, "command": "enable", "timeoutMs": 10000})
	if r["reason"] != "login" {
		b.Fatalf("enable: %v", r)
	}
	h.must("send_secret", map[string]any{"sessionId": id, "credentialId": cred, "field": "enableSecret"})
	if r := h.must("telnet_read", map[string]any{"sessionId": id, "until": prompt, "timeoutMs": 10000}); r["reason"] != "matched" {
		b.Fatalf("enable: %v", r)
	}
}

// benchRunCommand times b.N run_command calls of d.command on session id,
// each followed by a call of each peer, after one warm-up call each (the
// first run_command must have taken at least minPages pages).
func benchRunCommand(b *testing.B, h *hostProc, id string, d device, minPages float64) {
	runOn := func(id string) map[string]any {
		return h.must("run_command", map[string]any{"sessionId": id, "command": d.command, "timeoutMs": 30000})
	}
	run := func() map[string]any { return runOn(id) }
	// A second session with paging turned off, as the peers do: the same
	// command without the pager's round trips.
	var unpaged string
	if minPages > 0 {
		unpaged = d.open()
		if r := h.must("run_command", map[string]any{"sessionId": unpaged, "command": "terminal length 0", "timeoutMs": 30000}); r["reason"] != "done" {
			b.Fatalf("terminal length 0: %v", r)
		}
	}
	var latUnpaged []time.Duration
	var peers []*peer
	if p := startNetmiko(b, d); p != nil {
		peers = append(peers, p)
	}
	if p := startScrapli(b, d); p != nil {
		peers = append(peers, p)
	}
	first := run()
	if first["reason"] != "done" || first["pages"].(float64) < minPages {
		b.Fatalf("run_command: %v", first)
	}
	for _, p := range peers {
		p.call(b, false)
	}
	ours := first["output"].(string)
	var lat []time.Duration
	for range b.N {
		t0 := time.Now()
		r := run()
		lat = append(lat, time.Since(t0))
		if r["reason"] != "done" {
			b.Fatalf("run_command: %v", r["reason"])
		}
		ours = r["output"].(string)
		if unpaged != "" {
			t0 := time.Now()
			r := runOn(unpaged)
			latUnpaged = append(latUnpaged, time.Since(t0))
			if r["reason"] != "done" || r["pages"].(float64) != 0 || !slices.Equal(normLines(d, r["output"].(string)), normLines(d, ours)) {
				b.Fatalf("run_command without paging: %v pages, reason %v, same output %v", r["pages"], r["reason"], r["output"] == ours)
			}
		}
		for _, p := range peers {
			p.call(b, true)
		}
	}
	percentiles(b, lat, "ms-run_command")
	if unpaged != "" {
		percentiles(b, latUnpaged, "ms-run_command-unpaged")
	}
	b.ReportMetric(float64(len(normLines(d, ours))), "lines")
	b.ReportMetric(first["pages"].(float64), "pages")
	for _, p := range peers {
		reportPeer(b, d, p, ours)
	}
}

// BenchmarkRunCommandPeers: run_command of a ten-page `show logging` (205
// lines) on the simulated IOS router (the cisco_ios dialect answers the
// pager), p50/p99 per call, beside Netmiko (cisco_ios_telnet) and
// scrapligo (its cisco_iosxe platform) on the same device.
func BenchmarkRunCommandPeers(b *testing.B) {
	const pass = "bench-Pass-4"
	dev, err := devsim.Listen("127.0.0.1:0", devsim.Config{Personality: "cisco_ios", Username: "admin", Password: pass, NoColor: true})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	host, port, _ := net.SplitHostPort(dev.Addr())
	portN, _ := strconv.Atoi(port)
	h := startHostWithCreds(b, []devCred{{ID: "r1", Host: host, Port: portN, User: "admin", Pass: pass, Enable: pass}}, "--log-level", "warn")
	open := func() string {
		id := h.must("telnet_connect", map[string]any{"credentialId": "r1", "dialect": "cisco_ios"})["sessionId"].(string)
		enableSession(b, h, id, "r1", `edge-r1#\s*$`)
		return id
	}
	benchRunCommand(b, h, open(), device{host: host, port: port, user: "admin", pass: pass, secret: pass,
		command: "show logging", scrapliPlatform: "cisco_iosxe", open: open}, 9)
}

// BenchmarkRunCommandFRR: run_command of `show interface` on a real
// FRRouting zebra's vty (internal/frrtest; root and frr needed, else
// skipped) with the frr dialect, beside Netmiko (cisco_ios_telnet: its
// password-only Telnet login and `enable` fit FRR's vty; Netmiko 2.4 has
// no FRR or generic Telnet type) and scrapligo (an FRR definition in the
// peer program: scrapligo has no FRR platform). The counters in the output
// move between calls, so the output check masks numbers.
func BenchmarkRunCommandFRR(b *testing.B) {
	r := frrtest.Start(b)
	h := startHostWithCreds(b, []devCred{frrCred(r)}, "--log-level", "warn")
	open := func() string {
		c := h.must("telnet_connect", map[string]any{"credentialId": "frr", "dialect": "frr"})
		if c["loggedIn"] != true {
			b.Fatalf("login: %v", c)
		}
		id := c["sessionId"].(string)
		enableSession(b, h, id, "frr", r.Hostname+`#\s*$`)
		return id
	}
	benchRunCommand(b, h, open(), device{host: "127.0.0.1", port: strconv.Itoa(r.Port), user: "unused", pass: r.Password, secret: r.EnablePassword,
		command: "show interface", scrapliPlatform: "frr", mask: regexp.MustCompile(`[0-9]+`), open: open}, 1)
}
