package mcp

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/session"
)

// progress sends notifications/progress for a waiting call while the
// client asked for them (a progressToken in the request), every
// Config.ProgressEvery: progress and total are elapsed and maximum wait in
// milliseconds, the message says how much output has arrived. The returned
// function stops it; it must be called before the handler returns.
func (s *Server) progress(ctx context.Context, req *sdk.CallToolRequest, sess *session.Session, timeout time.Duration) func() {
	if req == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return func() {} // and no message closure made for nothing
	}
	return s.progressMsg(ctx, req, timeout, func() string {
		return fmt.Sprintf("waiting; %d unread bytes so far", sess.Info().Unread)
	})
}

// progressMsg is progress with its own message.
func (s *Server) progressMsg(ctx context.Context, req *sdk.CallToolRequest, timeout time.Duration, msg func() string) func() {
	if req == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return func() {}
	}
	notify := notifierOf(ctx, req)
	if notify == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	every := s.cfg.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				p := &sdk.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      float64(time.Since(start).Milliseconds()),
					Total:         float64(timeout.Milliseconds()),
					Message:       msg(),
				}
				if err := notify(ctx, p); err != nil {
					s.log.Debug("progress notification failed", "err", err)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// notifier sends a progress notification to the client of a call.
type notifier func(context.Context, *sdk.ProgressNotificationParams) error

type notifierKey struct{}

// notifierOf is how a call reaches its client: its go-sdk session, or, for
// a call the stdio transport serves itself, the notifier in its context.
func notifierOf(ctx context.Context, req *sdk.CallToolRequest) notifier {
	if req.Session != nil {
		return req.Session.NotifyProgress
	}
	n, _ := ctx.Value(notifierKey{}).(notifier)
	return n
}
