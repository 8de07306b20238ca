package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/ansi"
	"github.com/termhost/termhost/host/session"
)

// The PTY tools (seed 003, SPEC PTY-1, PTY-2): camelCase processId. A
// process started here is a session like any other: the tester tools
// (view_screen, send_keys, wait_for…) take its processId as session_id.

type startPTYIn struct {
	Command string            `json:"command" jsonschema:"command line (shell syntax: /bin/sh -c)"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working directory"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"environment variables to set"`
	Cols    int               `json:"cols,omitempty" jsonschema:"columns (default 80)"`
	Rows    int               `json:"rows,omitempty" jsonschema:"rows (default 24)"`
	Dialect string            `json:"dialect,omitempty" jsonschema:"device dialect or auto"`
	Record  bool              `json:"record,omitempty"`
}

type processIn struct {
	ProcessID string `json:"processId" jsonschema:"process id from start_pty"`
}

type readPTYIn struct {
	ProcessID string `json:"processId" jsonschema:"process id from start_pty"`
	StripAnsi bool   `json:"stripAnsi,omitempty" jsonschema:"remove escape sequences (kept by default)"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"return at most this many bytes (default 65536)"`
	waitIn
}

// shellMeta are the characters that make a command line need a shell.
const shellMeta = "|&;<>()$`\\\"'*?[]#~=%{}\n\t"

// splitCommand turns start_pty's command line into a program and its
// arguments: plain words are run directly (so "bash" gets shell
// integration), anything a shell would interpret is run by /bin/sh -c.
func splitCommand(line string) (string, []string) {
	if strings.ContainsAny(line, shellMeta) {
		return "/bin/sh", []string{"-c", line}
	}
	f := strings.Fields(line)
	return f[0], f[1:]
}

