package abi

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// EventType is an event's name on the wire: its "type" member.
type EventType string

// The events of the typed contract (ABI 1.1, sdk/ABI.md "Events"). Every
// first-party plugin emits only these; the host decodes each into its
// struct below. The wire names are those of ABI 1.0.
const (
	TypePrompt        EventType = "prompt"
	TypeDone          EventType = "done"
	TypeCommand       EventType = "command"
	TypePager         EventType = "pager"
	TypePagerLimit    EventType = "pager_limit"
	TypeQuestion      EventType = "question"
	TypeLogin         EventType = "login"
	TypeError         EventType = "error"
	TypeDialect       EventType = "dialect"
	TypeTitle         EventType = "title"
	TypeOption        EventType = "option"
	TypeConnected     EventType = "connected"
	TypeBanner        EventType = "banner"
	TypeClosed        EventType = "closed"
	TypeOpened        EventType = "opened"
	TypeExit          EventType = "exit"
	TypeChannelClosed EventType = "channel_closed"
	// Made by the host, never by a plugin.
	TypePluginFailed  EventType = "plugin_failed"
	TypeChainOverflow EventType = "chain_overflow"
	// TypeData is ABI 1.0's exec output event ({"ch","stream","data":
	// base64}); since 1.1 such output is a Channel emission. Decode still
	// reads it, as a *ChannelData.
	TypeData EventType = "data"
)

// Sources: which plugin's view a prompt, done or command event is.
const (
	SourceTelnet  = "telnet"  // a Telnet GA or EOR mark
	SourceShell   = "shell"   // OSC 133 shell integration marks
	SourceDialect = "dialect" // a device dialect's parsed prompt
)

// Payload is one event's typed body. AppendEvent appends the whole wire
// object, {"type":"…",…}, to b; it allocates nothing beyond b's growth, so
// a plugin emitting many events builds them in one reused buffer.
type Payload interface {
	EventType() EventType
	AppendEvent(b []byte) []byte
}

// Prompt (ABI 1.0; source 1.1): the peer is showing a prompt, at this
// place in the output. Source says whose: SourceTelnet (Mark is GA or
// EOR), SourceShell (ExitCode and DurationMs of the command before it,
// when known) or SourceDialect (Dialect, Hostname, Mode, Submode, Prompt,
// and User and Cwd where the prompt shows them).
type Prompt struct {
	Source     string
	Mark       string
	Dialect    string
	Hostname   string
	Mode       string
	Submode    string
	Prompt     string
	User       string
	Cwd        string
	ExitCode   *int
	DurationMs *int64
}

func (Prompt) EventType() EventType { return TypePrompt }

func (e Prompt) AppendEvent(b []byte) []byte {
	b = head(b, TypePrompt)
	b = optStr(b, "source", e.Source)
	b = optStr(b, "mark", e.Mark)
	if e.Source == SourceDialect {
		// A dialect's prompt always says all it parsed, empty or not.
		b = str(b, "dialect", e.Dialect)
		b = str(b, "hostname", e.Hostname)
		b = str(b, "mode", e.Mode)
		b = str(b, "submode", e.Submode)
		b = str(b, "prompt", e.Prompt)
	} else {
		b = optStr(b, "dialect", e.Dialect)
		b = optStr(b, "hostname", e.Hostname)
		b = optStr(b, "mode", e.Mode)
		b = optStr(b, "submode", e.Submode)
		b = optStr(b, "prompt", e.Prompt)
	}
	b = optStr(b, "user", e.User)
	b = optStr(b, "cwd", e.Cwd)
	if e.ExitCode != nil {
		b = num(b, "exitCode", int64(*e.ExitCode))
	}
	if e.DurationMs != nil {
		b = num(b, "durationMs", *e.DurationMs)
	}
	return append(b, '}')
}

// Done (ABI 1.0; source 1.1): the output of the command before ends here.
// A shell's done carries the command's exit code when it reported one; a
// dialect emits it after the prompt that follows a command.
type Done struct {
	Source   string
	ExitCode *int
}

