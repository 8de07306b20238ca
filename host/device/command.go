// Package device is the device layer above the session engine: running a
// command and collecting its output (run_command), moving a device
// between its modes (set_mode), answering a login dialogue (telnet_connect
// with a credential) and typing a credential's secret (send_secret). It
// sees a session only through the engine's exported API (host/session):
// marks, events, waits, byte-range reads, sends and control requests.
//
// run_command is exact on every prompt (SPEC §12): it waits for the
// session's prompt before it sends (ready.go), ends the command at the
// first of the shell integration's prompt, the prompt learned from the
// screen before the send, the dialect's prompt or a new prompt the program
// settled at (end.go), never hands one command's output to the next
// (runner below), and reports the exit status wherever the program tells
// it.
package device

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/host/session"
)

// RunOptions run one command and collect its output (run_command, SPEC
// DEV-2, DONE-1..5).
type RunOptions struct {
	Command  string
	Timeout  time.Duration
	MaxBytes int
	// Expect, if set, ends the command where it first matches the output
	// (for sessions without a dialect or shell integration).
	Expect *session.Pattern
	// Interrupt sends the session kind's interrupt (^C, Telnet IP, the SSH
	// signal) first and waits for a fresh prompt: a command still running
	// (an earlier run_command's that timed out, or a program started with
	// send_keys) ends there (DONE-3).
	Interrupt bool

	// shape: the learned prompt a command ends at when the dialect knows
	// none (learned.go).
	shape *promptShape
	// at: where the session stood when the command was sent (ready.go).
	at readiness
}

