package mcp

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/session"
)

type connectIn struct {
	Host    string   `json:"host" jsonschema:"host name or IP address"`
	Port    int      `json:"port" jsonschema:"TCP port, usually 23"`
	Timeout int      `json:"timeout,omitempty" jsonschema:"connect timeout in ms (default 5000)"`
	Name    string   `json:"name,omitempty" jsonschema:"unique name, usable wherever a sessionId is"`
	Term    string   `json:"term,omitempty" jsonschema:"terminal type sent to the server (default xterm-256color)"`
	Cols    int      `json:"cols,omitempty" jsonschema:"window width (default 80)"`
	Rows    int      `json:"rows,omitempty" jsonschema:"window height (default 24)"`
	Plugins []string `json:"plugins,omitempty" jsonschema:"plugins to chain after telnet, e.g. a dialect"`
}

type sessionIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
}

type sendIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
	Command   string `json:"command" jsonschema:"text to send; CR LF is appended"`
	NoNewline bool   `json:"noNewline,omitempty" jsonschema:"send command without CR LF (e.g. a space for --More--)"`
	Signal    string `json:"signal,omitempty" jsonschema:"send a Telnet signal after the text: ip (interrupt), brk or ayt"`
}

// waitIn are the SES-7 wait options, shared by every reading tool.
type waitIn struct {
	Until     string `json:"until,omitempty" jsonschema:"return when new output matches this regex (escape sequences ignored)"`
	Prompt    bool   `json:"prompt,omitempty" jsonschema:"return when the server marks a prompt (Telnet GA/EOR)"`
	IdleMs    int    `json:"idleMs,omitempty" jsonschema:"return after this many ms without new output, once some arrived"`
	Exit      bool   `json:"exit,omitempty" jsonschema:"return when the session ends"`
	TimeoutMs int    `json:"timeoutMs,omitempty" jsonschema:"give up after this many ms (capped by the server)"`
}

type readIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
	WaitMs    int    `json:"waitMs,omitempty" jsonschema:"wait up to this many ms for output to arrive and settle"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf8 (default), base64, hex or binary (latin1)"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"return at most this many bytes (default 65536)"`
	waitIn
}

type readOut struct {
	Data      string     `json:"data"`
	Encoding  string     `json:"encoding"`
	Bytes     int        `json:"bytes"`
	Reason    string     `json:"reason"`
	TimeoutMs int64      `json:"timeoutMs,omitempty"`
	HasMore   bool       `json:"hasMore"`
	Evicted   uint64     `json:"evictedBytes,omitempty"`
	Events    []eventOut `json:"events,omitempty"`
	State     string     `json:"state"`
	Error     string     `json:"error,omitempty"`
}

type eventOut struct {
	Type   string         `json:"type"`
	Fields map[string]any `json:"fields,omitempty"`
}

type listEntry struct {
	SessionID   string    `json:"sessionId"`
	Name        string    `json:"name,omitempty"`
	Host        string    `json:"host"`
	Port        int       `json:"port"`
	ConnectedAt time.Time `json:"connectedAt"`
	State       string    `json:"state"`
	IsActive    bool      `json:"isActive"`
	UnreadBytes uint64    `json:"unreadBytes"`
}

// settle is how long output must be quiet before a plain waitMs read
// returns early: waitMs is a ceiling, not a sleep.
const settle = 250 * time.Millisecond