func (Done) EventType() EventType { return TypeDone }

func (e Done) AppendEvent(b []byte) []byte {
	b = head(b, TypeDone)
	b = optStr(b, "source", e.Source)
	if e.ExitCode != nil {
		b = num(b, "exitCode", int64(*e.ExitCode))
	}
	return append(b, '}')
}

// Command (ABI 1.0; source 1.1): from SourceShell, a command starts
// running here (its output follows); from SourceTelnet, the peer sent the
// Telnet command Code (NOP, DM, BRK, AYT …, or an invalid one), wire
// member "command".
type Command struct {
	Source string
	Code   int
}

func (Command) EventType() EventType { return TypeCommand }

func (e Command) AppendEvent(b []byte) []byte {
	b = head(b, TypeCommand)
	b = optStr(b, "source", e.Source)
	if e.Source == SourceTelnet {
		b = num(b, "command", int64(e.Code))
	}
	return append(b, '}')
}

// Pager (ABI 1.0): a pager prompt (Text), removed from the output. Pages
// counts the pages of the current command. Answered: the plugin answered
// it (on the wire, "answered":false appears only when it did not).
type Pager struct {
	Text     string
	Pages    int
	Answered bool
}

func (Pager) EventType() EventType { return TypePager }

func (e Pager) AppendEvent(b []byte) []byte {
	b = head(b, TypePager)
	b = str(b, "text", e.Text)
	b = num(b, "pages", int64(e.Pages))
	if !e.Answered {
		b = boolean(b, "answered", false)
	}
	return append(b, '}')
}

// PagerLimit (ABI 1.0): the bound of pager answers was reached; Quit: the
// plugin sent the pager's quit key, so the device returns to its prompt.
type PagerLimit struct {
	Pages int
	Quit  bool
}

func (PagerLimit) EventType() EventType { return TypePagerLimit }

func (e PagerLimit) AppendEvent(b []byte) []byte {
	b = head(b, TypePagerLimit)
	b = num(b, "pages", int64(e.Pages))
	if e.Quit {
		b = boolean(b, "quit", true)
	}
	return append(b, '}')
}

// Question (ABI 1.0): the device asks something (Text) that is never
// answered automatically.
type Question struct{ Text string }

func (Question) EventType() EventType { return TypeQuestion }

func (e Question) AppendEvent(b []byte) []byte {
	return append(str(head(b, TypeQuestion), "text", e.Text), '}')
}

// Login (ABI 1.0): the device asks for a login Field: "username",
// "password" or "enable".
type Login struct{ Field string }

func (Login) EventType() EventType { return TypeLogin }

func (e Login) AppendEvent(b []byte) []byte {
	return append(str(head(b, TypeLogin), "field", e.Field), '}')
}

// Error (ABI 1.0). From a dialect: the device printed an error line
// (Text). From a protocol: the connection (or channel Ch) failed, with
// Message and Stage ("handshake", "auth", "connection", "channel").
type Error struct {
	Text    string
	Message string
	Stage   string
	Ch      int
}

func (Error) EventType() EventType { return TypeError }

func (e Error) AppendEvent(b []byte) []byte {
	b = head(b, TypeError)
	if e.Ch != 0 {
		b = num(b, "ch", int64(e.Ch))
	}
	b = optStr(b, "text", e.Text)
	b = optStr(b, "message", e.Message)
	b = optStr(b, "stage", e.Stage)
	return append(b, '}')
}

// Dialect (ABI 1.0): the dialect plugin detected (or was told) the
// device's dialect Name; Confident: by a banner or a command's answer,
// not only a prompt's shape.
type Dialect struct {
	Name      string
	Detected  bool
	Confident bool
}

func (Dialect) EventType() EventType { return TypeDialect }

func (e Dialect) AppendEvent(b []byte) []byte {
	b = str(head(b, TypeDialect), "name", e.Name)
	b = boolean(b, "detected", e.Detected)
	b = boolean(b, "confident", e.Confident)
	return append(b, '}')
}

