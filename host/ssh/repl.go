package ssh

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// repl is a persistent session's shell: one exec channel running /bin/sh
// that reads commands from its stdin, so a command costs no channel, no
// fork of sshd and no login shell (about a millisecond instead of three),
// and cd, exported variables and functions carry over from one command to
// the next. Each command is sent as a brace group with stdin from
// /dev/null (it cannot eat the commands after it), followed by two marks
// the host removes: on stdout its exit status and the directory it ended
// in, on stderr the end of its error output. A command that exits the
// shell, a syntax error (sh exits on one) or a timeout ends the repl; the
// next command starts a new one in the last known directory.
type repl struct {
	id    int
	pid   int    // the shell's pid: its process group, for kills
	nonce string // the start mark's
	cur   *channel
	dead  bool
	// pre holds stderr until the start mark (pid) has been read.
	pre []byte
}

// replEvent handles an event of the repl's channel. Caller holds c.mu.
func (c *conn) replEvent(r *repl, body abi.Payload) {
	cur := r.cur
	switch b := body.(type) {
	case *abi.ChannelData:
		p := b.Data
		if b.Fd == abi.FdStderr && r.pid == 0 {
			r.pre = append(r.pre, p...)
			pre := "\x1e" + r.nonce + ":pid:"
			i := bytes.Index(r.pre, []byte(pre))
			if i < 0 {
				if len(r.pre) > 4096 {
					r.pre = r.pre[:0]
				}
				return
			}
			j := bytes.IndexByte(r.pre[i+len(pre):], 0x1e)
			if j < 0 {
				return
			}
			r.pid, _ = strconv.Atoi(string(r.pre[i+len(pre) : i+len(pre)+j]))
			p = r.pre[i+len(pre)+j+1:]
			r.pre = nil
		}
		if cur == nil || len(p) == 0 {
			return
		}
		cur.mu.Lock()
		if b.Fd == abi.FdStderr {
			cur.stderr.write(p)
		} else {
			cur.stdout.write(p)
		}
		cur.checkMarks()
		cur.mu.Unlock()
	case *abi.Exit:
		r.dead = true
		if cur != nil {
			cur.mu.Lock()
			cur.code, cur.signal = b.Code, b.Signal
			cur.mu.Unlock()
		}
	case *abi.Error, *abi.ChannelClosed:
		r.dead = true
		if cur != nil {
			cur.mu.Lock()
			if e, ok := b.(*abi.Error); ok {
				cur.errMsg = e.Message
			}
			cur.finish()
			cur.mu.Unlock()
		}
	}
}

// checkMarks finishes a repl command once both end marks arrived: on
// stdout \x1e<nonce>:end:<status>:<dir>\x1e, on stderr \x1e<nonce>:end\x1e.
// Caller holds ch.mu.
func (ch *channel) checkMarks() {
	if ch.closed {
		return
	}
	if !ch.outEnd {
		mark := []byte("\x1e" + ch.nonce + ":end:")
		if i := bytes.LastIndex(ch.stdout.tail, mark); i >= 0 {
			rest := ch.stdout.tail[i+len(mark):]
			if j := bytes.IndexByte(rest, 0x1e); j >= 0 {
				status, dir, _ := strings.Cut(string(rest[:j]), ":")
				if n, err := strconv.Atoi(status); err == nil {
					ch.code = &n
				}
				ch.cwd = dir
				ch.outEnd = true
				ch.stdout.total -= len(mark) + j + 1
			}
		}
	}
	if !ch.errEnd {
		mark := []byte("\x1e" + ch.nonce + ":end\x1e")
		if bytes.Contains(ch.stderr.tail, mark) {
			ch.errEnd = true
			ch.stderr.total -= len(mark)
		}
	}
	if ch.outEnd && ch.errEnd {
		ch.finish()
	}
}

// replStart opens the repl channel in dir. Caller holds no lock.
func (c *conn) replStart(ctx context.Context, dir string) (*repl, error) {
	r := &repl{nonce: newNonce()}
	c.mu.Lock()
	r.id = c.nextCh
	c.nextCh++
	c.repl = r
	c.mu.Unlock()
	var init strings.Builder
	fmt.Fprintf(&init, "printf '\\036%s:pid:%%s\\036' \"$$\" >&2\n", r.nonce)
	if dir != "" {
		fmt.Fprintf(&init, "cd %s 2>/dev/null\n", shQuote(dir))
	}
	line := "exec /bin/sh -c " + shQuote(init.String()+"exec /bin/sh")
	req, _ := json.Marshal(map[string]any{"op": "exec", "ch": r.id, "command": line})
	if _, _, err := c.s.Control(ctx, req, false); err != nil {
		c.mu.Lock()
		r.dead = true
		c.mu.Unlock()
		return nil, &ConnectError{fmt.Errorf("start the session's shell: %v", err)}
	}
	return r, nil
}

