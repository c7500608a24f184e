package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeInput is the "probe" tool's arguments: paths to try on top of the
// full report, so an MCP end-to-end test can ask the walled add-on what it
// reaches.
type probeInput struct {
	Read    []string `json:"read,omitempty" jsonschema:"paths to read"`
	Write   []string `json:"write,omitempty" jsonschema:"paths to append a line to"`
	Connect []string `json:"connect,omitempty" jsonschema:"unix:PATH or tcp:HOST:PORT targets to dial"`
}

// serveMCP makes the probe a fake add-on: an MCP server on stdio whose one
// tool returns the report as JSON text. It returns when the client hangs up.
func serveMCP(ctx context.Context, needles []string) error {
	server := mcp.NewServer(&mcp.Implementation{Name: "addonwall-probe", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "probe",
		Description: "Report what this process can see and do inside its wall, as JSON.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in probeInput) (*mcp.CallToolResult, any, error) {
		r := collect(ctx, request{full: true, read: in.Read, write: in.Write, connect: in.Connect}, needles)
		b, err := json.Marshal(r)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the report: %w", err)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	return server.Run(ctx, &mcp.StdioTransport{})
}
