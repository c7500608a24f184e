package cli

import "flag"

// goFlagSet is a fresh flag set for libraries that register Go flags.
func goFlagSet() *flag.FlagSet { return flag.NewFlagSet("addonwall", flag.ContinueOnError) }
