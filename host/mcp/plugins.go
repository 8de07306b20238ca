package mcp

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) addPluginTools() {
	sdk.AddTool(s.mcp, &sdk.Tool{
		Name:        "plugins_list",
		Description: "List loaded plugins: name, version, kind, sha256, source, sessions.",
		InputSchema: &jsonschema.Schema{Type: "object"},
		Annotations: &sdk.ToolAnnotations{Title: "Plugins", ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, func(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
		return ok(map[string]any{"plugins": s.deps.Plugins.ListPlugins()})
	})
}
