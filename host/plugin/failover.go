package plugin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// reattach moves a binding whose instance is gone (or that never had one)
// onto a live instance of the plugin's current version, restoring its
// newest checkpoint. It returns what became of the session, for the
// plugin_failed event. Called with b locked.
func (b *Binding) reattach(s wasmhost.Sink) (outcome string, err error) {
	b.leave(false)
	var (
		v     *version
		in    *instance
		fresh bool
	)
	for try := 0; ; try++ {
		v = b.p.current.Load()
		if v == nil {
			b.lost = fmt.Errorf("plugin %q is no longer loaded", b.p.name)
			return "", b.lost
		}
		in, fresh, err = v.acquire()
		if errors.Is(err, errRetired) && try < 3 {
			continue
		}
		if err != nil {
			return "", err
		}
		break
	}
	where := "another instance"
	if fresh {
		where = "a fresh instance"
	}
	ck := b.checkpoint()
	if err := in.lock(); err != nil {
		v.release(in)
		return "", err
	}
	err = b.openOn(v, in, ck, s)
	in.unlock()
	if err == nil || errors.As(err, new(*importError)) {
		b.resets.Add(1)
	}
	var ie *importError
	switch {
	case errors.As(err, &ie):
		return fmt.Sprintf("reopened without state on %s (%v)", where, ie), nil
	case err != nil:
		if b.inst != in {
			v.release(in) // the session never got onto in
		}
		return "", err
	case ck == nil || !v.hasState:
		return "reopened without state on " + where, nil
	}
	return "restored on " + where + " from checkpoint", nil
}

// shouldReport says whether a failure to reattach deserves an event: each
// distinct reason once (a back-off once per back-off step), until the
// session is attached again.
func (b *Binding) shouldReport(err error) bool {
	key := err.Error()
	var be *backoffError
	if errors.As(err, &be) {
		key = "backoff " + be.until.String()
		if b.lost == nil {
			b.lost = be.last
		}
	}
	if key == b.notified {
		return false
	}
	b.notified = key
	return true
}

func failOutcome(err error, what string) string {
	var be *backoffError
	if errors.As(err, &be) {
		return fmt.Sprintf("%s; %v; until then chunks pass through unprocessed", what, be)
	}
	return fmt.Sprintf("%s; no working instance: %v", what, err)
}

// failed reports a plugin failure to the session (a plugin_failed event)
// and to the log.
func (b *Binding) failed(s wasmhost.Sink, cause error, outcome string) {
	name, ver := b.Plugin()
	s.Emit(abi.Event, abi.PluginFailed{Plugin: name, Version: ver, Error: describe(cause), Outcome: outcome}.AppendEvent(nil))
	b.r.log.Warn("plugin failed", "plugin", name, "version", ver, "error", describe(cause), "outcome", outcome)
}

// describe says briefly what went wrong: the failed call and the last lines
// of the plugin's stderr (a Go panic message, for instance).
func describe(err error) string {
	if err == nil {
		return "instance unavailable"
	}
	var te *wasmhost.TrapError
	if !errors.As(err, &te) {
		return err.Error()
	}
	msg, _, _ := strings.Cut(te.Err.Error(), "\n") // drop wazero's wasm stack trace
	s := te.Op + " failed: " + msg
	if tail := stderrTail(te.Stderr, 3, 400); tail != "" {
		s += "; stderr: " + tail
	}
	return s
}

// stderrTail picks the telling part of a plugin's stderr: a Go panic or
// fatal error message if there is one, else the last n non-empty lines.
func stderrTail(s string, n, max int) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			lines = lines[i : i+1]
			break
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > max {
		out = out[:max] + "…"
	}
	return out
}
