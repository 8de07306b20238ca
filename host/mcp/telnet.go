package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/device"
	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/host/telnet"
)

type connectIn struct {
	Host    string   `json:"host,omitempty" jsonschema:"host name or IP address"`
	Port    int      `json:"port,omitempty" jsonschema:"TCP port, usually 23"`
	Timeout int      `json:"timeout,omitempty" jsonschema:"connect timeout, ms"`
	Name    string   `json:"name,omitempty" jsonschema:"unique name"`
	Term    string   `json:"term,omitempty" jsonschema:"TTYPE (default xterm-256color)"`
	Cols    int      `json:"cols,omitempty" jsonschema:"window width (default 80)"`
	Rows    int      `json:"rows,omitempty" jsonschema:"window height (default 24)"`
	Plugins []string `json:"plugins,omitempty" jsonschema:"plugins after telnet"`
	// CredentialID logs in with a credential (SPEC DEV-3): host and port
	// default to the credential's, the login dialogue is answered by the
	// host.
	Dialect      string `json:"dialect,omitempty" jsonschema:"device dialect; default: detected, pagers answered by run_command; auto: always; none"`
	CredentialID string `json:"credentialId,omitempty" jsonschema:"log in with it; host, port default to it"`
	Record       bool   `json:"record,omitempty"`
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

type readIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id or name"`
	WaitMs    int    `json:"waitMs,omitempty" jsonschema:"wait up to this many ms for output to settle"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf8 (default), base64, hex or binary (latin1)"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"return at most this many bytes (default 65536)"`
	waitIn
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

// Bounds of the Telnet tools' arguments.
const (
	maxConnectMs  = 120000
	maxCommandLen = 16 << 20
	maxHostLen    = 255
	maxTermLen    = 64
	maxPlugins    = 8
	maxRefLen     = 128 // a session id or name given to a tool
	maxPluginName = 64
)

// sessionRef bounds the session-reference field of a tool's schema.
func sessionRef(p schemaProps) { p["sessionId"].MaxLength = ptr(maxRefLen) }

// telnetSendSchema and telnetReadSchema are the bounds of telnet_send's
// and telnet_read's arguments (the fast argument path's tests use them).
func telnetSendSchema(p schemaProps) {
	sessionRef(p)
	p["command"].MaxLength = ptr(maxCommandLen)
	p["signal"].Enum = []any{"ip", "brk", "ayt"}
}

func telnetReadSchema(p schemaProps) {
	sessionRef(p)
	p["encoding"].Enum = encodings
	p["waitMs"].Minimum, p["waitMs"].Maximum = ptr(0.0), ptr(float64(maxWaitMs))
	p["maxBytes"].Minimum, p["maxBytes"].Maximum = ptr(1.0), ptr(float64(maxReadSize))
	waitBounds(p)
}

func (s *Server) addTelnetTools() {
	addTool(s, textVoice, &sdk.Tool{
		Name:        "telnet_connect",
		Description: "Open a Telnet session to host:port. Returns sessionId; with credentialId the host logs in.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
	}, func(p schemaProps) {
		p["host"].MaxLength = ptr(maxHostLen)
		p["port"].Minimum, p["port"].Maximum = ptr(1.0), ptr(65535.0)
		p["timeout"].Minimum, p["timeout"].Maximum, p["timeout"].Default = ptr(1.0), ptr(float64(maxConnectMs)), json.RawMessage("5000")
		p["name"].MaxLength = ptr(session.MaxNameLen)
		p["term"].MaxLength = ptr(maxTermLen)
		p["cols"].Minimum, p["cols"].Maximum = ptr(1.0), ptr(1000.0)
		p["rows"].Minimum, p["rows"].Maximum = ptr(1.0), ptr(1000.0)
		p["plugins"].MaxItems = ptr(maxPlugins)
		p["plugins"].Items.MaxLength = ptr(maxPluginName)
		p["credentialId"].MaxLength = ptr(maxCredIDLen)
		p["dialect"].MaxLength = ptr(maxPluginName)
	}, s.telnetConnect)

	addTool(s, textVoice, &sdk.Tool{
		Name:        "telnet_send",
		Description: "Send a line (command + CR LF) to a Telnet session. Read the answer with telnet_read.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, telnetSendSchema, s.telnetSend)

	addTool(s, textVoice, &sdk.Tool{
		Name: "telnet_read",
		Description: "Output since the last read; waits with until/prompt/idleMs/exit up to timeoutMs; " +
			"reason says why it returned.",
		// Reading consumes buffered output, so it is not read-only.
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, telnetReadSchema, s.telnetRead)

	addTool(s, textVoice, &sdk.Tool{
		Name:        "telnet_disconnect",
		Description: "Close a Telnet session (an unknown or closed one is no error).",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, sessionRef, s.telnetDisconnect)

	addTool(s, textVoice, &sdk.Tool{
		Name:        "telnet_list",
		Description: "List Telnet sessions.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, nil, s.telnetList)
}

type schemaProps = map[string]*jsonschema.Schema

func (s *Server) telnetConnect(ctx context.Context, req *sdk.CallToolRequest, in connectIn) (any, error) {
	var cred *secrets.Credential
	if in.CredentialID != "" {
		c, err := s.credential(in.CredentialID)
		if err != nil {
			return nil, err
		}
		// Before anything is dialled: an SSH credential is never typed
		// into Telnet, unless its "kinds" says it is for both.
		if err := c.CheckKind(secrets.KindTelnet); err != nil {
			return nil, invalid("credentialId", "%v", err)
		}
		cred = &c
		if strings.TrimSpace(in.Host) == "" {
			in.Host = c.Host
		}
		if in.Port == 0 {
			in.Port = c.PortOr(23)
		}
	}
	host := link.UnbracketHost(strings.TrimSpace(in.Host))
	if host == "" {
		return nil, invalid("host", "required (a host name or IP address, or a credentialId that gives one)")
	}
	if in.Port == 0 {
		return nil, invalid("port", "required (an integer between 1 and 65535, usually 23)")
	}
	if in.Name != "" {
		if err := session.ValidName(in.Name); err != nil {
			return nil, invalid("name", "%v", strings.TrimPrefix(err.Error(), session.ErrInvalidName.Error()+": "))
		}
	}
	for i, p := range in.Plugins {
		if strings.TrimSpace(p) == "" {
			return nil, invalid(fmt.Sprintf("plugins[%d]", i), "must be a plugin name, got an empty string")
		}
	}
	timeout := time.Duration(in.Timeout) * time.Millisecond
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	addr := ""
	if cred != nil {
		// Before anything is dialed: the credential goes only where it
		// names (TRUST-1).
		a, err := credentialAddr(ctx, *cred, host, in.Port, timeout)
		if err != nil {
			return nil, err
		}
		addr = a
	}
	// A session opened with a credential is a device's: its dialect is
	// detected unless named. A plain connection's dialect is detected on
	// use: the plugin joins at the first run_command or set_mode and
	// detects from what the session already shows, so plain telnet_send
	// and telnet_read pay nothing for it (it is one more plugin call per
	// chunk: BENCHMARKS.md, "Devices with no options").
	dialect := s.deviceDialect(in.Dialect)
	if in.CredentialID == "" && dialect == session.DetectDialect && strings.TrimSpace(in.Dialect) == "" {
		dialect = session.DetectOnUse
	}
	if d := s.deps.Sessions.Config().Plugins.Dialect; d != "" && in.Dialect == "" && slices.Contains(in.Plugins, d) {
		dialect = session.AutoDialect // asked for by name in the chain: as before, every pager answered
	}
	sess, err := telnet.Open(ctx, s.deps.Sessions, s.deps.Attach, telnet.Options{
		Host: host, Port: in.Port, Timeout: timeout, Name: in.Name, Owner: owner(req), Addr: addr,
		Term: in.Term, Cols: in.Cols, Rows: in.Rows, Plugins: in.Plugins, Dialect: dialect, Record: in.Record,
		Stages: s.ruleStages(session.KindTelnet),
	})
	if err != nil {
		return nil, fmt.Errorf("telnet_connect to %s failed: %w", link.JoinHostPort(host, in.Port), err)
	}
	out := map[string]any{"sessionId": sess.ID}
	if sess.Name != "" {
		out["name"] = sess.Name
	}
	withRecording(out, sess)
	if cred != nil {
		pass, _ := cred.Secret("password")
		defer clear(pass)
		ask := s.loginAsk(req, sess, cred.ID)
		prompt, err := device.LoginAsking(ctx, sess, cred.Username, pass, loginTimeout, secretGate(*cred, sess), ask)
		switch {
		case errors.Is(err, device.ErrNoUsername):
			err = s.noLoginField("username", cred.ID)
		case errors.Is(err, device.ErrNoPassword):
			err = s.noLoginField("password", cred.ID)
		}
		if err != nil {
			s.deps.Sessions.Remove(sess.ID)
			return nil, fmt.Errorf("telnet_connect to %s: %w", link.JoinHostPort(host, in.Port), err)
		}
		out["loggedIn"], out["prompt"] = true, prompt
		// The dialect detected from the banner and the prompt ("" when no
		// table knows the device: commands then end at the prompt above).
		if info, err := device.Info(ctx, sess); err == nil {
			out["dialect"] = info.Dialect
		}
	}
	return out, nil
}

// credentialAddr checks a telnet_connect target against a credential
// before anything is dialed: a host name its entries name, or an address
// its networks hold, is dialed as asked (""); a name that only its
// networks could allow is resolved here and one of its addresses they
// hold is returned, to be dialed instead (so the address checked is the
// address connected to). Anything else is refused, naming the
// credential's own target.
func credentialAddr(ctx context.Context, cred secrets.Credential, host string, port int, timeout time.Duration) (string, error) {
	d := secrets.Dest{Host: host, Port: port}
	if cred.Allows(d, secrets.TelnetPort) {
		return "", nil
	}
	refuse := func(why string) error {
		return invalid("credentialId", "credential %q is used only for %s (its host and port, and its \"hosts\"); %s is not one of them%s, so nothing was sent",
			cred.ID, cred.TargetsString(secrets.TelnetPort), link.JoinHostPort(host, port), why)
	}
	if _, err := netip.ParseAddr(host); err == nil || !cred.HasNetworks() {
		return "", refuse("")
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	if err != nil {
		return "", refuse(fmt.Sprintf(" (its addresses could not be checked: %v)", err))
	}
	for _, a := range addrs {
		if cred.AllowsAddr(a, port, secrets.TelnetPort) {
			return a.Unmap().String(), nil
		}
	}
	return "", refuse(fmt.Sprintf(" (it resolves to %s)", joinAddrs(addrs)))
}

func joinAddrs(as []netip.Addr) string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return strings.Join(out, ", ")
}

// loginTimeout bounds a login dialogue answered by the host.
const loginTimeout = 15 * time.Second

func (s *Server) telnetSend(ctx context.Context, req *sdk.CallToolRequest, in sendIn) (any, error) {
	sess, err := s.lookup(req, "sessionId", in.SessionID)
	if err != nil {
		return nil, err
	}
	p := make([]byte, 0, len(in.Command)+2) // one allocation with its CR LF
	p = append(p, in.Command...)
	if !in.NoNewline {
		p = append(p, '\r', '\n')
	}
	if len(p) > 0 {
		if err := sess.Send(ctx, p); err != nil {
			return nil, rulesArg("command", err)
		}
	}
	if in.Signal != "" {
		op := map[string]string{"ip": "interrupt", "brk": "break", "ayt": "ayt"}[in.Signal]
		if err := sess.Interrupt(ctx, op); err != nil {
			return nil, err
		}
	}
	return sendOut{SentBytes: len(p), SessionID: sess.ID}, nil
}

// sendOut is what telnet_send returns.
type sendOut struct {
	SentBytes int    `json:"sentBytes"`
	SessionID string `json:"sessionId"`
}

func (o sendOut) appendJSON(b []byte) ([]byte, bool) {
	b = strconv.AppendInt(append(b, `{"sentBytes":`...), int64(o.SentBytes), 10)
	return append(appendJSONString(append(b, `,"sessionId":`...), o.SessionID), '}'), true
}

func (s *Server) telnetRead(ctx context.Context, req *sdk.CallToolRequest, in readIn) (any, error) {
	spec, err := waitSpec(in.waitIn, in.WaitMs)
	if err != nil {
		return nil, err
	}
	sess, err := s.lookup(req, "sessionId", in.SessionID)
	if err != nil {
		return nil, err
	}
	return s.read(ctx, req, sess, spec, in.MaxBytes, in.Encoding)
}

func (s *Server) telnetDisconnect(_ context.Context, req *sdk.CallToolRequest, in sessionIn) (any, error) {
	if strings.TrimSpace(in.SessionID) == "" {
		return nil, invalid("sessionId", "must be a session id or name, got an empty string")
	}
	removed := false
	if sess, err := s.deps.Sessions.Get(owner(req), in.SessionID); err == nil {
		removed = s.deps.Sessions.Remove(sess.ID)
	}
	return map[string]any{"sessionId": in.SessionID, "disconnected": removed}, nil
}

func (s *Server) telnetList(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (any, error) {
	list := []listEntry{}
	for _, sess := range s.deps.Sessions.Owned(owner(req), session.KindTelnet) {
		in := sess.Info()
		list = append(list, listEntry{
			SessionID: in.ID, Name: in.Name, Host: in.Host, Port: in.Port, ConnectedAt: in.Created,
			State: string(in.State), IsActive: sess.Alive(), UnreadBytes: in.Unread,
		})
	}
	return map[string]any{"sessions": list}, nil
}