// Title (ABI 1.0): the screen's window title changed.
type Title struct{ Title string }

func (Title) EventType() EventType { return TypeTitle }

func (e Title) AppendEvent(b []byte) []byte {
	return append(str(head(b, TypeTitle), "title", e.Title), '}')
}

// Option (ABI 1.0): a Telnet option (its name) was enabled or disabled on
// Side "local" or "remote".
type Option struct {
	Option  string
	Side    string
	Enabled bool
}

func (Option) EventType() EventType { return TypeOption }

func (e Option) AppendEvent(b []byte) []byte {
	b = str(head(b, TypeOption), "option", e.Option)
	b = str(b, "side", e.Side)
	b = boolean(b, "enabled", e.Enabled)
	return append(b, '}')
}

// Connected (ABI 1.0): an SSH connection finished key exchange and
// authentication.
type Connected struct {
	ServerVersion string
	Cipher        string
}

func (Connected) EventType() EventType { return TypeConnected }

func (e Connected) AppendEvent(b []byte) []byte {
	b = str(head(b, TypeConnected), "serverVersion", e.ServerVersion)
	return append(str(b, "cipher", e.Cipher), '}')
}

// Banner (ABI 1.0): the SSH server's pre-authentication banner.
type Banner struct{ Message string }

func (Banner) EventType() EventType { return TypeBanner }

func (e Banner) AppendEvent(b []byte) []byte {
	return append(str(head(b, TypeBanner), "message", e.Message), '}')
}

// Closed (ABI 1.0): the connection ended (after an Error when it failed);
// the session ends with Reason.
type Closed struct{ Reason string }

func (Closed) EventType() EventType { return TypeClosed }

func (e Closed) AppendEvent(b []byte) []byte {
	return append(str(head(b, TypeClosed), "reason", e.Reason), '}')
}

// Opened (ABI 1.0): channel Ch is open and its command (or shell) runs.
type Opened struct{ Ch int }

func (Opened) EventType() EventType { return TypeOpened }

func (e Opened) AppendEvent(b []byte) []byte {
	return append(num(head(b, TypeOpened), "ch", int64(e.Ch)), '}')
}

// Exit (ABI 1.0): channel Ch's command ended with Code, or by Signal.
type Exit struct {
	Ch     int
	Code   *int
	Signal string
}

func (Exit) EventType() EventType { return TypeExit }

func (e Exit) AppendEvent(b []byte) []byte {
	b = num(head(b, TypeExit), "ch", int64(e.Ch))
	if e.Code != nil {
		b = num(b, "code", int64(*e.Code))
	}
	b = optStr(b, "signal", e.Signal)
	return append(b, '}')
}

// ChannelClosed (ABI 1.0): channel Ch is closed; always its last event.
type ChannelClosed struct{ Ch int }

func (ChannelClosed) EventType() EventType { return TypeChannelClosed }

func (e ChannelClosed) AppendEvent(b []byte) []byte {
	return append(num(head(b, TypeChannelClosed), "ch", int64(e.Ch)), '}')
}

// PluginFailed (host, ABI 1.0): a plugin of the session failed; Outcome
// says what became of the session.
type PluginFailed struct {
	Plugin  string
	Version string
	Error   string
	Outcome string
}

func (PluginFailed) EventType() EventType { return TypePluginFailed }

func (e PluginFailed) AppendEvent(b []byte) []byte {
	b = str(head(b, TypePluginFailed), "plugin", e.Plugin)
	b = str(b, "version", e.Version)
	b = str(b, "error", e.Error)
	return append(str(b, "outcome", e.Outcome), '}')
}

// ChainOverflow (host, ABI 1.0): a chunk made the chain exceed its bounds
// and the rest of it was dropped.
type ChainOverflow struct{ Error string }

func (ChainOverflow) EventType() EventType { return TypeChainOverflow }

func (e ChainOverflow) AppendEvent(b []byte) []byte {
	return append(str(head(b, TypeChainOverflow), "error", e.Error), '}')
}

