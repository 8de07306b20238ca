package ssh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// DefaultMaxBytes bounds each of stdout and stderr in a result.
const DefaultMaxBytes = 64 << 10

// tailKeep is how much of a stream's end is kept beyond the bound, to
// find the end marker of a wrapped command.
const tailKeep = 8 << 10

// stream is one output stream of a command: its first bytes up to a
// bound, its last bytes, and how many there were.
type stream struct {
	head  []byte
	tail  []byte
	total int
	max   int
}

func (st *stream) write(p []byte) {
	st.total += len(p)
	if room := st.max + tailKeep - len(st.head); room > 0 {
		st.head = append(st.head, p[:min(room, len(p))]...)
	}
	st.tail = append(st.tail, p...)
	if len(st.tail) > 2*tailKeep {
		st.tail = append(st.tail[:0], st.tail[len(st.tail)-tailKeep:]...)
	}
}

// channel collects one exec channel's output and end.
type channel struct {
	stdout, stderr stream

	mu     sync.Mutex
	code   *int
	signal string
	errMsg string
	closed bool
	done   chan struct{}
	// A command of a persistent session's shell (repl) ends with marks
	// carrying this nonce: outEnd and errEnd say they arrived, cwd is the
	// directory it ended in.
	nonce          string
	opened         bool // the server started the command (exec channels)
	outEnd, errEnd bool
	cwd            string
}

func (ch *channel) finish() {
	if !ch.closed {
		ch.closed = true
		close(ch.done)
	}
}

// eventChannel is the exec channel an ssh plugin event concerns, or 0
// for the connection's own events (closed, connected, banner, an error
// without a channel).
func eventChannel(body abi.Payload) int {
	switch b := body.(type) {
	case *abi.ChannelData:
		return int(b.Ch)
	case *abi.Opened:
		return b.Ch
	case *abi.Exit:
		return b.Ch
	case *abi.ChannelClosed:
		return b.Ch
	case *abi.Error:
		return b.Ch
	}
	return 0
}

