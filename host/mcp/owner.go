package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/session"
)

// Who owns a session (SPEC TRUST-5). Every session belongs to the client
// that opened it, and every lookup and listing names the client asking
// (session.Registry.Get, Owned): another client's session is not there
// for it. The owner of a request is
//   - over stdio: "" — the one client, which owns everything;
//   - over HTTP, a 2025-era client: its MCP session id (go-sdk binds the
//     id to the bearer token that created it, so no other token can use
//     it);
//   - over HTTP, a client without an MCP session (2026-07-28, or a
//     request that never initialized): the bearer token alone, "token:"
//     and the token's user id, a hash of the token (tokenUser).
//
// A session changes hands only when its owner says so: share_session
// makes a one-time code, claim_session redeems it.

// ownerOf is the owner of a request from ss with extra (either may be
// nil). ctx carries the HTTP request's owner (httpOwner) for requests
// go-sdk makes itself without extra (the subscriptions of
// subscriptions/listen).
func ownerOf(ctx context.Context, ss *sdk.ServerSession, extra *sdk.RequestExtra) string {
	if ss != nil && ss.ID() != "" {
		return ss.ID()
	}
	if extra != nil && extra.Header != nil {
		user := ""
		if extra.TokenInfo != nil {
			user = extra.TokenInfo.UserID
		}
		return tokenOwner(user)
	}
	if ctx != nil {
		if o, ok := ctx.Value(httpOwnerKey{}).(string); ok {
			return o
		}
	}
	return ""
}

// anonymous is the token user of HTTP requests under --no-auth.
const anonymous = "anonymous"

// tokenOwner is the owner of an HTTP request without an MCP session from
// the token user user ("": anonymous).
func tokenOwner(user string) string {
	if user == "" {
		user = anonymous
	}
	return "token:" + user
}

// httpOwnerKey is the context key of the owner the HTTP handler found for
// a request without an MCP session.
type httpOwnerKey struct{}

// owner is the owner of a tool call.
func owner(req *sdk.CallToolRequest) string {
	if req == nil {
		return ""
	}
	return ownerOf(context.Background(), req.Session, req.Extra)
}

// lookup finds one of the caller's sessions of any kind by id or name;
// field names the argument for the error. Another client's session is
// not found, with the words of a session that does not exist.
func (s *Server) lookup(req *sdk.CallToolRequest, field, ref string) (*session.Session, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, invalid(field, "must be a session id or name, got an empty string")
	}
	return s.deps.Sessions.Get(owner(req), ref)
}

// The handover tools, in the tui group.

type shareIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name (any kind)"`
}

type claimIn struct {
	Code string `json:"code" jsonschema:"the code share_session gave"`
}

// maxCodeLen bounds claim_session's code (Share makes 24 characters).
const maxCodeLen = 64

func (s *Server) addHandoverTools() {
	addTool(s, testerVoice, &sdk.Tool{
		Name: "share_session",
		Description: "Give one of your sessions to another client: returns a one-time code (10 min) for its " +
			"claim_session; the session stays yours until then.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, tuiRef, s.shareSession)
	addTool(s, testerVoice, &sdk.Tool{
		Name:        "claim_session",
		Description: "Take a session another client shared (its share_session code).",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, func(p schemaProps) { p["code"].MaxLength = ptr(maxCodeLen) }, s.claimSession)
}

func (s *Server) shareSession(_ context.Context, req *sdk.CallToolRequest, in shareIn) (any, error) {
	sess, err := s.lookup(req, "session_id", in.SessionID)
	if err != nil {
		return nil, err
	}
	code, expires, err := s.deps.Sessions.Share(owner(req), sess)
	if err != nil {
		return nil, err
	}
	return map[string]any{"session_id": sess.ID, "code": code, "expires_in_s": int(time.Until(expires).Round(time.Second).Seconds())}, nil
}

func (s *Server) claimSession(_ context.Context, req *sdk.CallToolRequest, in claimIn) (any, error) {
	if strings.TrimSpace(in.Code) == "" {
		return nil, invalid("code", "must be the code share_session gave, got an empty string")
	}
	sess, err := s.deps.Sessions.Claim(owner(req), in.Code)
	if errors.Is(err, session.ErrShareCode) {
		return nil, invalid("code", "%v", err)
	}
	if err != nil {
		return nil, err
	}
	in2 := sess.Info()
	out := map[string]any{"session_id": sess.ID, "kind": string(in2.Kind), "state": string(in2.State)}
	if sess.Name != "" {
		out["name"] = sess.Name
	}
	return out, nil
}

// tokenUser is the user id of a bearer token: a hash, so that the token
// itself is never kept beside the sessions or shown in a log.
func tokenUser(sum [32]byte) string {
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

// NewToken makes a bearer token: 256 random bits, URL-safe (43
// characters).
func NewToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