// ChannelData is one Channel emission (ABI 1.1): Data of channel Ch's
// output stream Fd (FdStdout, FdStderr). It is not an event on the wire;
// Decode returns it for an ABI 1.0 "data" event.
type ChannelData struct {
	Ch   uint32
	Fd   uint8
	Data []byte
}

// Output streams of a channel.
const (
	FdStdout uint8 = 1
	FdStderr uint8 = 2
)

// ChannelHeader is the size of a Channel emission's header.
const ChannelHeader = 5

func (ChannelData) EventType() EventType { return TypeData }

// AppendEvent appends the ABI 1.0 form ({"type":"data",…} with the bytes
// in base64): only for tests of old hosts' input.
func (e ChannelData) AppendEvent(b []byte) []byte {
	b = num(head(b, TypeData), "ch", int64(e.Ch))
	stream := "stdout"
	if e.Fd == FdStderr {
		stream = "stderr"
	}
	b = str(b, "stream", stream)
	b = append(b, `,"data":"`...)
	b = base64.StdEncoding.AppendEncode(b, e.Data)
	return append(b, `"}`...)
}

// AppendChannel appends a Channel emission: the header (channel id, u32
// little-endian; fd, one byte) and the bytes.
func AppendChannel(b []byte, ch uint32, fd uint8, p []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, ch)
	return append(append(b, fd), p...)
}

// DecodeChannel reads a Channel emission; Data is a view of p.
func DecodeChannel(p []byte) (ChannelData, error) {
	if len(p) < ChannelHeader {
		return ChannelData{}, fmt.Errorf("channel emission of %d bytes: shorter than its %d-byte header (channel u32, fd u8)", len(p), ChannelHeader)
	}
	return ChannelData{Ch: binary.LittleEndian.Uint32(p), Fd: p[4], Data: p[ChannelHeader:]}, nil
}

// Unknown is an event of a type this package does not define (a
// third-party plugin's own): its members as decoded JSON.
type Unknown struct {
	Type   string
	Fields map[string]any
}

func (e Unknown) EventType() EventType { return EventType(e.Type) }

func (e Unknown) AppendEvent(b []byte) []byte {
	b = head(b, EventType(e.Type))
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		if k != "type" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(e.Fields[k])
		if err != nil {
			continue
		}
		b = appendString(append(b, ','), k)
		b = append(append(b, ':'), v...)
	}
	return append(b, '}')
}

// FieldsJSON is an event's members other than "type", as one JSON object,
// or nil when it has none.
func FieldsJSON(p Payload) []byte {
	b := p.AppendEvent(nil)
	n := len(head(nil, p.EventType()))
	if len(b) <= n+1 {
		return nil
	}
	b[n] = '{' // the comma before the first member
	return b[n:]
}

// wire is every member an event of this package may carry: an event is
// decoded in one pass, then its type picks the members that are its own.
type wire struct {
	Type       string `json:"type"`
	Source     string `json:"source"`
	Mark       string `json:"mark"`
	Dialect    string `json:"dialect"`
	Hostname   string `json:"hostname"`
	Mode       string `json:"mode"`
	Submode    string `json:"submode"`
	Prompt     string `json:"prompt"`
	User       string `json:"user"`
	Cwd        string `json:"cwd"`
	ExitCode   *int   `json:"exitCode"`
	DurationMs *int64 `json:"durationMs"`
	Command    *int   `json:"command"`
	Text       string `json:"text"`
	Pages      int    `json:"pages"`
	Answered   *bool  `json:"answered"`
	Quit       bool   `json:"quit"`
	Field      string `json:"field"`
	Message    string `json:"message"`
	Stage      string `json:"stage"`
	Ch         int    `json:"ch"`
	Name       string `json:"name"`
	Detected   bool   `json:"detected"`
	Confident  bool   `json:"confident"`
	Title      string `json:"title"`
	Option     string `json:"option"`
	Side       string `json:"side"`
	Enabled    bool   `json:"enabled"`
	Server     string `json:"serverVersion"`
	Cipher     string `json:"cipher"`
	Reason     string `json:"reason"`
	Code       *int   `json:"code"`
	Signal     string `json:"signal"`
	Stream     string `json:"stream"`
	Data       string `json:"data"`
	Plugin     string `json:"plugin"`
	Version    string `json:"version"`
	Error      string `json:"error"`
	Outcome    string `json:"outcome"`
}