func (s *Server) addPTYTools() {
	addTool(s, textVoice, &sdk.Tool{
		Name:        "start_pty",
		Description: "Start a command under a PTY. Returns processId (a session_id too).",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, processBounds, s.startPTY)

	addTool(s, textVoice, &sdk.Tool{
		Name:        "kill_pty",
		Description: "Stop a PTY process (SIGTERM, SIGKILL after 3 s) and forget it.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(p schemaProps) { p["processId"].MaxLength = ptr(maxRefLen) }, s.killPTY)

	if s.cfg.PTYResources {
		s.addPTYResources()
		addTool(s, textVoice, &sdk.Tool{
			Name:        "activate_pty_tools",
			Description: "For clients without resources: turn on the list_pty and read_pty tools.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
		}, nil, s.activatePTYTools)
	} else {
		s.addPTYReadTools()
	}
}

// addPTYReadTools registers list_pty and read_pty (once).
func (s *Server) addPTYReadTools() bool {
	s.ptyToolsOnce.Do(func() {
		addTool(s, textVoice, &sdk.Tool{
			Name:        "list_pty",
			Description: "PTY processes: this client's and those no connected client owns.",
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		}, nil, s.listPTY)
		addTool(s, textVoice, &sdk.Tool{
			Name:        "read_pty",
			Description: "A PTY process's output since the last read_pty (ANSI kept unless stripAnsi); waits like telnet_read.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
		}, func(p schemaProps) {
			p["processId"].MaxLength = ptr(maxRefLen)
			p["maxBytes"].Minimum, p["maxBytes"].Maximum = ptr(1.0), ptr(float64(maxReadSize))
			waitBounds(p)
		}, s.readPTY)
		s.ptyToolsOn = true
	})
	return s.ptyToolsOn
}

func (s *Server) startPTY(ctx context.Context, req *sdk.CallToolRequest, in startPTYIn) (any, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, invalid("command", "must be a command line, got an empty string")
	}
	prog, args := splitCommand(in.Command)
	sess, err := s.startProcess(ctx, req, "command", prog, args, in.Env, in.Cwd, in.Cols, in.Rows, "", in.Dialect, in.Record)
	if err != nil {
		return nil, err
	}
	s.ptyChanged(ctx)
	return withRecording(map[string]any{"processId": sess.ID}, sess), nil
}

// ptySession finds a PTY session for the seed-003 tools.
func (s *Server) ptySession(req *sdk.CallToolRequest, ref string) (*session.Session, error) {
	sess, err := s.lookup(req, "processId", ref)
	if err != nil {
		return nil, err
	}
	if sess.Kind != session.KindPTY {
		return nil, fmt.Errorf("%w: %s is a %s session, not a PTY process", session.ErrUnsupported, ref, sess.Kind)
	}
	return sess, nil
}

func (s *Server) killPTY(ctx context.Context, req *sdk.CallToolRequest, in processIn) (any, error) {
	if strings.TrimSpace(in.ProcessID) == "" {
		return nil, invalid("processId", "must be a process id, got an empty string")
	}
	sess, err := s.ptySession(req, in.ProcessID)
	if err != nil {
		return nil, err
	}
	s.deps.Sessions.Stop(ctx, sess.ID)
	out := map[string]any{"processId": sess.ID, "killed": true}
	if ex, ok := sess.AwaitExit(ctx, time.Second); ok {
		out["exitCode"] = ex.Code
		if ex.Signal != "" {
			out["signal"] = ex.Signal
		}
	}
	s.ptyChanged(ctx)
	return out, nil
}

type ptyEntry struct {
	ProcessID string    `json:"processId"`
	Command   string    `json:"command"`
	State     string    `json:"state"`
	Cols      int       `json:"cols"`
	Rows      int       `json:"rows"`
	Created   time.Time `json:"createdAt"`
	ExitCode  *int      `json:"exitCode,omitempty"`
	Signal    string    `json:"signal,omitempty"`
	Unread    uint64    `json:"unreadBytes"`
}

// ptyList is the PTY processes a client sees: its own (see owner.go).
func (s *Server) ptyList(owner string) []ptyEntry {
	list := []ptyEntry{}
	for _, sess := range s.deps.Sessions.Owned(owner, session.KindPTY) {
		in := sess.Info()
		e := ptyEntry{ProcessID: in.ID, Command: in.Command, State: string(in.State), Cols: in.Cols, Rows: in.Rows,
			Created: in.Created, Unread: in.Unread}
		if in.Exit != nil {
			code := in.Exit.Code
			e.ExitCode, e.Signal = &code, in.Exit.Signal
		}
		list = append(list, e)
	}
	return list
}

func (s *Server) listPTY(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (any, error) {
	return map[string]any{"processes": s.ptyList(owner(req))}, nil
}

func (s *Server) readPTY(ctx context.Context, req *sdk.CallToolRequest, in readPTYIn) (any, error) {
	spec, err := waitSpec(in.waitIn, 0)
	if err != nil {
		return nil, err
	}
	sess, err := s.ptySession(req, in.ProcessID)
	if err != nil {
		return nil, err
	}
	out, err := s.read(ctx, req, sess, spec, in.MaxBytes, "utf8")
	if err != nil {
		return nil, err
	}
	if in.StripAnsi {
		out.Data = string(ansi.Strip([]byte(out.Data)))
	}
	res := map[string]any{"processId": sess.ID, "output": out.Data, "bytes": out.Bytes, "reason": out.Reason,
		"hasMore": out.HasMore, "state": out.State}
	if out.Evicted > 0 {
		res["evictedBytes"] = out.Evicted
	}
	if ex, ok := sess.ExitStatus(); ok {
		res["exitCode"] = ex.Code
	}
	return res, nil
}

func (s *Server) activatePTYTools(context.Context, *sdk.CallToolRequest, struct{}) (any, error) {
	s.addPTYReadTools() // go-sdk tells clients: notifications/tools/list_changed
	return map[string]any{"activated": []string{"list_pty", "read_pty"}}, nil
}

// PTY resources (SPEC PTY-2).

const (
	uriStatus   = "pty://status"
	uriList     = "pty://sessions/list"
	uriOutputT  = "pty://session/{id}/output"
	uriStatusT  = "pty://session/{id}/status"
	outputLimit = 64 << 10
)

func (s *Server) addPTYResources() {
	s.mcp.AddResource(&sdk.Resource{URI: uriStatus, Name: "pty-status", MIMEType: "application/json",
		Description: "Server status: sessions and processes."}, s.readStatusResource)
	s.mcp.AddResource(&sdk.Resource{URI: uriList, Name: "pty-sessions", MIMEType: "application/json",
		Description: "PTY processes: this client's and those no connected client owns."}, s.readListResource)
	s.mcp.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: uriOutputT, Name: "pty-output", MIMEType: "text/plain",
		Description: "Recent output of a PTY process (last 64 KiB, ANSI kept)."}, s.readOutputResource)
	s.mcp.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: uriStatusT, Name: "pty-process-status", MIMEType: "application/json",
		Description: "State of a PTY process."}, s.readProcStatusResource)
}

func jsonContents(uri string, v any) (*sdk.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func reqOwner(ctx context.Context, req *sdk.ReadResourceRequest) string {
	return ownerOf(ctx, req.Session, req.Extra)
}

// readStatusResource counts the client's own sessions and processes.
func (s *Server) readStatusResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	all := s.deps.Sessions.Owned(reqOwner(ctx, req), "")
	procs, running := 0, 0
	for _, sess := range all {
		if sess.Kind == session.KindPTY {
			procs++
			if sess.Alive() {
				running++
			}
		}
	}
	return jsonContents(req.Params.URI, map[string]any{"sessions": len(all), "processes": procs, "running": running})
}

