package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/host/link"
)

// BenchmarkConcurrentLoad (issue 19): N sessions, each looping
// telnet_send + telnet_read {until} against a loopback BusyBox telnetd,
// all over ONE stdio client that keeps a call of every session in flight
// (a lean client: newline-delimited JSON-RPC, responses matched by id);
// beside it the floor, N bare TCP clients doing the same echo against the
// same telnetd. Each phase runs for TERMHOST_LOAD_SECONDS (3 by default);
// TERMHOST_LOAD_DIALECT, if set, is every session's "dialect" argument;
// TERMHOST_LOAD_BIN, if set, is the termhost executable to load instead of
// the one this test binary built (to alternate an old and a new build in
// the same time window on a shared machine).
// It reports round trips per second of both, their p50 and p99, termhost's
// CPU time per round trip and how many cores it kept busy (from
// /proc/PID/stat). Run with -benchtime 1x.
func BenchmarkConcurrentLoad(b *testing.B) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		b.Skip("busybox not installed")
	}
	port := busyboxTelnetd(b, "/bin/sh")
	d := 3 * time.Second
	if s, err := strconv.Atoi(os.Getenv("TERMHOST_LOAD_SECONDS")); err == nil && s > 0 && s <= 120 {
		d = time.Duration(s) * time.Second
	}
	for _, n := range []int{10, 50, 100} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			for b.Loop() {
				rawBefore := selfCPU()
				raw, err := rawLoad(port, n, d)
				raw.clientCPU = selfCPU() - rawBefore
				if err != nil {
					b.Fatalf("floor: %v", err)
				}
				th, err := termhostLoad(port, n, d)
				if err != nil {
					b.Fatalf("termhost: %v", err)
				}
				b.ReportMetric(raw.rate(), "rt/s-raw")
				b.ReportMetric(th.rate(), "rt/s")
				b.ReportMetric(th.rate()/raw.rate(), "x-floor-rate")
				percentiles(b, raw.lat, "ms-raw")
				percentiles(b, th.lat, "ms")
				b.ReportMetric(float64(th.cpu.Microseconds())/float64(len(th.lat)), "cpu-us/rt")
				b.ReportMetric(th.cpu.Seconds()/th.wall.Seconds(), "cores")
				b.ReportMetric(float64(th.clientCPU.Microseconds())/float64(len(th.lat)), "client-cpu-us/rt")
				// What the floor's bare Go TCP clients spent: a round trip's
				// write, QUICKACK, reads and goroutine wake-ups, nothing else.
				b.ReportMetric(float64(raw.clientCPU.Microseconds())/float64(len(raw.lat)), "cpu-us/rt-raw")
			}
		})
	}
}

// loadResult is one phase: every round trip's latency, how long the phase
// ran, and (termhost) the CPU time termhost used in it.
type loadResult struct {
	lat       []time.Duration
	wall      time.Duration
	cpu       time.Duration
	clientCPU time.Duration // this process's (the client's)
}

// selfCPU is this process's user+system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r loadResult) rate() float64 { return float64(len(r.lat)) / r.wall.Seconds() }

// runLoad runs work(i, until) in n goroutines until the deadline and
// gathers their latencies; the first error stops it.
func runLoad(n int, d time.Duration, work func(i int, until time.Time) ([]time.Duration, error)) (loadResult, error) {
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	until := start.Add(d)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat, err := work(i, until)
			mu.Lock()
			all = append(all, lat...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res := loadResult{lat: all, wall: time.Since(start)}
	if len(all) == 0 {
		errs = append(errs, errors.New("no round trip completed"))
	}
	return res, errors.Join(errs...)
}

// rawLoad is the floor: n bare TCP clients reading and writing through
// termhost's own TCP link (link.TCP: TCP_NODELAY, QUICKACK after every
// write, raw system calls), so the floor pays what the link pays and no
// more.
func rawLoad(port, n int, d time.Duration) (loadResult, error) {
	conns := make([]link.TCP, n)
	defer func() {
		for _, c := range conns {
			if c.TCPConn != nil {
				c.Close()
			}
		}
	}()
	prompt := func(p []byte) bool { return bytes.HasSuffix(p, []byte("# ")) || bytes.HasSuffix(p, []byte("$ ")) }
	for i := range conns {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return loadResult{}, err
		}
		c.(*net.TCPConn).SetNoDelay(true)
		conns[i] = link.NewTCP(c.(*net.TCPConn))
		if err := readUntilRaw(conns[i], make([]byte, 32<<10), prompt); err != nil {
			return loadResult{}, err
		}
	}
	return runLoad(n, d, func(i int, until time.Time) ([]time.Duration, error) {
		c, buf := conns[i], make([]byte, 32<<10)
		var lat []time.Duration
		for k := 0; time.Now().Before(until); k++ {
			want := fmt.Sprintf("r%dx%dx", i, k)
			start := time.Now()
			if _, err := c.Write([]byte("echo " + want + "\r\n")); err != nil {
				return lat, err
			}
			marker := []byte("\n" + want)
			if err := readUntilRaw(c, buf, func(p []byte) bool { return bytes.Contains(p, marker) && prompt(p) }); err != nil {
				return lat, err
			}
			lat = append(lat, time.Since(start))
		}
		return lat, nil
	})
}

