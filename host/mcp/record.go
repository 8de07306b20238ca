package mcp

import (
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/session"
)

// The recording tools, in the tui group: record_start and record_stop on
// a session of any kind (host/record writes the file; the open tools'
// `record` starts one with the session).

// withRecording adds the path of the session's recording to an open
// tool's result, when it is recorded.
func withRecording(out map[string]any, sess *session.Session) map[string]any {
	if p := sess.Recording(); p != "" {
		out["recording"] = p
	}
	return out
}

func (s *Server) addRecordTools() {
	addTool(s, testerVoice, &sdk.Tool{
		Name:        "record_start",
		Description: "Record the session from now on (asciicast; record:true when opening records from its start); returns the path.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, tuiRef, s.recordStart)
	addTool(s, testerVoice, &sdk.Tool{
		Name:        "record_stop",
		Description: "Stop recording the session; returns the path.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, tuiRef, s.recordStop)
}

func (s *Server) recordStart(ctx context.Context, req *sdk.CallToolRequest, in tuiSessionIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	path, err := sess.StartRecording(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"session_id": sess.ID, "recording": path}, nil
}

func (s *Server) recordStop(ctx context.Context, req *sdk.CallToolRequest, in tuiSessionIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	path, err := sess.StopRecording(ctx)
	if errors.Is(err, session.ErrNoRecording) {
		return nil, invalid("session_id", "%v", err)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"session_id": sess.ID, "recording": path, "stopped": true}, nil
}
