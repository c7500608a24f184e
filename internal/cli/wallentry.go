package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/addonwall/addonwall/internal/wallentry"
)

func init() { extraCommands = append(extraCommands, newWallEntryCmd) }

// newWallEntryCmd is the in-namespace entry. The wall runs this same
// binary, bound read-only, as its first program; nobody types it.
func newWallEntryCmd(_ *globals) *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:    "wall-entry --config FILE -- COMMAND [ARGS...]",
		Short:  "Inside a wall: listen for the add-on's way out, then run the add-on",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fail := func(err error) error {
				fmt.Fprintln(cmd.ErrOrStderr(), "addonwall wall-entry:", err)
				return &exitError{code: wallentry.ExitEntryFailed}
			}
			if config == "" {
				return fail(fmt.Errorf("--config is required"))
			}
			cfg, err := wallentry.ReadConfig(config)
			if err != nil {
				return fail(err)
			}
			code, err := wallentry.Run(runContext(cmd), cfg, args)
			if err != nil {
				return fail(err)
			}
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the entry's config file, as the wall binds it")
	// Everything after the command is the add-on's, never the entry's.
	cmd.Flags().SetInterspersed(false)
	return cmd
}
