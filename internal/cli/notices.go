package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/addonwall/addonwall/internal/decide"
	"github.com/addonwall/addonwall/internal/notice"
)

func init() { extraCommands = append(extraCommands, newNoticesCmd) }

func newNoticesCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "notices",
		Short: "List the notices delivered to <crow-home>/addonwall/notices.jsonl",
		Long: `notices lists the notices the controller wrote to its notices file, which it
uses when Crow's database (crow.db, with its bell) is not there. Notices that
went to Crow's bell are shown in Crow.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			ns, err := notice.List(p.CrowHome)
			if err != nil {
				return err
			}
			if len(ns) == 0 {
				_, err := fmt.Fprintln(g.out, "no notices")
				return err
			}
			for _, n := range ns {
				// Title and body were made inert when the notice was written;
				// Inert again in case the file was edited by hand.
				fmt.Fprintf(g.out, "%s  %s\n%s\n\n", n.Time.Format("2006-01-02 15:04:05"), decide.Inert(n.Title), n.Body)
			}
			return nil
		},
	}
}