func (s *Server) readListResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return jsonContents(req.Params.URI, map[string]any{"processes": s.ptyList(reqOwner(ctx, req))})
}

// resourceSession finds the process of owner's that a
// pty://session/{id}/… URI names.
func (s *Server) resourceSession(owner, uri, suffix string) (*session.Session, error) {
	id, ok := strings.CutPrefix(uri, "pty://session/")
	if ok {
		id, ok = strings.CutSuffix(id, suffix)
	}
	if !ok || id == "" {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	sess, err := s.deps.Sessions.Get(owner, id)
	if err != nil || sess.Kind != session.KindPTY {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return sess, nil
}

func (s *Server) readOutputResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	sess, err := s.resourceSession(reqOwner(ctx, req), req.Params.URI, "/output")
	if err != nil {
		return nil, err
	}
	p, _ := sess.Raw(outputLimit)
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: encode(p, "utf8")}}}, nil
}

func (s *Server) readProcStatusResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	sess, err := s.resourceSession(reqOwner(ctx, req), req.Params.URI, "/status")
	if err != nil {
		return nil, err
	}
	in := sess.Info()
	out := map[string]any{"processId": in.ID, "command": in.Command, "state": in.State, "cols": in.Cols, "rows": in.Rows,
		"createdAt": in.Created, "lastActive": in.LastActive, "bufferedBytes": in.Buffered}
	if in.Exit != nil {
		out["exitCode"], out["signal"] = in.Exit.Code, in.Exit.Signal
	}
	return jsonContents(req.Params.URI, out)
}

// Subscriptions: a watcher per subscribed output/status URI notifies
// (throttled) when the process writes or changes state.

type subs struct {
	mu sync.Mutex
	m  map[string]*watch // by URI
}

type watch struct {
	subscribers map[*sdk.ServerSession]bool // as go-sdk keeps them: a set per URI
	cancel      context.CancelFunc
}

// notifyEvery throttles resource-updated notifications per URI.
const notifyEvery = 100 * time.Millisecond

func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	switch {
	case uri == uriStatus || uri == uriList:
		return nil // notified on start and kill
	case strings.HasSuffix(uri, "/output"), strings.HasSuffix(uri, "/status"):
		suffix := uri[strings.LastIndex(uri, "/"):]
		sess, err := s.resourceSession(ownerOf(ctx, req.Session, req.Extra), uri, suffix)
		if err != nil {
			return err
		}
		s.subs.mu.Lock()
		defer s.subs.mu.Unlock()
		if s.subs.m == nil {
			s.subs.m = make(map[string]*watch)
		}
		if w := s.subs.m[uri]; w != nil {
			w.subscribers[req.Session] = true
			return nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.subs.m[uri] = &watch{subscribers: map[*sdk.ServerSession]bool{req.Session: true}, cancel: cancel}
		go s.watchOutput(ctx, sess, uri)
		return nil
	}
	return sdk.ResourceNotFoundError(uri)
}

func (s *Server) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	s.dropSubscriberLocked(req.Params.URI, req.Session)
	return nil
}

// forgetSubscriber drops every subscription of an MCP session that ended
// without unsubscribing (go-sdk forgets it too).
func (s *Server) forgetSubscriber(ss *sdk.ServerSession) {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	for uri := range s.subs.m {
		s.dropSubscriberLocked(uri, ss)
	}
}

func (s *Server) dropSubscriberLocked(uri string, ss *sdk.ServerSession) {
	if w := s.subs.m[uri]; w != nil {
		delete(w.subscribers, ss)
		if len(w.subscribers) == 0 {
			w.cancel()
			delete(s.subs.m, uri)
		}
	}
}

// watchOutput notifies subscribers of uri whenever sess has new output
// (at most every notifyEvery) and when it ends.
func (s *Server) watchOutput(ctx context.Context, sess *session.Session, uri string) {
	w := sess.Watcher()
	for {
		_, reason, _, err := w.Wait(ctx, session.WaitSpec{Idle: time.Millisecond, Exit: true, Timeout: time.Hour}, false)
		if err != nil {
			return
		}
		if reason == session.ReasonTimeout {
			continue
		}
		s.mcp.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
		if reason == session.ReasonExit || reason == session.ReasonEOF {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyEvery):
		}
	}
}

// ptyChanged notifies subscribers of the status and list resources.
func (s *Server) ptyChanged(ctx context.Context) {
	if !s.cfg.PTYResources {
		return
	}
	for _, uri := range []string{uriStatus, uriList} {
		s.mcp.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
	}
}