func readUntilRaw(c link.TCP, buf []byte, done func([]byte) bool) error {
	var got []byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for !done(got) {
		n, err := c.Read(buf)
		if err != nil {
			return fmt.Errorf("raw client: %v (got %q)", err, got)
		}
		got = append(got, buf[:n]...)
	}
	return nil
}

// termhostLoad: one `termhost serve` over stdio, n Telnet sessions, a
// round trip of each in flight at once.
//
// The client is one loop on one goroutine, as an MCP client's event loop
// is (Node's): it reads what termhost wrote, takes each answer's session
// from its id, records the round trip or sends its telnet_read, and
// writes every request it built in one write. Calls are built by hand and
// answers checked by a scan, not decoded: the client shares the two cores
// with the server it measures, and a goroutine, channel, map and timer per
// call (the client before this one) cost it ~17 µs of CPU per round trip
// (issue 19); it reports its own CPU as client-cpu-us/rt.
func termhostLoad(port, n int, d time.Duration) (loadResult, error) {
	c, err := startLoadClient(append([]string{"--log-level", "warn", "--max-sessions", strconv.Itoa(n + 10)}, strings.Fields(os.Getenv("TERMHOST_LOAD_ARGS"))...)...)
	if err != nil {
		return loadResult{}, err
	}
	defer c.close()
	ids := make([]string, n)
	for i := range ids {
		args := map[string]any{"host": "127.0.0.1", "port": port}
		if d := os.Getenv("TERMHOST_LOAD_DIALECT"); d != "" {
			args["dialect"] = d
		}
		r, err := c.tool("telnet_connect", args)
		if err != nil {
			return loadResult{}, err
		}
		ids[i], _ = r["sessionId"].(string)
		if _, err := c.tool("telnet_read", map[string]any{"sessionId": ids[i], "until": `[#$] $`, "timeoutMs": 10000}); err != nil {
			return loadResult{}, err
		}
	}
	before, err := cpuTime(c.cmd.Process.Pid)
	if err != nil {
		return loadResult{}, err
	}
	clientBefore := selfCPU()
	res, err := c.loop(ids, d)
	after, cerr := cpuTime(c.cmd.Process.Pid)
	res.cpu = after - before
	res.clientCPU = selfCPU() - clientBefore
	return res, errors.Join(err, cerr)
}

