package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) addPluginTools() {
	addTool(s, textVoice, &sdk.Tool{
		Name:        "plugins_list",
		Description: "Loaded plugins: name, version, kind, sha256, source, sessions.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, nil, func(context.Context, *sdk.CallToolRequest, struct{}) (any, error) {
		return map[string]any{"plugins": s.deps.Plugins.ListPlugins()}, nil
	})
}