// event routes exec channels' output and events to their collectors and
// consumes them; everything else (the connection's and the shell's
// events) is recorded by the session as usual.
func (c *conn) event(e *session.Event) bool {
	id := eventChannel(e.Body)
	if id <= ShellChannel {
		return false
	}
	c.mu.Lock()
	if r := c.repl; r != nil && id == r.id {
		c.replEvent(r, e.Body)
		c.mu.Unlock()
		return true
	}
	ch := c.chans[id]
	c.mu.Unlock()
	if ch == nil {
		return true // a channel given up on: its late output goes nowhere
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch b := e.Body.(type) {
	case *abi.ChannelData:
		if b.Fd == abi.FdStderr {
			ch.stderr.write(b.Data)
		} else {
			ch.stdout.write(b.Data)
		}
	case *abi.Exit:
		ch.code, ch.signal = b.Code, b.Signal
	case *abi.Error:
		ch.errMsg = b.Message
		ch.finish()
	case *abi.Opened:
		ch.opened = true
	case *abi.ChannelClosed:
		ch.finish()
	}
	return true
}

// Result is a finished (or given up) command.
type Result struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        *int   `json:"exitCode"`
	Signal          string `json:"signal,omitempty"`
	StdoutTruncated bool   `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool   `json:"stderrTruncated,omitempty"`
	StdoutBytes     int    `json:"stdoutBytes,omitempty"` // the whole stream's size when truncated
	StderrBytes     int    `json:"stderrBytes,omitempty"`
	TimedOut        bool   `json:"timedOut,omitempty"`
	Cancelled       bool   `json:"cancelled,omitempty"`
	// Killed says the command is known to have ended on the server after
	// a timeout or cancellation (it reported its exit or signal); false
	// when it may still run, and always there.
	Killed bool   `json:"killed"`
	Cwd    string `json:"cwd,omitempty"`
}

// ExecOptions run one command.
type ExecOptions struct {
	Command  string
	MaxBytes int           // per stream, default DefaultMaxBytes
	Timeout  time.Duration // default 60 s
	// Cwd is where a persistent session's shell starts (when it has to).
	Cwd string
	// noKill: a helper command (a killer) that is only closed when it
	// times out, never killed in turn.
	noKill bool
}

func newNonce() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// exec runs one command on a new exec channel of c.
func (c *conn) exec(ctx context.Context, o ExecOptions) (Result, error) {
	res, _, err := c.execStarted(ctx, o)
	return res, err
}

// execStarted is exec, also reporting whether the exec request may have
// reached the server, which may then have run the command even when its
// answer never came back (a lost answer: the connection or the channel
// ended first). Only a failure known to come before the request left
// reports false. The plugin sends the exec request only once the server
// has confirmed the channel this op opens, which it learns in a walk of
// the server's bytes after this op's: so the request never left when the
// op failed (refused by the plugin, or its bytes never written and never
// to be: the connection failed), or when the connection ended with no
// byte from the server walked since (session.InboundWalks). A warm
// connection that failed so ran nothing, and the call may go to a fresh
// one; any other failure must not be retried, or the command could run
// twice.
func (c *conn) execStarted(ctx context.Context, o ExecOptions) (Result, bool, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	ch := &channel{done: make(chan struct{})}
	ch.stdout.max, ch.stderr.max = o.MaxBytes, o.MaxBytes
	line := o.Command
	c.mu.Lock()
	id := c.nextCh
	c.nextCh++
	c.chans[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.chans, id)
		c.mu.Unlock()
	}()
	seq := c.s.LastSeq()
	walks := c.s.InboundWalks()
	req, _ := json.Marshal(map[string]any{"op": "exec", "ch": id, "command": line})
	if _, handled, err := c.s.Control(ctx, req, false); err != nil {
		// A write given up on (stalled, or cancelled) may still finish.
		mayLeave := handled && (errors.Is(err, session.ErrPeerStalled) || ctx.Err() != nil)
		return Result{}, mayLeave, &ConnectError{fmt.Errorf("exec: %v", err)}
	}
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	var res Result
	ended := make(chan struct{})
	watch, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go func() { // the connection's end also ends the command
		if _, err := c.s.AwaitEvent(watch, seq, abi.TypeClosed); watch.Err() == nil || err == nil {
			close(ended)
		}
	}()
	select {
	case <-ch.done:
	case <-ended:
		ch.mu.Lock()
		ch.finish()
		ch.mu.Unlock()
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.Cancelled = true
	}
	if res.TimedOut || res.Cancelled {
		res.Killed = c.kill(id, ch, o.noKill)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	started := ch.opened || ch.code != nil || ch.signal != "" || ch.stdout.total > 0 || ch.stderr.total > 0
	if !c.s.Alive() && ch.code == nil && ch.signal == "" && !res.TimedOut && !res.Cancelled {
		msg := ch.errMsg
		switch {
		case !started && c.s.InboundWalks() == walks:
			// Nothing came from the server after the op: it never
			// confirmed the channel, and the request never left.
			return Result{}, false, &ConnectError{errors.New("the connection ended before the server opened the command's channel")}
		case msg != "":
		case started:
			msg = "the connection ended before the command finished"
		default:
			msg = "the connection ended before the server answered the exec request: the command may or may not have run"
		}
		return Result{}, true, &ConnectError{errors.New(msg)}
	}
	if ch.errMsg != "" && ch.code == nil && ch.signal == "" && !res.TimedOut && !res.Cancelled {
		return Result{}, true, &ConnectError{fmt.Errorf("exec: %s", ch.errMsg)}
	}
	res.ExitCode, res.Signal = ch.code, ch.signal
	stderr := ch.stderr.head
	ch.output(&res, ch.stdout.head, stderr, o.MaxBytes)
	return res, true, nil
}

// output puts the command's streams into res, each bounded to max bytes
// with the whole stream's size when cut (stdout and stderr: the streams'
// heads with any marks removed). Caller holds ch.mu.
func (ch *channel) output(res *Result, stdout, stderr []byte, max int) {
	res.Stdout, res.StdoutTruncated = cut(stdout, max, ch.stdout.total)
	res.Stderr, res.StderrTruncated = cut(stderr, max, ch.stderr.total)
	if res.StdoutTruncated {
		res.StdoutBytes = ch.stdout.total
	}
	if res.StderrTruncated {
		res.StderrBytes = ch.stderr.total
	}
}

// cut bounds p to max bytes on a UTF-8 boundary.
func cut(p []byte, max, total int) (string, bool) {
	if len(p) <= max && total <= len(p) {
		return string(p), false
	}
	if len(p) > max {
		p = p[:max]
		for i := 0; i < 3 && len(p) > 0 && p[len(p)-1]&0xC0 == 0x80; i++ {
			p = p[:len(p)-1]
		}
		if len(p) > 0 && p[len(p)-1] >= 0xC0 {
			p = p[:len(p)-1]
		}
	}
	return string(p), true
}

// kill stops a command given up on, and reports whether it is known to
// have ended. First a TERM signal request: OpenSSH delivers it to the
// process it started (an ephemeral command sent as a single command line
// is that process, as sh execs it). A server may ignore the request
// (OpenSSH without privilege separation, as for a root login: "session
// signalling requires privilege separation"), so when the command has not
// ended soon after, a second channel stops the process groups of the
// other children of this connection's sshd (killer): sshd starts each
// command in a session and process group of its own, and an ephemeral
// connection runs one command at a time, so that is the command and what
// it started. Then the channel is closed; a connection whose command may
// still run is not used again (Pool.putBack).
func (c *conn) kill(id int, ch *channel, closeOnly bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	sig := func(name string) {
		req, _ := json.Marshal(map[string]any{"op": "signal", "ch": id, "signal": name})
		c.s.Control(ctx, req, false)
	}
	wait := func(d time.Duration) bool {
		select {
		case <-ch.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	if !closeOnly {
		sig("TERM")
		if !wait(500 * time.Millisecond) {
			c.exec(ctx, ExecOptions{Command: killer, Timeout: 5 * time.Second, MaxBytes: 1024, noKill: true})
			if !wait(time.Second) {
				sig("KILL")
				wait(500 * time.Millisecond)
			}
		}
	}
	req, _ := json.Marshal(map[string]any{"op": "close", "ch": id})
	c.s.Control(ctx, req, false)
	wait(time.Second)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.code != nil || ch.signal != ""
}

// killer is run on a second channel of a connection to stop the command
// of its other channel: TERM, a second later KILL, to the process group
// of every other child of the sshd process that started it (found in
// /proc, else with ps). It does nothing unless its parent is an sshd or
// dropbear process, so a server that runs commands some other way is left
// alone. POSIX sh, no single quotes (it is quoted once more for the
// user's login shell).
var killer = "exec /bin/sh -c " + shQuote(`pp=$PPID; me=$$
[ "$pp" -gt 1 ] 2>/dev/null || exit 0
comm=$(cat /proc/$pp/comm 2>/dev/null || ps -o comm= -p $pp 2>/dev/null)
case "$comm" in *sshd*|*dropbear*) ;; *) exit 0;; esac
kids() {
  if [ -d /proc/$me ]; then
    for d in /proc/[0-9]*; do
      { read -r l < "$d/stat"; } 2>/dev/null || continue
      set -- ${l##*) }
      [ "$2" = "$pp" ] && [ "${d#/proc/}" != "$me" ] && echo "${d#/proc/}"
    done
  else
    ps -A -o pid= -o ppid= | while read -r a b; do [ "$b" = "$pp" ] && [ "$a" != "$me" ] && echo "$a"; done
  fi
}
for s in TERM KILL; do
  k=$(kids)
  [ -n "$k" ] || break
  for p in $k; do kill -$s -$p 2>/dev/null || kill -$s $p 2>/dev/null; done
  [ $s = KILL ] || sleep 1
done
exit 0`)
