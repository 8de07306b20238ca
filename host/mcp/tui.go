package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// The terminal-tester tools (seed 004, SPEC TUI-1): snake_case session_id,
// errors as SESSION_NOT_FOUND / SESSION_DEAD / INVALID_INPUT /
// RESOURCE_LIMIT / INTERNAL_ERROR. They act on a session of any kind: a
// Telnet BBS or a router's shell is viewed and keyed like a local TUI.

type tuiSessionIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
}

type viewIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name (any kind)"`
	Format    string `json:"format,omitempty" jsonschema:"plain (default), ansi (with SGR), raw (bytes), scrollback (history+screen), png or svg (a picture)"`
	Changes   bool   `json:"changes,omitempty" jsonschema:"only rows changed since your last view"`
	Offset    *int   `json:"offset,omitempty" jsonschema:"scrollback: first line, 0 = oldest (default: last page)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"scrollback: lines per page (default 100)"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"content bound in bytes (default 65536)"`
}

type resizeIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
	Cols      int    `json:"cols" jsonschema:"columns"`
	Rows      int    `json:"rows" jsonschema:"rows"`
}

// screenWaitIn are the waits of wait_for and send_keys (SPEC SES-7 plus
// a settled screen).
type screenWaitIn struct {
	Until        string `json:"until,omitempty" jsonschema:"regex on new output (or the screen: onScreen)"`
	OnScreen     bool   `json:"onScreen,omitempty" jsonschema:"match until on the screen"`
	Prompt       bool   `json:"prompt,omitempty" jsonschema:"a prompt (shell integration, Telnet GA/EOR)"`
	IdleMs       int    `json:"idleMs,omitempty" jsonschema:"quiet this many ms after output"`
	ScreenStable int    `json:"screenStable,omitempty" jsonschema:"no change for this many ms"`
	Exit         bool   `json:"exit,omitempty" jsonschema:"the session ends"`
	TimeoutMs    int    `json:"timeoutMs,omitempty" jsonschema:"give up after this many ms (max and default 300000)"`
}

type waitForIn struct {
	humanIn
	SessionID  string   `json:"session_id,omitempty" jsonschema:"session id or name"`
	SessionIDs []string `json:"session_ids,omitempty" jsonschema:"several sessions: the first to satisfy ends the wait"`
	screenWaitIn
	View string `json:"view,omitempty" jsonschema:"also return the ending session's screen: plain or ansi"`
}

// humanIn is wait_for's wait for a person's hand-back (the live view,
// view.go).
type humanIn struct {
	Human string `json:"human,omitempty" jsonschema:"released: the keyboard given back"`
}

// Bounds of the tester tools' arguments.
const (
	maxScreenDim   = 1000
	maxScrollPage  = 5000
	defScrollPage  = 100
	maxWaitTargets = 32
	maxContent     = 1 << 20
	defContent     = 64 << 10
)

func tuiRef(p schemaProps) { p["session_id"].MaxLength = ptr(maxRefLen) }

func screenWaitBounds(p schemaProps) {
	for _, f := range []string{"idleMs", "screenStable", "timeoutMs"} {
		p[f].Minimum, p[f].Maximum = ptr(0.0), ptr(float64(maxWaitMs))
	}
	p["until"].MaxLength = ptr(session.MaxPatternLen)
}

