// Command mcpcall is a small MCP client built on the official Go SDK. It
// starts an MCP server as a command (usually `addonwall connect ID`),
// initializes, lists the tools and, if asked, calls one. The demo and the
// end-to-end checks use it to talk to add-ons the way Crow's gateway does.
//
//	mcpcall [-tool NAME] [-args JSON] -- COMMAND [ARG...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	tool := flag.String("tool", "", "tool to call after listing the tools")
	args := flag.String("args", "{}", "the tool's arguments, as a JSON object")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	quiet := flag.Bool("quiet", false, "print only the tool's answer")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpcall [-tool NAME] [-args JSON] -- COMMAND [ARG...]")
		os.Exit(2)
	}
	if err := run(*tool, *args, *timeout, *quiet, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mcpcall:", err)
		os.Exit(1)
	}
}

func run(tool, rawArgs string, timeout time.Duration, quiet bool, command []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var arguments map[string]any
	if err := json.Unmarshal([]byte(rawArgs), &arguments); err != nil {
		return fmt.Errorf("-args is not a JSON object: %w", err)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpcall", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", strings.Join(command, " "), err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	if !quiet {
		fmt.Printf("server: %s %s\n", init.ServerInfo.Name, init.ServerInfo.Version)
		names := make([]string, 0, len(tools.Tools))
		for _, t := range tools.Tools {
			names = append(names, t.Name)
		}
		fmt.Printf("tools: %s\n", strings.Join(names, ", "))
	}
	if tool == "" {
		return nil
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		return fmt.Errorf("calling %s: %w", tool, err)
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Println(t.Text)
		}
	}
	if res.IsError {
		return fmt.Errorf("the tool %s answered with an error", tool)
	}
	return nil
}