// Decode reads one event emission into its typed body: a pointer to one
// of this package's event structs, or *Unknown for a type it does not
// define. It reads ABI 1.0 events as well (the wire names are the same):
// a 1.0 event names no source, so a prompt's is its dialect's when it
// names a dialect and Telnet's when it carries a mark, and a command's is
// Telnet's when it carries a command code, else the shell's; a 1.0 "data"
// event becomes a *ChannelData.
func Decode(p []byte) (Payload, error) {
	var w wire
	err := json.Unmarshal(p, &w)
	if te, ok := err.(*json.UnmarshalTypeError); ok && !slices.Contains(membersOf(EventType(w.Type)), te.Field) {
		// A member this type does not have, in a shape another type's
		// member of that name has not: ignored, as any unknown member.
		// (json reports the first such error and decodes the rest.)
		err = nil
	}
	// A type of a plugin's own (a "data" event without a stream is not
	// ABI 1.0's) may use any member in any shape.
	if !known(EventType(w.Type)) || w.Type == string(TypeData) && w.Stream == "" {
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			return nil, fmt.Errorf("an event must be one JSON object: %w", err)
		}
		typ, _ := m["type"].(string)
		if typ == "" {
			return nil, errors.New(`an event must have a "type" string member`)
		}
		delete(m, "type")
		return &Unknown{Type: typ, Fields: m}, nil
	}
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s event: member %q: expected %s, got a JSON %s", w.Type, te.Field, te.Type, te.Value)
		}
		return nil, fmt.Errorf("%s event: %w", w.Type, err)
	}
	switch EventType(w.Type) {
	case TypePrompt:
		src := w.Source
		if src == "" {
			switch {
			case w.Dialect != "":
				src = SourceDialect
			case w.Mark != "":
				src = SourceTelnet
			}
		}
		return &Prompt{Source: src, Mark: w.Mark, Dialect: w.Dialect, Hostname: w.Hostname, Mode: w.Mode,
			Submode: w.Submode, Prompt: w.Prompt, User: w.User, Cwd: w.Cwd, ExitCode: w.ExitCode, DurationMs: w.DurationMs}, nil
	case TypeDone:
		return &Done{Source: w.Source, ExitCode: w.ExitCode}, nil
	case TypeCommand:
		e := &Command{Source: w.Source}
		if w.Command != nil {
			e.Code = *w.Command
		}
		if e.Source == "" {
			e.Source = SourceShell
			if w.Command != nil {
				e.Source = SourceTelnet
			}
		}
		return e, nil
	case TypePager:
		return &Pager{Text: w.Text, Pages: w.Pages, Answered: w.Answered == nil || *w.Answered}, nil
	case TypePagerLimit:
		return &PagerLimit{Pages: w.Pages, Quit: w.Quit}, nil
	case TypeQuestion:
		return &Question{Text: w.Text}, nil
	case TypeLogin:
		return &Login{Field: w.Field}, nil
	case TypeError:
		return &Error{Text: w.Text, Message: w.Message, Stage: w.Stage, Ch: w.Ch}, nil
	case TypeDialect:
		return &Dialect{Name: w.Name, Detected: w.Detected, Confident: w.Confident}, nil
	case TypeTitle:
		return &Title{Title: w.Title}, nil
	case TypeOption:
		return &Option{Option: w.Option, Side: w.Side, Enabled: w.Enabled}, nil
	case TypeConnected:
		return &Connected{ServerVersion: w.Server, Cipher: w.Cipher}, nil
	case TypeBanner:
		return &Banner{Message: w.Message}, nil
	case TypeClosed:
		return &Closed{Reason: w.Reason}, nil
	case TypeOpened:
		return &Opened{Ch: w.Ch}, nil
	case TypeExit:
		return &Exit{Ch: w.Ch, Code: w.Code, Signal: w.Signal}, nil
	case TypeChannelClosed:
		return &ChannelClosed{Ch: w.Ch}, nil
	case TypePluginFailed:
		return &PluginFailed{Plugin: w.Plugin, Version: w.Version, Error: w.Error, Outcome: w.Outcome}, nil
	case TypeChainOverflow:
		return &ChainOverflow{Error: w.Error}, nil
	case TypeData:
		if w.Ch < 0 || int64(w.Ch) > 0xffffffff {
			return nil, fmt.Errorf(`data event: member "ch": expected a channel number 0-4294967295, got %d`, w.Ch)
		}
		d, err := base64.StdEncoding.DecodeString(w.Data)
		if err != nil {
			return nil, fmt.Errorf(`data event: member "data": expected base64: %w`, err)
		}
		fd := FdStdout
		if w.Stream == "stderr" {
			fd = FdStderr
		}
		return &ChannelData{Ch: uint32(w.Ch), Fd: fd, Data: d}, nil
	}
	return nil, fmt.Errorf("%s event: not decoded", w.Type) // not reached: every known type is a case
}