func (s *Server) addTUITools() {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	addTool(s, testerVoice, &sdk.Tool{
		Name:        "view_screen",
		Description: "The screen, cursor {row, col} (0-based), size, title and state.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, func(p schemaProps) {
		tuiRef(p)
		p["format"].Enum = []any{"plain", "ansi", "raw", "scrollback", "png", "svg"}
		p["offset"].Minimum, p["offset"].Maximum = ptr(0.0), ptr(1e9)
		p["limit"].Minimum, p["limit"].Maximum = ptr(1.0), ptr(float64(maxScrollPage))
		p["maxBytes"].Minimum, p["maxBytes"].Maximum = ptr(1.0), ptr(float64(maxContent))
	}, s.viewScreen)

	addTool(s, testerVoice, &sdk.Tool{
		Name:        "get_cursor_position",
		Description: "The cursor's {row, col} (0-based) and visibility.",
		Annotations: ro,
	}, tuiRef, s.getCursor)

	addTool(s, testerVoice, &sdk.Tool{
		Name:        "get_screen_size",
		Description: "The terminal's cols and rows.",
		Annotations: ro,
	}, tuiRef, s.getSize)

	addTool(s, testerVoice, &sdk.Tool{
		Name:        "resize_terminal",
		Description: "Resize the terminal (SIGWINCH; Telnet NAWS).",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(p schemaProps) {
		tuiRef(p)
		for _, f := range []string{"cols", "rows"} {
			p[f].Minimum, p[f].Maximum = ptr(1.0), ptr(float64(maxScreenDim))
		}
	}, s.resizeTerminal)

	addTool(s, testerVoice, &sdk.Tool{
		Name:        "restart_app",
		Description: "Stop the program and start it again in the same session.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
	}, tuiRef, s.restartApp)

	addTool(s, testerVoice, &sdk.Tool{
		Name:        "stop_app",
		Description: "End a session (SIGTERM, SIGKILL after 3 s); returns its exit status.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, tuiRef, s.stopApp)

	addTool(s, testerVoice, &sdk.Tool{
		Name:        "list_sessions",
		Description: "Your sessions with state and size.",
		Annotations: ro,
	}, nil, s.listSessions)

	addTool(s, testerVoice, &sdk.Tool{
		Name: "wait_for",
		Description: "Wait for a condition on sessions (or timeoutMs); returns which, why, " +
			"and a finished command's exit_code and duration_ms.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, func(p schemaProps) {
		p["session_id"].MaxLength = ptr(maxRefLen)
		p["session_ids"].MaxItems = ptr(maxWaitTargets)
		p["session_ids"].Items.MaxLength = ptr(maxRefLen)
		p["view"].Enum = []any{"plain", "ansi"}
		p["human"].Enum = []any{"released"}
		screenWaitBounds(p)
	}, s.waitFor)
}

// screenOut is what every screen-reading result carries.
type screenOut struct {
	SessionID     string   `json:"session_id,omitempty"`
	Format        string   `json:"format,omitempty"`
	Content       *string  `json:"content,omitempty"`
	Truncated     bool     `json:"truncated,omitempty"`
	Cursor        position `json:"cursor"`
	CursorVisible bool     `json:"cursor_visible"`
	Cols          int      `json:"cols"`
	Rows          int      `json:"rows"`
	Title         string   `json:"title,omitempty"`
	AltScreen     bool     `json:"alt_screen"`
	State         string   `json:"state,omitempty"`
	ExitCode      *int     `json:"exit_code,omitempty"`
	ExitSignal    string   `json:"exit_signal,omitempty"`
	// changes: the rows that differ from this client's previous view.
	Changes []rowChange `json:"changes,omitempty"`
	// scrollback paging.
	TotalLines *int `json:"total_lines,omitempty"`
	Offset     *int `json:"offset,omitempty"`
}

func (s *Server) fillState(o *screenOut, sess *session.Session) {
	o.State = string(sess.State())
	if ex, ok := sess.ExitStatus(); ok {
		code := ex.Code
		o.ExitCode, o.ExitSignal = &code, ex.Signal
	}
}

func fromReply(o *screenOut, rep screenReply) {
	o.Cursor, o.CursorVisible, o.Cols, o.Rows = rep.Cursor, rep.CursorVisible, rep.Cols, rep.Rows
	o.Title, o.AltScreen = rep.Title, rep.AltScreen
}

// clipContent bounds text to max bytes at a character boundary.
func clipContent(text string, max int) (string, bool) {
	if max <= 0 {
		max = defContent
	}
	if len(text) <= max {
		return text, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut], true
}

func (s *Server) viewScreen(ctx context.Context, req *sdk.CallToolRequest, in viewIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	format := in.Format
	if format == "" {
		format = "plain"
	}
	if format == "png" || format == "svg" {
		return s.viewPicture(ctx, sess, format, in)
	}
	out := screenOut{SessionID: sess.ID, Format: format}
	var text string
	switch format {
	case "raw":
		p, older := sess.Raw(min(in.MaxBytes, maxContent))
		text = encode(p, "utf8")
		out.Truncated = older
		if sess.HasScreen() {
			rep, err := s.queryScreen(ctx, sess, map[string]any{"op": "modes"})
			if err != nil {
				return nil, err
			}
			fromReply(&out, rep)
		}
	case "scrollback":
		limit := in.Limit
		if limit <= 0 {
			limit = defScrollPage
		}
		q := map[string]any{"op": "scrollback", "format": "plain", "limit": limit}
		if in.Offset != nil {
			q["offset"] = *in.Offset
		} else {
			// The last page: ask for the size first.
			rep, err := s.queryScreen(ctx, sess, map[string]any{"op": "scrollback", "limit": 1, "offset": 1 << 30})
			if err != nil {
				return nil, err
			}
			q["offset"] = max(0, rep.Total-limit)
		}
		rep, err := s.queryScreen(ctx, sess, q)
		if err != nil {
			return nil, err
		}
		fromReply(&out, rep)
		text = strings.Join(rep.Lines, "\n")
		out.TotalLines, out.Offset = &rep.Total, &rep.Offset
	default:
		rep, err := s.queryScreen(ctx, sess, map[string]any{"op": "screen", "format": format})
		if err != nil {
			return nil, err
		}
		fromReply(&out, rep)
		changed := sess.Reader(owner(req)).ViewChanges(format, rep.Lines)
		if in.Changes {
			out.Changes = make([]rowChange, len(changed))
			for i, row := range changed {
				out.Changes[i] = rowChange{Row: row, Text: rep.Lines[row]}
			}
		} else {
			text = screenText(rep.Lines)
		}
	}
	if !in.Changes || format == "raw" || format == "scrollback" {
		var cut bool
		text, cut = clipContent(text, min(in.MaxBytes, maxContent))
		out.Truncated = out.Truncated || cut
		out.Content = &text
	}
	s.fillState(&out, sess)
	return out, nil
}

func (s *Server) getCursor(ctx context.Context, req *sdk.CallToolRequest, in tuiSessionIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	rep, err := s.queryScreen(ctx, sess, map[string]any{"op": "modes"})
	if err != nil {
		return nil, err
	}
	return map[string]any{"session_id": sess.ID, "row": rep.Cursor.Row, "col": rep.Cursor.Col, "visible": rep.CursorVisible}, nil
}

func (s *Server) getSize(ctx context.Context, req *sdk.CallToolRequest, in tuiSessionIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	cols, rows := sess.Size()
	return map[string]any{"session_id": sess.ID, "cols": cols, "rows": rows}, nil
}

func (s *Server) resizeTerminal(ctx context.Context, req *sdk.CallToolRequest, in resizeIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	if err := sess.Resize(ctx, in.Cols, in.Rows); err != nil {
		return nil, err
	}
	return map[string]any{"session_id": sess.ID, "cols": in.Cols, "rows": in.Rows, "success": true}, nil
}

func (s *Server) restartApp(ctx context.Context, req *sdk.CallToolRequest, in tuiSessionIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	if err := s.checkRestart(sess, "session_id"); err != nil {
		return nil, err
	}
	ns, err := s.deps.Sessions.Restart(ctx, sess)
	if err != nil {
		return nil, err
	}
	if p := sess.Value(programKey{}); p != nil {
		ns.SetValue(programKey{}, p)
	}
	return map[string]any{"session_id": ns.ID, "success": true}, nil
}

func (s *Server) stopApp(ctx context.Context, req *sdk.CallToolRequest, in tuiSessionIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	s.deps.Sessions.Stop(ctx, sess.ID)
	out := map[string]any{"session_id": sess.ID, "success": true}
	if ex, ok := sess.AwaitExit(ctx, time.Second); ok {
		out["exit_code"] = ex.Code
		if ex.Signal != "" {
			out["exit_signal"] = ex.Signal
		}
	}
	return out, nil
}

type sessionEntry struct {
	SessionID  string    `json:"session_id"`
	Name       string    `json:"name,omitempty"`
	Kind       string    `json:"kind"`
	Command    string    `json:"command,omitempty"`
	Host       string    `json:"host,omitempty"`
	Port       int       `json:"port,omitempty"`
	State      string    `json:"state"`
	Cols       int       `json:"cols"`
	Rows       int       `json:"rows"`
	Created    time.Time `json:"created"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	ExitSignal string    `json:"exit_signal,omitempty"`
	Recording  string    `json:"recording,omitempty"`
}

func (s *Server) listSessions(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (any, error) {
	list := []sessionEntry{}
	for _, sess := range s.deps.Sessions.Owned(owner(req), "") {
		in := sess.Info()
		e := sessionEntry{SessionID: in.ID, Name: in.Name, Kind: string(in.Kind), Command: in.Command,
			Host: in.Host, Port: in.Port, State: string(in.State), Cols: in.Cols, Rows: in.Rows, Created: in.Created,
			Recording: in.Recording}
		if in.Exit != nil {
			code := in.Exit.Code
			e.ExitCode, e.ExitSignal = &code, in.Exit.Signal
		}
		list = append(list, e)
	}
	return map[string]any{"sessions": list}, nil
}

// waitOut says which session ended a wait and why.
type waitOut struct {
	SessionID  string     `json:"session_id"`
	Reason     string     `json:"reason"`
	ElapsedMs  int64      `json:"elapsed_ms"`
	TimeoutMs  int64      `json:"timeout_ms"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	DurationMs *int64     `json:"duration_ms,omitempty"`
	State      string     `json:"state"`
	Screen     *screenOut `json:"screen,omitempty"`
}

// screenWait turns the wait options into a session.WaitSpec for sess (an
// until on the screen becomes a Check that renders it).
func (s *Server) screenWait(ctx context.Context, sess *session.Session, w screenWaitIn) (session.WaitSpec, error) {
	spec, err := waitSpec(waitIn{Prompt: w.Prompt, IdleMs: w.IdleMs, Exit: w.Exit, TimeoutMs: w.TimeoutMs}, 0)
	if err != nil {
		return spec, err
	}
	spec.Stable = time.Duration(w.ScreenStable) * time.Millisecond
	if w.Until != "" {
		re, err := session.CompilePattern(w.Until)
		if err != nil {
			return spec, invalid("until", "%v", err)
		}
		if !w.OnScreen {
			spec.Until = re
		} else {
			if !sess.HasScreen() {
				return spec, invalid("onScreen", "session %s has no screen to match", sess.ID)
			}
			spec.Check = func() bool {
				rep, err := s.queryScreen(ctx, sess, map[string]any{"op": "screen", "format": "plain"})
				return err == nil && re.MatchString(matchText(rep))
			}
		}
	} else if w.OnScreen {
		return spec, invalid("onScreen", "needs until (the pattern to look for on the screen)")
	}
	return spec, nil
}

// awaitOne waits on one session for the caller's reader, from where its
// last wait (or keys) left off, so a wait sees what came after it — also
// what arrived between send_keys and wait_for — and describes the outcome.
func (s *Server) awaitOne(ctx context.Context, req *sdk.CallToolRequest, sess *session.Session, spec session.WaitSpec) (waitOut, error) {
	start := time.Now()
	cur, reason, used, err := sess.Reader(owner(req)).Wait(ctx, spec, true)
	if err != nil {
		return waitOut{}, err
	}
	out := waitOut{SessionID: sess.ID, Reason: string(reason), ElapsedMs: time.Since(start).Milliseconds(),
		TimeoutMs: used.Milliseconds(), State: string(sess.State())}
	evs := sess.Events(cur.Seq)
	for i := len(evs) - 1; i >= 0; i-- {
		p, ok := evs[i].Body.(*abi.Prompt)
		if !ok {
			continue
		}
		out.ExitCode, out.DurationMs = p.ExitCode, p.DurationMs
		break
	}
	if reason == session.ReasonExit || reason == session.ReasonEOF {
		if ex, ok := sess.AwaitExit(ctx, 500*time.Millisecond); ok && out.ExitCode == nil {
			code := ex.Code
			out.ExitCode = &code
		}
	}
	return out, nil
}

func (s *Server) waitFor(ctx context.Context, req *sdk.CallToolRequest, in waitForIn) (any, error) {
	refs := in.SessionIDs
	if in.SessionID != "" {
		refs = append([]string{in.SessionID}, refs...)
	}
	if len(refs) == 0 {
		return nil, invalid("session_id", "give session_id or session_ids")
	}
	type target struct {
		sess *session.Session
		spec session.WaitSpec
	}
	var targets []target
	seen := map[string]bool{}
	for i, ref := range refs {
		field := "session_id"
		if in.SessionID == "" || i > 0 {
			field = fmt.Sprintf("session_ids[%d]", i-btoi(in.SessionID != ""))
		}
		sess, err := s.lookup(req, field, ref)
		if err != nil {
			return nil, err
		}
		if seen[sess.ID] {
			continue
		}
		seen[sess.ID] = true
		spec, err := s.screenWait(ctx, sess, in.screenWaitIn)
		if err != nil {
			return nil, err
		}
		spec.Released = in.Human == "released"
		if spec.Empty() {
			return nil, invalid("until", "give at least one condition: until, prompt, idleMs, screenStable, exit or timeoutMs")
		}
		targets = append(targets, target{sess, spec})
	}
	stop := s.progress(ctx, req, targets[0].sess, targets[0].sess.WaitCeiling(targets[0].spec.Timeout))
	defer stop()
	var out waitOut
	if len(targets) == 1 {
		var err error
		if out, err = s.awaitOne(ctx, req, targets[0].sess, targets[0].spec); err != nil {
			return nil, err
		}
	} else {
		wctx, cancel := context.WithCancel(ctx)
		type result struct {
			out waitOut
			err error
		}
		results := make(chan result, len(targets))
		for _, t := range targets {
			go func() {
				o, err := s.awaitOne(wctx, req, t.sess, t.spec)
				results <- result{o, err}
			}()
		}
		// The first session to satisfy its condition wins; a timeout
		// counts only when every session timed out.
		var first *result
		for range targets {
			r := <-results
			if r.err == nil && r.out.Reason != string(session.ReasonTimeout) {
				first = &r
				break
			}
			if first == nil {
				first = &r
			}
		}
		cancel()
		if first.err != nil {
			return nil, first.err
		}
		out = first.out
	}
	if in.View != "" {
		sess, _ := s.deps.Sessions.Get(owner(req), out.SessionID)
		if sess != nil && sess.HasScreen() {
			v, err := s.viewScreen(ctx, req, viewIn{SessionID: sess.ID, Format: in.View})
			if err == nil {
				so := v.(screenOut)
				so.SessionID, so.State = "", ""
				out.Screen = &so
			}
		}
	}
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