// replExec runs one command in the persistent session's shell.
func (c *conn) replExec(ctx context.Context, o ExecOptions) (Result, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	c.mu.Lock()
	r := c.repl
	c.mu.Unlock()
	if r == nil || r.dead {
		var err error
		if r, err = c.replStart(ctx, o.Cwd); err != nil {
			return Result{}, err
		}
	}
	ch := &channel{done: make(chan struct{}), nonce: newNonce()}
	ch.stdout.max, ch.stderr.max = o.MaxBytes, o.MaxBytes
	c.mu.Lock()
	if r.dead { // it ended between the check and now
		c.mu.Unlock()
		return Result{}, &ConnectError{errors.New("the session's shell ended")}
	}
	r.cur = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if r.cur == ch {
			r.cur = nil
		}
		c.mu.Unlock()
	}()
	script := fmt.Sprintf("{ %s\n} </dev/null; printf '\\036%s:end:%%s:%%s\\036' \"$?\" \"$PWD\"; printf '\\036%s:end\\036' >&2\n",
		o.Command, ch.nonce, ch.nonce)
	req, _ := json.Marshal(map[string]any{"op": "stdin", "ch": r.id, "data": base64.StdEncoding.EncodeToString([]byte(script))})
	if _, _, err := c.s.Control(ctx, req, false); err != nil {
		return Result{}, &ConnectError{fmt.Errorf("send the command: %v", err)}
	}
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	var res Result
	select {
	case <-ch.done:
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.Cancelled = true
	}
	if res.TimedOut || res.Cancelled {
		res.Killed = c.killRepl(r, ch)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.outEnd && ch.code == nil && ch.signal == "" && !res.TimedOut && !res.Cancelled {
		msg := ch.errMsg
		if msg == "" {
			msg = "the session's shell ended before the command finished"
		}
		return Result{}, &ConnectError{errors.New(msg)}
	}
	res.ExitCode, res.Signal, res.Cwd = ch.code, ch.signal, ch.cwd
	stdout, stderr := ch.stdout.head, ch.stderr.head
	if i := bytes.LastIndex(stdout, []byte("\x1e"+ch.nonce+":end:")); i >= 0 {
		stdout = stdout[:i]
	}
	if i := bytes.LastIndex(stderr, []byte("\x1e"+ch.nonce+":end\x1e")); i >= 0 {
		stderr = stderr[:i]
	}
	ch.output(&res, stdout, stderr, o.MaxBytes)
	return res, nil
}

// killRepl stops a command given up on: its shell's whole process group
// (the shell too: the next command starts a new one), from a second
// channel, then the repl channel is closed. It reports whether the shell
// is known to have ended (its channel reported an exit or a signal).
func (c *conn) killRepl(r *repl, ch *channel) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	c.mu.Lock()
	pid := r.pid
	r.dead = true
	c.mu.Unlock()
	if pid > 1 {
		killer := fmt.Sprintf("kill -TERM -%d 2>/dev/null; sleep 1; kill -KILL -%d 2>/dev/null; exit 0", pid, pid)
		c.exec(ctx, ExecOptions{Command: killer, Timeout: 4 * time.Second, MaxBytes: 1024, noKill: true})
	}
	select {
	case <-ch.done:
	case <-time.After(500 * time.Millisecond):
		// Not ended (its pid never arrived, or it left the group): stop
		// every other child of this connection's sshd.
		c.exec(ctx, ExecOptions{Command: killer, Timeout: 5 * time.Second, MaxBytes: 1024, noKill: true})
	}
	ended := func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return ch.code != nil || ch.signal != ""
	}
	// The shell's exit arrives before its channel closes.
	select {
	case <-ch.done:
	case <-time.After(time.Second):
	}
	req, _ := json.Marshal(map[string]any{"op": "close", "ch": r.id})
	c.s.Control(ctx, req, false)
	select {
	case <-ch.done:
	case <-time.After(time.Second):
	}
	return ended()
}
