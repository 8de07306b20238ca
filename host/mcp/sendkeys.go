package mcp

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/keys"
)

// Bounds of send_keys.
const (
	maxKeys     = 1024
	maxKeyName  = 64
	maxKeysLine = 16 << 10
	maxText     = 1 << 20
)

type sendKeysIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
	// Keys is a string of space-separated key names or an array of them.
	Keys  any    `json:"keys,omitempty" jsonschema:"key names, e.g. [\"C-c\",\"Enter\"]: Enter Tab BTab Escape BSpace Space Up Down Left Right Home End PageUp PageDown Insert Delete F1-F12, C-/M-/S- prefixes, or one character"`
	Text  string `json:"text,omitempty" jsonschema:"literal text, typed as is before keys"`
	Paste string `json:"paste,omitempty" jsonschema:"text pasted (bracketed when the app enabled it)"`
	screenWaitIn
	View string `json:"view,omitempty" jsonschema:"with a wait: the screen to return, plain (default) or ansi"`
}

func (s *Server) addSendKeys() {
	addTool(s, testerVoice, &sdk.Tool{
		Name:        "send_keys",
		Description: "Type into a session: text, then keys (by name), or paste. With a wait, returns the screen after it.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
	}, sendKeysSchema, s.sendKeys)
}

// sendKeysSchema is the bounds of send_keys's arguments.
func sendKeysSchema(p schemaProps) {
	tuiRef(p)
	k := p["keys"]
	k.Types = []string{"string", "array"}
	k.MaxLength, k.MaxItems = ptr(maxKeysLine), ptr(maxKeys)
	k.Type = ""
	k.Items = &jsonschema.Schema{Type: "string", MaxLength: ptr(maxKeyName)}
	p["text"].MaxLength = ptr(maxText)
	p["paste"].MaxLength = ptr(maxText)
	p["view"].Enum = []any{"plain", "ansi"}
	screenWaitBounds(p)
}

func (s *Server) sendKeys(ctx context.Context, req *sdk.CallToolRequest, in sendKeysIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	var ks []keys.Key
	switch v := in.Keys.(type) {
	case nil:
	case string:
		ks, err = keys.ParseString(v)
	case []any:
		tokens := make([]string, len(v))
		for i, t := range v {
			tokens[i], _ = t.(string) // checked by the schema
		}
		ks, err = keys.Parse(tokens)
	}
	if err != nil {
		return nil, invalid("keys", "%v", err)
	}
	if len(ks) == 0 && in.Text == "" && in.Paste == "" {
		return nil, invalid("keys", "give keys, text or paste")
	}
	var modes keys.Modes
	if sess.HasScreen() && (len(ks) > 0 || in.Paste != "") {
		rep, err := s.queryScreen(ctx, sess, map[string]any{"op": "modes"})
		if err != nil {
			return nil, err
		}
		modes = keys.Modes{AppCursor: rep.Modes.AppCursor, AppKeypad: rep.Modes.AppKeypad, BracketedPaste: rep.Modes.BracketedPaste}
	}
	p := keys.Text(nil, in.Text)
	p = keys.Paste(p, in.Paste, modes)
	p = keys.Encode(p, ks, modes)
	wspec, err := s.screenWait(ctx, sess, in.screenWaitIn)
	if err != nil {
		return nil, err
	}
	mark := sess.Mark()
	if err := sess.Send(ctx, p); err != nil {
		return nil, err
	}
	// The caller's next wait (this one, or a wait_for) sees what the keys
	// brought.
	sess.Reader(owner(req)).SetMark(mark)
	out := map[string]any{"session_id": sess.ID, "success": true, "bytes": len(p)}
	if wspec.Empty() {
		return out, nil
	}
	stop := s.progress(ctx, req, sess, sess.WaitCeiling(wspec.Timeout))
	w, err := s.awaitOne(ctx, req, sess, wspec)
	stop()
	if err != nil {
		return nil, err
	}
	out["reason"], out["elapsed_ms"], out["state"] = w.Reason, w.ElapsedMs, w.State
	if w.ExitCode != nil {
		out["exit_code"] = *w.ExitCode
	}
	if w.DurationMs != nil {
		out["duration_ms"] = *w.DurationMs
	}
	if sess.HasScreen() {
		view := in.View
		if view == "" {
			view = "plain"
		}
		v, err := s.viewScreen(ctx, req, viewIn{SessionID: sess.ID, Format: view})
		if err != nil {
			return nil, fmt.Errorf("the keys were sent, but the screen could not be read: %w", err)
		}
		so := v.(screenOut)
		so.SessionID, so.State = "", ""
		out["screen"] = so
	}
	return out, nil
}
