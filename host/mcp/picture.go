package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host/render"
	"github.com/termhost/termhost/host/session"
)

// pictureSlots bounds the pictures drawn at once: the largest screen takes
// about 0.6 s of a core and 70 MB to draw, so a client asking for many at
// once waits its turn instead of multiplying that.
var pictureSlots = make(chan struct{}, 2)

// viewPicture is view_screen's png and svg formats: the screen plugin's
// cells drawn by host/render. A PNG is image content (with the screen's
// state as a text block beside it); an SVG is the content of the usual
// result, refused rather than cut when over maxBytes (default: the most
// any content may be, 1 MiB). A screen over render.MaxSide pixels a side
// is refused with its size and the limit; a PNG over a maxBytes given is
// refused too.
func (s *Server) viewPicture(ctx context.Context, sess *session.Session, format string, in viewIn) (any, error) {
	q, err := json.Marshal(map[string]string{"op": "cells"})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	raw, err := sess.Screen(ctx, q)
	if err != nil {
		return nil, err
	}
	var rep screenReply
	var scr render.Screen
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("%w: the screen plugin's answer is not valid: %v", errInternal, err)
	}
	if err := json.Unmarshal(raw, &scr); err != nil {
		return nil, fmt.Errorf("%w: the screen plugin's answer is not valid: %v", errInternal, err)
	}
	select {
	case pictureSlots <- struct{}{}:
		defer func() { <-pictureSlots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r, err := render.Default()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	out := screenOut{SessionID: sess.ID, Format: format}
	fromReply(&out, rep)
	s.fillState(&out, sess)
	if format == "svg" {
		svg, err := r.SVG(&scr)
		if err != nil {
			return nil, invalid("format", "svg: %v", err)
		}
		limit := maxContent
		if in.MaxBytes > 0 {
			limit = min(in.MaxBytes, maxContent)
		}
		if len(svg) > limit {
			return nil, invalid("maxBytes", "the SVG of this screen is %d bytes, over %d; an SVG is never cut: raise maxBytes (at most %d) or view the screen as png or text", len(svg), limit, maxContent)
		}
		text := string(svg)
		out.Content = &text
		return out, nil
	}
	png, err := r.PNG(&scr)
	if err != nil {
		return nil, invalid("format", "png: %v", err)
	}
	if in.MaxBytes > 0 && len(png) > in.MaxBytes {
		return nil, invalid("maxBytes", "the PNG of this screen is %d bytes, over %d; a picture is never cut: raise maxBytes or leave it out", len(png), in.MaxBytes)
	}
	meta, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{
		&sdk.ImageContent{Data: png, MIMEType: "image/png"},
		&sdk.TextContent{Text: string(meta)},
	}}, nil
}
