package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/addonwall/addonwall/internal/session"
)

func init() {
	extraCommands = append(extraCommands, newConnectCmd, newUnwallCmd, newWallCmd)
}

func newConnectCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "connect ID",
		Short: "Run one session of an add-on on stdin and stdout (name this as the command in an MCP client's config)",
		Long: `connect asks the running controller for one session of the add-on: a fresh
child, inside its wall when the add-on is walled, whose stdin, stdout and stderr
are this command's own. It returns when the child ends, with its exit code;
ending this command ends the child.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(runContext(cmd), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			code, err := session.Connect(ctx, p.ControlSocket(), args[0], [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
			if err != nil {
				return fmt.Errorf("add-on %s: %w", args[0], err)
			}
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}

func newUnwallCmd(g *globals) *cobra.Command {
	var ref string
	cmd := &cobra.Command{
		Use:   "unwall --ref REF",
		Short: `"Run without the wall": the Fix-it remedy for the add-on a card names`,
		Long: `unwall records the owner's choice to run an add-on without its wall. The add-on
is the one the running controller's failure record REF names (shown on the card:
addonwall describe addonwall ID), never one named here, so a copied or stale
card changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ref == "" {
				return errors.New("--ref is required: copy it from the add-on's Fix-it card (addonwall describe addonwall ID)")
			}
			rep, err := ownerRequest(cmd, g, session.Request{Op: session.OpUnwall, Ref: ref})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.out, "%s: %s; it takes effect at its next connect\n", rep.ID, rep.Word)
			return err
		},
	}
	cmd.Flags().StringVar(&ref, "ref", "", "the Fix-it card's ref")
	return cmd
}

func newWallCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "wall ID",
		Short: `"Wall it again": put an add-on back under its wall`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := ownerRequest(cmd, g, session.Request{Op: session.OpWall, ID: args[0]})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.out, "%s: walled again; it takes effect at its next connect\n", rep.ID)
			return err
		},
	}
}

func ownerRequest(cmd *cobra.Command, g *globals, req session.Request) (session.Reply, error) {
	p, err := g.paths()
	if err != nil {
		return session.Reply{}, err
	}
	c, rep, err := session.Dial(runContext(cmd), p.ControlSocket(), req, nil)
	if err != nil {
		return rep, err
	}
	c.Close()
	return rep, nil
}

// exitError carries a child's exit code out of a command.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("the add-on exited with code %d", e.code) }