// loop runs the round trips: each session's telnet_send, then, once it
// is answered, its telnet_read {until}, then the next round trip, until
// the deadline; then it waits for the round trips in flight. A request's
// id is 2·(its session's round trip)·n + 2·session + (1 for the read), so
// an answer's id gives its session and step with no map.
func (c *loadClient) loop(ids []string, d time.Duration) (loadResult, error) {
	n := len(ids)
	type sess struct {
		k     int       // round trip number
		start time.Time // when its telnet_send was written
		want  []byte
	}
	ss := make([]sess, n)
	var (
		out      []byte
		lat      []time.Duration
		inFlight int
	)
	request := func(id int64, params ...[]byte) {
		out = strconv.AppendInt(append(out, `{"jsonrpc":"2.0","id":`...), id, 10)
		out = append(out, `,"method":"tools/call","params":`...)
		for _, p := range params {
			out = append(out, p...)
		}
		out = append(out, "}\n"...)
	}
	send := func(i int, now time.Time) {
		st := &ss[i]
		st.want = append(append(append(st.want[:0], 't'), strconv.Itoa(i)...), 'x')
		st.want = append(strconv.AppendInt(st.want, int64(st.k), 10), 'x')
		st.start = now
		request(int64(2*st.k*n+2*i), []byte(`{"name":"telnet_send","arguments":{"sessionId":"`), []byte(ids[i]),
			[]byte(`","command":"echo `), st.want, []byte(`"}}`))
		inFlight++
	}
	// The pattern is "\n" + want + `\r?\n.*[#$] $`: a newline (JSON's
	// \n), the marker, the regexp's \r?\n.
	read := func(i int) {
		st := &ss[i]
		request(int64(2*st.k*n+2*i+1), []byte(`{"name":"telnet_read","arguments":{"sessionId":"`), []byte(ids[i]),
			[]byte(`","until":"\n`), st.want, []byte(`\\r?\\n.*[#$] $","timeoutMs":10000}}`))
	}
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		_, err := c.in.Write(out)
		out = out[:0]
		return err
	}
	start := time.Now()
	until := start.Add(d)
	for i := range ids {
		send(i, start)
	}
	if err := flush(); err != nil {
		return loadResult{}, err
	}
	var end time.Time
	for inFlight > 0 {
		c.out.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return loadResult{lat: lat}, fmt.Errorf("reading termhost's answers: %v", err)
		}
		id, ok := leanID(line)
		if !ok || id < 0 {
			continue // a notification
		}
		i, step := int(id%int64(2*n))/2, id%2
		switch {
		case bytes.Contains(line, []byte(`"error":{`)) || bytes.Contains(line, []byte(`"isError":true`)):
			return loadResult{lat: lat}, fmt.Errorf("session %d round trip %d: %s", i, ss[i].k, line)
		case step == 0 && !bytes.Contains(line, []byte(`\"sentBytes\":`)):
			return loadResult{lat: lat}, fmt.Errorf("session %d round trip %d: telnet_send answered %s", i, ss[i].k, line)
		case step == 0:
			read(i)
		case !bytes.Contains(line, []byte(`\"reason\":\"matched\"`)):
			return loadResult{lat: lat}, fmt.Errorf("session %d round trip %d: %s", i, ss[i].k, line)
		default:
			now := time.Now()
			lat = append(lat, now.Sub(ss[i].start))
			end = now
			inFlight--
			ss[i].k++
			if now.Before(until) {
				send(i, now)
			}
		}
		// Everything termhost wrote is read: answer it in one write.
		if c.r.Buffered() == 0 {
			if err := flush(); err != nil {
				return loadResult{lat: lat}, err
			}
		}
	}
	res := loadResult{lat: lat, wall: end.Sub(start)}
	if len(lat) == 0 {
		return res, errors.New("no round trip completed")
	}
	return res, nil
}

// cpuTime is a process's user+system time so far (/proc/PID/stat, in
// clock ticks of 1/100 s, USER_HZ on Linux).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// loadClient speaks MCP over the stdio of `termhost serve` with nothing
// but newline-delimited JSON-RPC, on the caller's goroutine: setup calls
// one at a time (tool), the load itself as one loop (loop).
type loadClient struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *os.File
	r    *bufio.Reader
	next int64 // setup calls' ids count down from -1: the loop's are >= 0
}

func startLoadClient(args ...string) (*loadClient, error) {
	bin := binary
	if b := os.Getenv("TERMHOST_LOAD_BIN"); b != "" {
		bin = b
	}
	cmd := exec.Command(bin, append([]string{"serve", "--cache-dir", cacheDir()}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	pw.Close()
	c := &loadClient{cmd: cmd, in: in, out: pr, r: bufio.NewReaderSize(pr, 1<<20)}
	if _, err := c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "load", "version": "1"}}); err != nil {
		c.close()
		return nil, err
	}
	_, err = io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return c, err
}

// call makes one request and waits for its answer.
func (c *loadClient) call(method string, params any) (json.RawMessage, error) {
	c.next--
	id := c.next
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	c.out.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: %v", method, err)
		}
		var m struct {
			ID     *int64          `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != id {
			continue // a notification
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %d %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	}
}

// tool calls a tool and decodes its one JSON text block; a tool error is
// an error.
func (c *loadClient) tool(name string, args map[string]any) (map[string]any, error) {
	raw, err := c.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
		return nil, fmt.Errorf("%s: unexpected result %s", name, raw)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: %s", name, res.Content[0].Text)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].Text), &m); err != nil {
		return nil, fmt.Errorf("%s: %v in %q", name, err, res.Content[0].Text)
	}
	return m, nil
}

// leanID reads the id of a response line as termhost writes it
// (`{"jsonrpc":"2.0","id":N,...`), without decoding the line.
func leanID(line []byte) (int64, bool) {
	const head = `{"jsonrpc":"2.0","id":`
	if !bytes.HasPrefix(line, []byte(head)) {
		return 0, false
	}
	rest := line[len(head):]
	end := bytes.IndexByte(rest, ',')
	if end <= 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return id, err == nil
}

func (c *loadClient) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
	c.out.Close()
}