// RunResult is a command's output and how it ended.
type RunResult struct {
	Output   string `json:"output"`
	Prompt   string `json:"prompt,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Submode  string `json:"submode,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	Dialect  string `json:"dialect,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Error    string `json:"error,omitempty"`
	Pages    int    `json:"pages"`
	Question string `json:"question,omitempty"`
	Field    string `json:"field,omitempty"` // reason login: the field asked for (send_secret types it)
	// Reason is what ended the command: prompt | done | matched | question
	// | login | pager_limit | exit | timeout | human, or not_ready (no
	// prompt came before the timeout: nothing was sent).
	Reason string `json:"reason"`
	// PromptSource, with reason prompt, says whose prompt it was: shell
	// (the shell integration's mark), screen (the prompt on the screen
	// before the send, back again), dialect (the device dialect's), new (a
	// prompt the program settled at: another program's, or the same
	// program's changed), learned (the prompt learned at login).
	PromptSource string `json:"promptSource,omitempty"`
	// LastLine, with not_ready, is the cursor's line as the screen shows
	// it: what the session waits at instead of a prompt.
	LastLine  string `json:"lastLine,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Bytes     int    `json:"bytes,omitempty"` // the whole output's size when truncated
	TimeoutMs int64  `json:"timeoutMs"`
	// Previous is how an earlier command that had timed out ended, when
	// this call waited for its end before sending its own (DONE-3).
	Previous *Previous `json:"previous,omitempty"`
}

// Previous is the end of an earlier command that had timed out, awaited by
// the next call before it sent its own.
type Previous struct {
	Command   string `json:"command"`
	Output    string `json:"output"`
	Reason    string `json:"reason"`
	ExitCode  *int   `json:"exitCode,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ErrBusy: the session is still running an earlier command (one that
// timed out, or another call's) at the end of this call's timeout.
var ErrBusy = errors.New("busy")

// BusyError says which command holds the session.
type BusyError struct {
	Command string
	Since   time.Duration
	// Pending: the command timed out and runs on (else another call is
	// running it now).
	Pending bool
}

func (e *BusyError) Error() string {
	if e.Pending {
		return fmt.Sprintf("the earlier command %q (sent %s ago) has not finished: nothing was sent; call again with a longer timeoutMs to wait for its end (its output comes back as previous), or with interrupt: true to interrupt it",
			e.Command, e.Since.Round(time.Millisecond))
	}
	return fmt.Sprintf("another run_command is running %q on this session (for %s): nothing was sent; call again when it has returned",
		e.Command, e.Since.Round(time.Millisecond))
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// enter is what Enter sends (session.Enter: CR).
const enter = session.Enter

// runner is a session's run_command state: one command at a time, the
// command that timed out and runs on, and where the last one ended.
type runner struct {
	sem chan struct{} // held by the call that runs a command

	mu      sync.Mutex
	running string    // the command of the call holding sem
	since   time.Time // when that call started
	// pending: a command that timed out; its end is awaited by the next
	// call before that call sends anything (DONE-3).
	pending *command
	// ended: where the last command ended at a prompt (ready.go).
	ended *readiness
	// replies: the session's count of answers to terminal queries when
	// the last command was sent (session.Replies).
	replies uint64
}

type runnerKey struct{}

// runners guards making a session's runner once.
var runners sync.Mutex

func runnerOf(s *session.Session) *runner {
	runners.Lock()
	defer runners.Unlock()
	if r, ok := s.Value(runnerKey{}).(*runner); ok {
		return r
	}
	r := &runner{sem: make(chan struct{}, 1)}
	s.SetValue(runnerKey{}, r)
	return r
}

// acquire takes the session's command slot, waiting until deadline for a
// call running one.
func (r *runner) acquire(ctx context.Context, deadline time.Time, cmd string) error {
	select {
	case r.sem <- struct{}{}:
	default:
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case r.sem <- struct{}{}:
		case <-t.C:
			r.mu.Lock()
			defer r.mu.Unlock()
			return &BusyError{Command: r.running, Since: time.Since(r.since)}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	r.running, r.since = cmd, time.Now()
	r.mu.Unlock()
	return nil
}

func (r *runner) release() { <-r.sem }

// RunCommand sends a command line once the session is at a prompt, waits
// for the end of its output (a prompt, a question, a login field, the
// pager bound, an expect match, the session's end or the timeout), and
// returns the output alone: without the echoed command, the pager prompts
// (the dialect removes them) or the prompt after it, escape sequences
// removed.
//
// A command that timed out is the session's pending command: the next
// call waits for its end (within its own timeout) before it sends, and
// returns that end as Previous; at its own timeout it sends nothing and
// fails with a BusyError. Interrupt ends it at once.
func RunCommand(ctx context.Context, s *session.Session, o RunOptions) (RunResult, error) {
	if !s.Alive() {
		return RunResult{}, s.DisconnectedErr()
	}
	timeout := s.WaitCeiling(o.Timeout)
	deadline := time.Now().Add(timeout)
	r := runnerOf(s)
	if err := r.acquire(ctx, deadline, o.Command); err != nil {
		return RunResult{}, err
	}
	defer r.release()
	// A dialect detected on use joins now (a plain Telnet session's).
	if err := s.JoinDialect(ctx); err != nil {
		return RunResult{}, err
	}
	var since *session.Cursor
	if o.Interrupt {
		m := s.Mark()
		if err := interrupt(ctx, s); err != nil {
			return RunResult{}, err
		}
		since = &m
		r.ended = nil
	}
	var prev *Previous
	if c := r.pending; c != nil {
		c.o.Timeout = time.Until(deadline)
		res, err := c.finish(ctx)
		if err != nil {
			return RunResult{}, err
		}
		if !res.ended() {
			return RunResult{}, &BusyError{Command: c.o.Command, Since: time.Since(c.sent), Pending: true}
		}
		r.pending = nil
		prev = &Previous{Command: c.o.Command, Output: res.Output, Reason: res.Reason, ExitCode: res.ExitCode, Truncated: res.Truncated}
		if res.Reason == "exit" {
			// It ended the session: there is nowhere to send this one.
			return RunResult{Reason: "exit", ExitCode: res.ExitCode, TimeoutMs: timeout.Milliseconds(), Previous: prev}, nil
		}
		if res.Reason == "prompt" || res.Reason == "done" {
			r.ended = c.endedAt(res)
		}
	}
	at, stop, err := ready(ctx, s, r, deadline, since)
	if err != nil {
		return RunResult{}, err
	}
	if stop != nil {
		stop.TimeoutMs, stop.Previous = timeout.Milliseconds(), prev
		return *stop, nil
	}
	o.at = at
	if s.HasPlugin(session.DialectPlugin) {
		if at.source == srcScreen && learned(s) == "" {
			learn(s, at.prompt)
		}
		o.shape = prepareCommand(ctx, s, time.Until(deadline), o.Expect != nil)
	}
	o.Timeout = time.Until(deadline)
	mark := s.Mark()
	line := o.Command + enter
	replies := s.Replies()
	if replies != r.replies && !at.device {
		// Answers to terminal queries went out since the last command: one
		// its program did not read waits in the prompt line (DONE-5).
		at.dirty = true
	}
	r.replies = replies
	if at.dirty {
		// What the session typed into the prompt line on its own (a late
		// answer to a terminal query) is erased first (DONE-5).
		line = killLine + line
	}
	if err := s.Send(ctx, []byte(line)); err != nil {
		return RunResult{}, err
	}
	c := newCommand(s, mark, o)
	// Sent: until its end is seen it is the session's (a call cancelled
	// while it waits leaves it to the next call too).
	r.pending, r.ended = c, nil
	res, err := c.finish(ctx)
	if err != nil {
		return RunResult{}, err
	}
	if res.ended() {
		r.pending = nil
		if res.Reason == "prompt" || res.Reason == "done" {
			r.ended = c.endedAt(res)
		}
	}
	res.TimeoutMs, res.Previous = timeout.Milliseconds(), prev
	return res, nil
}

// interrupt interrupts what the session's program runs: SIGINT to a local
// terminal's foreground group; on Telnet and SSH, ^C typed into the remote
// terminal, whose line discipline signals its foreground job (Telnet's IAC
// IP is ignored by BusyBox's telnetd and most devices).
func interrupt(ctx context.Context, s *session.Session) error {
	if s.Kind == session.KindPTY {
		if err := s.Interrupt(ctx, "interrupt"); err != nil && !errors.Is(err, session.ErrUnsupported) {
			return err
		}
		return nil
	}
	return s.Send(ctx, []byte{0x03})
}

// killLine erases the line typed so far at a prompt: ^U (readline's
// unix-line-discard, the terminal's VKILL in canonical mode, and the same
// in zsh, libedit, linenoise and the vendors' CLIs).
const killLine = "\x15"

// ended says whether the command's end was seen (anything but a timeout,
// or a person holding the keyboard).
func (r RunResult) ended() bool {
	return r.Reason != "timeout" && r.Reason != "human"
}

// exitCodeOf is the exit status a shell would give a process that ended
// this way: its code, or 128 plus the number of the signal that killed it.
func exitCodeOf(ctx context.Context, s *session.Session, d time.Duration) *int {
	st, ok := s.AwaitExit(ctx, d)
	if !ok {
		return nil
	}
	n := st.Code
	if st.Signal != "" {
		sig := unix.SignalNum(st.Signal)
		if sig == 0 {
			return nil
		}
		n = 128 + int(sig)
	}
	return &n
}

// String describes a result for logs.
func (r RunResult) String() string {
	return fmt.Sprintf("%s, %d bytes, %d pages", r.Reason, len(r.Output), r.Pages)
}