func (s *Server) addTelnetTools() {
	sdk.AddTool(s.mcp, &sdk.Tool{
		Name:        "telnet_connect",
		Description: "Open a Telnet session to host:port. Returns sessionId.",
		InputSchema: schema[connectIn](func(p map[string]*jsonschema.Schema) {
			p["port"].Minimum, p["port"].Maximum = ptr(1.0), ptr(65535.0)
			p["timeout"].Minimum, p["timeout"].Default = ptr(1.0), json.RawMessage("5000")
			p["cols"].Minimum, p["cols"].Maximum = ptr(1.0), ptr(1000.0)
			p["rows"].Minimum, p["rows"].Maximum = ptr(1.0), ptr(1000.0)
		}),
		Annotations: &sdk.ToolAnnotations{Title: "Telnet connect", DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
	}, s.telnetConnect)

	sdk.AddTool(s.mcp, &sdk.Tool{
		Name:        "telnet_send",
		Description: "Send a line (command + CR LF) to a Telnet session. Read the answer with telnet_read.",
		InputSchema: schema[sendIn](func(p map[string]*jsonschema.Schema) {
			p["signal"].Enum = []any{"ip", "brk", "ayt"}
		}),
		Annotations: &sdk.ToolAnnotations{Title: "Telnet send", DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, s.telnetSend)

	sdk.AddTool(s.mcp, &sdk.Tool{
		Name: "telnet_read",
		Description: "Return output received since the last read. Wait with until/prompt/idleMs/exit " +
			"(timeoutMs caps it); reason says why it returned.",
		InputSchema: schema[readIn](func(p map[string]*jsonschema.Schema) {
			p["encoding"].Enum = []any{"utf8", "base64", "hex", "binary"}
			for _, f := range []string{"waitMs", "idleMs", "timeoutMs"} {
				p[f].Minimum = ptr(0.0)
			}
			p["maxBytes"].Minimum = ptr(1.0)
		}),
		// Reading consumes buffered output, so it is not read-only.
		Annotations: &sdk.ToolAnnotations{Title: "Telnet read", DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, s.telnetRead)

	sdk.AddTool(s.mcp, &sdk.Tool{
		Name:        "telnet_disconnect",
		Description: "Close a Telnet session. Closing an unknown or closed session is not an error.",
		InputSchema: schema[sessionIn](nil),
		Annotations: &sdk.ToolAnnotations{Title: "Telnet disconnect", DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.telnetDisconnect)

	sdk.AddTool(s.mcp, &sdk.Tool{
		Name:        "telnet_list",
		Description: "List Telnet sessions.",
		InputSchema: &jsonschema.Schema{Type: "object"},
		Annotations: &sdk.ToolAnnotations{Title: "Telnet list", ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.telnetList)
}

// ok wraps v as a tool result: compact JSON in one text block.
func ok(v any) (*sdk.CallToolResult, any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
}

// invalid is an invalid-arguments error naming the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("invalid arguments: %s: %s", field, fmt.Sprintf(format, args...))
}

func (s *Server) telnetConnect(ctx context.Context, req *sdk.CallToolRequest, in connectIn) (*sdk.CallToolResult, any, error) {
	host := strings.TrimSpace(in.Host)
	switch {
	case host == "":
		return nil, nil, invalid("host", "must be a host name or IP address, got an empty string")
	case in.Port < 1 || in.Port > 65535:
		return nil, nil, invalid("port", "must be between 1 and 65535, got %d", in.Port)
	case in.Timeout < 0:
		return nil, nil, invalid("timeout", "must be a positive number of milliseconds, got %d", in.Timeout)
	case in.Cols < 0 || in.Cols > 1000 || in.Rows < 0 || in.Rows > 1000:
		return nil, nil, invalid("cols/rows", "must be between 1 and 1000, got %dx%d", in.Cols, in.Rows)
	}
	for i, p := range in.Plugins {
		if strings.TrimSpace(p) == "" {
			return nil, nil, invalid(fmt.Sprintf("plugins[%d]", i), "must be a plugin name, got an empty string")
		}
	}
	timeout := time.Duration(in.Timeout) * time.Millisecond
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	sess, err := s.deps.Sessions.OpenTelnet(ctx, s.deps.Attach, session.TelnetOptions{
		Host: host, Port: in.Port, Timeout: timeout, Name: in.Name, Owner: owner(req),
		Term: in.Term, Cols: in.Cols, Rows: in.Rows, Plugins: in.Plugins,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("telnet_connect to %s:%d failed: %w", host, in.Port, err)
	}
	out := map[string]any{"sessionId": sess.ID}
	if sess.Name != "" {
		out["name"] = sess.Name
	}
	return ok(out)
}

// lookup finds a telnet session or says clearly why not.
func (s *Server) lookup(ref string) (*session.Session, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, invalid("sessionId", "must be a session id or name, got an empty string")
	}
	sess, err := s.deps.Sessions.Get(ref)
	if err != nil {
		return nil, err
	}
	if sess.Kind != session.KindTelnet {
		return nil, fmt.Errorf("%w: %q is a %s session, not a telnet session", session.ErrNotFound, ref, sess.Kind)
	}
	return sess, nil
}

func (s *Server) telnetSend(ctx context.Context, _ *sdk.CallToolRequest, in sendIn) (*sdk.CallToolResult, any, error) {
	switch in.Signal {
	case "", "ip", "brk", "ayt":
	default:
		return nil, nil, invalid("signal", "must be ip, brk or ayt, got %q", in.Signal)
	}
	sess, err := s.lookup(in.SessionID)
	if err != nil {
		return nil, nil, err
	}
	p := []byte(in.Command)
	if !in.NoNewline {
		p = append(p, '\r', '\n')
	}
	sent := 0
	if len(p) > 0 {
		if err := sess.Send(ctx, p); err != nil {
			return nil, nil, err
		}
		sent = len(p)
	}
	if in.Signal != "" {
		op := map[string]string{"ip": "interrupt", "brk": "break", "ayt": "ayt"}[in.Signal]
		if err := sess.Interrupt(ctx, op); err != nil {
			return nil, nil, err
		}
	}
	return ok(map[string]any{"sessionId": sess.ID, "sentBytes": sent})
}

// waitSpec turns the wait options into a session.WaitSpec.
func waitSpec(w waitIn, waitMs int) (session.WaitSpec, error) {
	var spec session.WaitSpec
	switch {
	case w.IdleMs < 0:
		return spec, invalid("idleMs", "must be >= 0, got %d", w.IdleMs)
	case w.TimeoutMs < 0:
		return spec, invalid("timeoutMs", "must be >= 0, got %d", w.TimeoutMs)
	case waitMs < 0:
		return spec, invalid("waitMs", "must be >= 0, got %d", waitMs)
	}
	if w.Until != "" {
		re, err := session.CompilePattern(w.Until)
		if err != nil {
			return spec, invalid("until", "%v", err)
		}
		spec.Until = re
	}
	spec.Prompt, spec.Exit = w.Prompt, w.Exit
	spec.Idle = time.Duration(w.IdleMs) * time.Millisecond
	spec.Timeout = time.Duration(w.TimeoutMs) * time.Millisecond
	if waitMs > 0 {
		if spec.Timeout == 0 {
			spec.Timeout = time.Duration(waitMs) * time.Millisecond
		}
		if spec.Until == nil && !spec.Prompt && spec.Idle == 0 && !spec.Exit {
			spec.Idle = min(settle, spec.Timeout)
		}
	}
	return spec, nil
}

func (s *Server) telnetRead(ctx context.Context, req *sdk.CallToolRequest, in readIn) (*sdk.CallToolResult, any, error) {
	enc := in.Encoding
	if enc == "" {
		enc = "utf8"
	}
	switch enc {
	case "utf8", "base64", "hex", "binary":
	default:
		return nil, nil, invalid("encoding", "must be utf8, base64, hex or binary, got %q", in.Encoding)
	}
	if in.MaxBytes < 0 {
		return nil, nil, invalid("maxBytes", "must be >= 1, got %d", in.MaxBytes)
	}
	spec, err := waitSpec(in.waitIn, in.WaitMs)
	if err != nil {
		return nil, nil, err
	}
	sess, err := s.lookup(in.SessionID)
	if err != nil {
		return nil, nil, err
	}
	var stop func()
	if !spec.Empty() {
		stop = s.progress(ctx, req, sess, sess.WaitCeiling(spec.Timeout))
	}
	res, err := sess.Read(ctx, session.ReadOptions{Wait: spec, MaxBytes: in.MaxBytes, UTF8: enc == "utf8"})
	if stop != nil {
		stop()
	}
	if err != nil {
		return nil, nil, err
	}
	out := readOut{
		Data: encode(res.Data, enc), Encoding: enc, Bytes: len(res.Data), Reason: string(res.Reason),
		TimeoutMs: res.TimeoutMs, HasMore: res.HasMore, Evicted: res.Evicted, State: string(sess.State()),
	}
	for _, e := range res.Events {
		if e.Type == "option" && len(res.Events) > 8 {
			continue // negotiation chatter: keep results short
		}
		out.Events = append(out.Events, eventOut{Type: e.Type, Fields: e.Fields})
	}
	if !res.Alive {
		out.Error = sess.Info().Error
	}
	return ok(out)
}

func encode(p []byte, enc string) string {
	switch enc {
	case "base64":
		return base64.StdEncoding.EncodeToString(p)
	case "hex":
		return hex.EncodeToString(p)
	case "binary":
		r := make([]rune, len(p))
		for i, c := range p {
			r[i] = rune(c)
		}
		return string(r)
	}
	if !utf8.Valid(p) {
		return strings.ToValidUTF8(string(p), "\uFFFD")
	}
	return string(p)
}

func (s *Server) telnetDisconnect(_ context.Context, _ *sdk.CallToolRequest, in sessionIn) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(in.SessionID) == "" {
		return nil, nil, invalid("sessionId", "must be a session id or name, got an empty string")
	}
	if sess, err := s.deps.Sessions.Get(in.SessionID); err == nil && sess.Kind != session.KindTelnet {
		return nil, nil, fmt.Errorf("%w: %q is a %s session, not a telnet session", session.ErrNotFound, in.SessionID, sess.Kind)
	}
	removed := s.deps.Sessions.Remove(in.SessionID)
	return ok(map[string]any{"sessionId": in.SessionID, "disconnected": removed})
}

func (s *Server) telnetList(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
	list := []listEntry{}
	for _, sess := range s.deps.Sessions.List(session.KindTelnet) {
		in := sess.Info()
		list = append(list, listEntry{
			SessionID: in.ID, Name: in.Name, Host: in.Host, Port: in.Port, ConnectedAt: in.Created,
			State: string(in.State), IsActive: sess.Alive(), UnreadBytes: in.Unread,
		})
	}
	return ok(map[string]any{"sessions": list})
}
