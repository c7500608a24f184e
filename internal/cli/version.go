package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/addonwall/addonwall/internal/version"
)

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print addonwall's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(g.out, "addonwall %s %s/%s %s\n", version.String(), runtime.GOOS, runtime.GOARCH, runtime.Version())
			return err
		},
	}
}
