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
	"sync/atomic"
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
				raw, err := rawLoad(port, n, d)
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

// rawLoad is the floor: n bare TCP clients (TCP_NODELAY, QUICKACK
// re-armed after every write, as termhost's TCP link does).
func rawLoad(port, n int, d time.Duration) (loadResult, error) {
	conns := make([]*net.TCPConn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
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
		conns[i] = c.(*net.TCPConn)
		conns[i].SetNoDelay(true)
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
			if _, err := (link.TCP{TCPConn: c}).Write([]byte("echo " + want + "\r\n")); err != nil {
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

func readUntilRaw(c *net.TCPConn, buf []byte, done func([]byte) bool) error {
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
func termhostLoad(port, n int, d time.Duration) (loadResult, error) {
	c, err := startMux(append([]string{"--log-level", "warn", "--max-sessions", strconv.Itoa(n + 10)}, strings.Fields(os.Getenv("TERMHOST_LOAD_ARGS"))...)...)
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
	res, err := runLoad(n, d, func(i int, until time.Time) ([]time.Duration, error) {
		// The loop's calls are built by hand and their answers checked by
		// a scan, not decoded: the client shares the machine with the
		// server it measures, and encoding/json's maps cost it about as
		// much CPU per round trip as the server spent (issue 19).
		var lat []time.Duration
		call := c.caller()
		var sendArgs, readArgs []byte
		for k := 0; time.Now().Before(until); k++ {
			want := "t" + strconv.Itoa(i) + "x" + strconv.Itoa(k) + "x"
			start := time.Now()
			sendArgs = append(append(append(append(sendArgs[:0], `{"name":"telnet_send","arguments":{"sessionId":"`...), ids[i]...), `","command":"echo `...), want...)
			sendArgs = append(sendArgs, `"}}`...)
			r, err := call.tool(sendArgs)
			if err != nil {
				return lat, fmt.Errorf("telnet_send: %v", err)
			}
			if !bytes.Contains(r, []byte(`\"sentBytes\":`)) {
				return lat, fmt.Errorf("session %d round trip %d: telnet_send answered %s", i, k, r)
			}
			// The pattern is "\n" + want + `\r?\n.*[#$] $`: a newline
			// (JSON's \n), the marker, the regexp's \r?\n.
			readArgs = append(append(append(append(readArgs[:0], `{"name":"telnet_read","arguments":{"sessionId":"`...), ids[i]...), `","until":"\n`...), want...)
			readArgs = append(readArgs, `\\r?\\n.*[#$] $","timeoutMs":10000}}`...)
			if r, err = call.tool(readArgs); err != nil {
				return lat, fmt.Errorf("telnet_read: %v", err)
			}
			if !bytes.Contains(r, []byte(`\"reason\":\"matched\"`)) {
				return lat, fmt.Errorf("session %d round trip %d: %s", i, k, r)
			}
			lat = append(lat, time.Since(start))
		}
		return lat, nil
	})
	after, cerr := cpuTime(c.cmd.Process.Pid)
	res.cpu = after - before
	res.clientCPU = selfCPU() - clientBefore
	return res, errors.Join(err, cerr)
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

// muxClient speaks MCP over the stdio of `termhost serve` with nothing but
// newline-delimited JSON-RPC, any number of calls in flight: a writer
// under a lock, a reader handing each response to its caller by id.
type muxClient struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	wmu     sync.Mutex
	next    atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan muxReply
	// leanPending: calls of leanCaller, answered with the raw line.
	leanPending map[int64]chan []byte
	// The lean calls' write queue (send), under wmu.
	wbuf, wspare []byte
	writing      bool
	werr         error
	done         chan struct{}
}

type muxReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func startMux(args ...string) (*muxClient, error) {
	bin := binary
	if b := os.Getenv("TERMHOST_LOAD_BIN"); b != "" {
		bin = b
	}
	cmd := exec.Command(bin, append([]string{"serve", "--cache-dir", cacheDir()}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &muxClient{cmd: cmd, in: in, pending: map[int64]chan muxReply{}, leanPending: map[int64]chan []byte{}, done: make(chan struct{})}
	go c.read(out)
	if _, err := c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "load", "version": "1"}}); err != nil {
		c.close()
		return nil, err
	}
	c.wmu.Lock()
	_, err = io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	c.wmu.Unlock()
	return c, err
}

func (c *muxClient) read(out io.Reader) {
	defer close(c.done)
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		id, ok := leanID(line)
		var m struct {
			ID *int64 `json:"id"`
			muxReply
		}
		if !ok {
			if json.Unmarshal(line, &m) != nil || m.ID == nil {
				continue // a notification
			}
			id = *m.ID
		}
		c.mu.Lock()
		ch, lean := c.pending[id], c.leanPending[id]
		delete(c.pending, id)
		delete(c.leanPending, id)
		c.mu.Unlock()
		switch {
		case lean != nil:
			lean <- line
		case ch != nil:
			if ok && json.Unmarshal(line, &m) != nil {
				continue
			}
			ch <- m.muxReply
		}
	}
}

func (c *muxClient) call(method string, params any) (json.RawMessage, error) {
	id := c.next.Add(1)
	ch := make(chan muxReply, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	c.wmu.Lock()
	_, err = c.in.Write(append(b, '\n'))
	c.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
		}
		return r.Result, nil
	case <-c.done:
		return nil, errors.New("termhost went away")
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("%s: no answer within 30 s", method)
	}
}

// tool calls a tool and decodes its one JSON text block; a tool error is
// an error.
func (c *muxClient) tool(name string, args map[string]any) (map[string]any, error) {
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

// send queues a request line; the first sender writes what is queued,
// in one write per batch, as termhost writes its answers: the requests
// of sessions whose answers came together go out together.
func (c *muxClient) send(line []byte) error {
	c.wmu.Lock()
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	c.wbuf = append(c.wbuf, line...)
	if c.writing {
		c.wmu.Unlock()
		return nil
	}
	c.writing = true
	for len(c.wbuf) > 0 && c.werr == nil {
		buf := c.wbuf
		c.wbuf = c.wspare[:0]
		c.wmu.Unlock()
		_, err := c.in.Write(buf)
		c.wmu.Lock()
		c.wspare = buf[:0]
		if err != nil {
			c.werr = err
		}
	}
	c.writing = false
	err := c.werr
	c.wmu.Unlock()
	return err
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

// leanCaller makes one goroutine's calls with a request line built by
// hand, its channel and timer made once.
type leanCaller struct {
	c     *muxClient
	ch    chan []byte
	timer *time.Timer
	line  []byte
}

func (c *muxClient) caller() *leanCaller {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &leanCaller{c: c, ch: make(chan []byte, 1), timer: t}
}

// tool calls tools/call with params (its JSON) and returns the response
// line as it came; a JSON-RPC error or a tool error is an error.
func (l *leanCaller) tool(params []byte) ([]byte, error) {
	c := l.c
	id := c.next.Add(1)
	c.mu.Lock()
	c.leanPending[id] = l.ch
	c.mu.Unlock()
	l.line = strconv.AppendInt(append(l.line[:0], `{"jsonrpc":"2.0","id":`...), id, 10)
	l.line = append(append(append(l.line, `,"method":"tools/call","params":`...), params...), "}\n"...)
	if err := c.send(l.line); err != nil {
		return nil, err
	}
	l.timer.Reset(30 * time.Second)
	defer l.timer.Stop()
	select {
	case r := <-l.ch:
		if bytes.Contains(r, []byte(`"error":{`)) || bytes.Contains(r, []byte(`"isError":true`)) {
			return nil, fmt.Errorf("%s", r)
		}
		return r, nil
	case <-c.done:
		return nil, errors.New("termhost went away")
	case <-l.timer.C:
		return nil, errors.New("no answer within 30 s")
	}
}

func (c *muxClient) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}
