// Package cli is addonwall's command line: it parses flags, finds the
// folders and the store, and hands each command to the package that does
// the work.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/addonwall/addonwall/internal/paths"
)

// globals are the flags every command accepts.
type globals struct {
	flags     paths.Flags
	namespace string
	lang      string
	getenv    func(string) string
	hostname  func() (string, error)
	out, errw io.Writer
}

func (g *globals) paths() (paths.Paths, error) {
	return paths.Resolve(g.flags, g.getenv)
}

// ns is the namespace commands work in: --namespace, else this host's.
func (g *globals) ns() (string, error) {
	if g.namespace != "" {
		return g.namespace, nil
	}
	return paths.Namespace(g.hostname)
}

// NewRoot builds the addonwall command tree.
func NewRoot() *cobra.Command {
	g := &globals{getenv: os.Getenv, hostname: os.Hostname, out: os.Stdout, errw: os.Stderr}
	root := &cobra.Command{
		Use:   "addonwall",
		Short: "Run Crow's add-ons inside walls (bubblewrap sandboxes)",
		Long: `addonwall runs each of Crow's add-ons inside a wall: a bubblewrap sandbox where
it sees only the files, folders and network the wall hands it. Controllers turn
the owner's files into AddonWall resources and converge each add-on to walled,
not walled (with the reason) or off (with a Fix-it card).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			g.out, g.errw = cmd.OutOrStdout(), cmd.ErrOrStderr()
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.flags.CrowHome, "crow-home", "", "Crow home (default $CROW_HOME, else ~/.crow)")
	pf.StringVar(&g.flags.DataDir, "data-dir", "", "Crow's data folder (default $CROW_DATA_DIR, else ~/.crow/data)")
	pf.StringVar(&g.flags.Checkout, "crow-checkout", "", "Crow checkout (default $CROW_APP_ROOT)")
	pf.StringVar(&g.flags.Store, "store", "", "file-backed store (default <crow-home>/addonwall/store)")
	pf.StringVarP(&g.namespace, "namespace", "n", "", "namespace of this host's add-ons (default: this computer's host name)")
	pf.StringVar(&g.lang, "lang", "en", "language of status words: en or es")
	_ = root.RegisterFlagCompletionFunc("lang", cobra.FixedCompletions([]string{"en", "es"}, cobra.ShellCompDirectiveNoFileComp))
	for _, name := range []string{"crow-home", "data-dir", "crow-checkout", "store"} {
		_ = root.MarkPersistentFlagDirname(name)
	}

	root.AddCommand(
		newVersionCmd(g),
		newGetCmd(g),
		newDescribeCmd(g),
	)
	for _, add := range extraCommands {
		root.AddCommand(add(g))
	}
	return root
}

// extraCommands are registered by the files that define them.
var extraCommands []func(*globals) *cobra.Command

// Execute runs the command line and returns the process exit code.
func Execute() int {
	root := NewRoot()
	if err := root.Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintln(os.Stderr, "addonwall:", err)
		return 1
	}
	return 0
}