// membersOf is a type's wire members (nil: not a type of this package).
// A function, not a map: a plugin that never decodes links none of it.
func membersOf(t EventType) []string {
	switch t {
	case TypePrompt:
		return []string{"source", "mark", "dialect", "hostname", "mode", "submode", "prompt", "user", "cwd", "exitCode", "durationMs"}
	case TypeDone:
		return []string{"source", "exitCode"}
	case TypeCommand:
		return []string{"source", "command"}
	case TypePager:
		return []string{"text", "pages", "answered"}
	case TypePagerLimit:
		return []string{"pages", "quit"}
	case TypeQuestion:
		return []string{"text"}
	case TypeLogin:
		return []string{"field"}
	case TypeError:
		return []string{"text", "message", "stage", "ch"}
	case TypeDialect:
		return []string{"name", "detected", "confident"}
	case TypeTitle:
		return []string{"title"}
	case TypeOption:
		return []string{"option", "side", "enabled"}
	case TypeConnected:
		return []string{"serverVersion", "cipher"}
	case TypeBanner:
		return []string{"message"}
	case TypeClosed:
		return []string{"reason"}
	case TypeOpened:
		return []string{"ch"}
	case TypeExit:
		return []string{"ch", "code", "signal"}
	case TypeChannelClosed:
		return []string{"ch"}
	case TypePluginFailed:
		return []string{"plugin", "version", "error", "outcome"}
	case TypeChainOverflow:
		return []string{"error"}
	case TypeData:
		return []string{"ch", "stream", "data"}
	}
	return nil
}

func known(t EventType) bool {
	switch t {
	case TypePrompt, TypeDone, TypeCommand, TypePager, TypePagerLimit, TypeQuestion, TypeLogin, TypeError,
		TypeDialect, TypeTitle, TypeOption, TypeConnected, TypeBanner, TypeClosed, TypeOpened, TypeExit,
		TypeChannelClosed, TypePluginFailed, TypeChainOverflow, TypeData:
		return true
	}
	return false
}

// JSON writing without reflection or allocation.

func head(b []byte, t EventType) []byte {
	return appendString(append(b, `{"type":`...), string(t))
}

func str(b []byte, k, v string) []byte {
	b = append(append(append(b, `,"`...), k...), `":`...)
	return appendString(b, v)
}

func optStr(b []byte, k, v string) []byte {
	if v == "" {
		return b
	}
	return str(b, k, v)
}

func num(b []byte, k string, v int64) []byte {
	b = append(append(append(b, `,"`...), k...), `":`...)
	return strconv.AppendInt(b, v, 10)
}

func boolean(b []byte, k string, v bool) []byte {
	b = append(append(append(b, `,"`...), k...), `":`...)
	return strconv.AppendBool(b, v)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
