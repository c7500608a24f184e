package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
	"github.com/addonwall/addonwall/internal/demo"
	"github.com/addonwall/addonwall/internal/paths"
	"github.com/addonwall/addonwall/internal/runner"
)

func init() { extraCommands = append(extraCommands, newDemoCmd) }

func newDemoCmd(g *globals) *cobra.Command {
	var dir string
	var keep, verbose bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Make a demo Crow home with real add-ons, run the controller on it and talk MCP to a walled add-on",
		Long: `demo makes a Crow home (default ~/addonwall-demo/home) with four add-ons
built from real MCP servers on npm:

  notes       @modelcontextprotocol/server-filesystem, granted one folder read-only: walled
  everything  @modelcontextprotocol/server-everything, the owner chose: not walled (your choice)
  memory      @modelcontextprotocol/server-memory, reads crow.db: not walled: shares Crow's database
  broken      a manifest with a bad sandbox key: off, with a Fix-it card

It runs the controller with CROW_ADDON_WALLS_DEFAULT=walled, shows the add-ons'
status, and connects an MCP client (the official Go SDK) to notes through
addonwall connect: it reads a granted file, and is refused the .env beside it.
With --keep the controller keeps running for your own MCP client.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				// Not under a hidden folder of the home (~/.cache): a wall
				// never binds those, so the demo's checkout could not be bound.
				home, err := os.UserHomeDir()
				if err != nil {
					return fmt.Errorf("finding a folder for the demo (give --dir): %w", err)
				}
				dir = filepath.Join(home, "addonwall-demo")
			}
			ctx, stop := signal.NotifyContext(runContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, g.out, filepath.Join(dir, "home"), keep, verbose)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "folder for the demo (not under /tmp or a hidden folder of your home: a wall never binds those)")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the controller running after the walkthrough, until Ctrl-C")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "show the controller's log")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, root string, keep, verbose bool) error {
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	h, err := demo.Build(ctx, root, out)
	if err != nil {
		return err
	}
	say("demo Crow home: %s (data: %s)", h.Paths.CrowHome, h.Paths.DataDir)
	env := map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}
	log := logr.Discard()
	if verbose {
		log = zap.New(zap.WriteTo(os.Stderr))
	}
	ns := "demo"
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(rctx, runner.Options{
			Paths: h.Paths, Namespace: ns, MetricsAddr: "0", HealthAddr: "0",
			Getenv: func(k string) string {
				if v, ok := env[k]; ok {
					return v
				}
				return os.Getenv(k)
			},
			Log: log, Ready: ready,
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		return fmt.Errorf("the controller stopped: %w", err)
	case <-time.After(60 * time.Second):
		return fmt.Errorf("the controller did not start in 60 s")
	}
	g := &globals{flags: flagsOf(h), namespace: ns, getenv: os.Getenv, hostname: os.Hostname, out: out, errw: out}
	if err := waitDecided(ctx, g, 4, 60*time.Second); err != nil {
		return err
	}
	say("\n$ addonwall get addonwalls -o wide")
	r, err := openReader(g)
	if err != nil {
		return err
	}
	items, err := listWalls(ctx, g, r, "")
	if err != nil {
		return err
	}
	if err := printWalls(out, items, outWide, decide.LangEN); err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return err
	}
	connect := []string{"connect", demo.IDNotes, "--crow-home", h.Paths.CrowHome, "--data-dir", h.Paths.DataDir, "--crow-checkout", h.Paths.Checkout, "-n", ns}
	say("\nAn MCP client connects to the walled notes add-on: %s %s", self, strings.Join(connect, " "))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "addonwall-demo", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(self, connect...)}, nil)
	if err != nil {
		return fmt.Errorf("connecting to notes: %w", err)
	}
	call := func(tool string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			say("  %s → error: %v", tool, err)
			return
		}
		var text []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, strings.TrimSpace(t.Text))
			}
		}
		verdict := "allowed"
		if res.IsError {
			verdict = "REFUSED"
		}
		say("  %s %v → %s: %s", tool, args, verdict, strings.Join(text, " "))
	}
	call("read_text_file", map[string]any{"path": filepath.Join(h.Notes, "hello.txt")})
	call("read_text_file", map[string]any{"path": filepath.Join(h.Notes, ".env")})
	call("write_file", map[string]any{"path": filepath.Join(h.Notes, "new.txt"), "content": "x"})
	cs.Close()

	say("\n$ addonwall describe addonwall broken")
	b, err := listWalls(ctx, g, r, demo.IDBroken)
	if err != nil {
		return err
	}
	evs, _ := eventsFor(ctx, r, ns, "AddonWall", demo.IDBroken, 3)
	if err := describeWall(out, &b[0], evs, decide.LangEN); err != nil {
		return err
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{demo.IDNotes: map[string]any{"command": self, "args": connect}}})
	if !keep {
		say("\nDone. Run it again with --keep to leave the controller running; then give an MCP client this config:")
		say("  %s", cfg)
		return nil
	}
	say("\nThe controller keeps running (Ctrl-C to stop). An MCP client config for notes:")
	say("  %s", cfg)
	select {
	case <-ctx.Done():
	case err := <-done:
		return err
	}
	return nil
}

func flagsOf(h *demo.Home) paths.Flags {
	return paths.Flags{CrowHome: h.Paths.CrowHome, DataDir: h.Paths.DataDir, Checkout: h.Paths.Checkout, Store: h.Paths.Store}
}

// waitDecided waits until n add-ons exist and each was decided.
func waitDecided(ctx context.Context, g *globals, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		r, err := openReader(g)
		if err == nil {
			var l wallsv1.AddonWallList
			if err := r.List(ctx, &l, client.InNamespace(g.namespace)); err == nil && len(l.Items) >= n {
				all := true
				for _, w := range l.Items {
					if w.Status.Mode == "" || w.Status.ObservedGeneration != w.Generation {
						all = false
					}
				}
				if all {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo's add-ons were not all decided within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
