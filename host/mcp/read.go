package mcp

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// Bounds of every reading tool's numbers (SPEC SES-7, SES-8).
const (
	maxWaitMs   = 300000   // five minutes, the server's ceiling
	maxReadSize = 16 << 20 // bytes one read may ask for
)

// waitIn are the SES-7 wait options, shared by every reading tool.
type waitIn struct {
	Until     string `json:"until,omitempty" jsonschema:"regex on new output (escapes ignored)"`
	Prompt    bool   `json:"prompt,omitempty" jsonschema:"a prompt mark not yet read (Telnet GA/EOR)"`
	IdleMs    int    `json:"idleMs,omitempty" jsonschema:"quiet this many ms after output"`
	Exit      bool   `json:"exit,omitempty" jsonschema:"the session ends"`
	TimeoutMs int    `json:"timeoutMs,omitempty" jsonschema:"give up after this many ms (at most 300000)"`
}

// waitBounds refines the schema of a tool that embeds waitIn.
func waitBounds(p schemaProps) {
	for _, f := range []string{"idleMs", "timeoutMs"} {
		p[f].Minimum, p[f].Maximum = ptr(0.0), ptr(float64(maxWaitMs))
	}
	p["until"].MaxLength = ptr(session.MaxPatternLen)
}

// waitSpec turns the wait options (and the seed's waitMs, a ceiling with a
// settle time) into a session.WaitSpec.
func waitSpec(w waitIn, waitMs int) (session.WaitSpec, error) {
	var spec session.WaitSpec
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

// settle is how long output must be quiet before a plain waitMs read
// returns early: waitMs is a ceiling, not a sleep.
const settle = 250 * time.Millisecond

// encodings a read can return.
var encodings = []any{"utf8", "base64", "hex", "binary"}

// readOut is what a read returns.
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

// appendJSON writes a read without events (the usual one) as
// encoding/json does.
func (o readOut) appendJSON(b []byte) ([]byte, bool) {
	if len(o.Events) > 0 {
		return nil, false
	}
	b = appendJSONString(append(b, `{"data":`...), o.Data)
	b = appendJSONString(append(b, `,"encoding":`...), o.Encoding)
	b = strconv.AppendInt(append(b, `,"bytes":`...), int64(o.Bytes), 10)
	b = appendJSONString(append(b, `,"reason":`...), o.Reason)
	if o.TimeoutMs != 0 {
		b = strconv.AppendInt(append(b, `,"timeoutMs":`...), o.TimeoutMs, 10)
	}
	b = strconv.AppendBool(append(b, `,"hasMore":`...), o.HasMore)
	if o.Evicted != 0 {
		b = strconv.AppendUint(append(b, `,"evictedBytes":`...), o.Evicted, 10)
	}
	b = appendJSONString(append(b, `,"state":`...), o.State)
	if o.Error != "" {
		b = appendJSONString(append(b, `,"error":`...), o.Error)
	}
	return append(b, '}'), true
}

type eventOut struct {
	Type   string          `json:"type"`
	Fields json.RawMessage `json:"fields,omitempty"` // the event's members but type, as the plugin emitted them
}

// read is the one read every reading tool does: wait per spec (with
// progress notifications when the client asked for them, stopped by
// cancellation), take what is new to the caller's reader of the session,
// encode it.
func (s *Server) read(ctx context.Context, req *sdk.CallToolRequest, sess *session.Session, spec session.WaitSpec, maxBytes int, enc string) (readOut, error) {
	if enc == "" {
		enc = "utf8"
	}
	var stop func()
	if !spec.Empty() {
		stop = s.progress(ctx, req, sess, sess.WaitCeiling(spec.Timeout))
	}
	res, err := sess.Reader(owner(req)).Read(ctx, session.ReadOptions{Wait: spec, MaxBytes: maxBytes, UTF8: enc == "utf8"})
	if stop != nil {
		stop()
	}
	if err != nil {
		return readOut{}, err
	}
	out := readOut{
		Data: encode(res.Data, enc), Encoding: enc, Bytes: len(res.Data), Reason: string(res.Reason),
		TimeoutMs: res.TimeoutMs, HasMore: res.HasMore, Evicted: res.Evicted, State: string(sess.State()),
	}
	for _, e := range res.Events {
		if e.Type == abi.TypeOption && len(res.Events) > 8 {
			continue // negotiation chatter: keep results short
		}
		out.Events = append(out.Events, eventOut{Type: string(e.Type), Fields: abi.FieldsJSON(e.Body)})
	}
	if !res.Alive {
		out.Error = sess.Info().Error
	}
	return out, nil
}

// encode renders bytes in a read's encoding: utf8 (invalid bytes become
// U+FFFD), base64, hex, or binary (each byte a code point, latin1).
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
