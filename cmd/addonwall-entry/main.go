// Command addonwall-entry is the in-namespace entry of a wall, built on its
// own so that it starts in a few milliseconds: the full addonwall binary
// links the Kubernetes libraries, whose start-up alone costs tens of
// milliseconds on every connect. It does exactly what `addonwall
// wall-entry` does, with the same arguments:
//
//	addonwall-entry wall-entry --config FILE -- COMMAND [ARGS...]
//
// The controller runs it inside the wall when it sits beside the addonwall
// binary, and `addonwall wall-entry` otherwise.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/addonwall/addonwall/internal/wallentry"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "addonwall wall-entry:", err)
		return wallentry.ExitEntryFailed
	}
	if len(args) < 5 || args[0] != "wall-entry" || args[1] != "--config" || args[3] != "--" {
		return fail(fmt.Errorf("usage: addonwall-entry wall-entry --config FILE -- COMMAND [ARGS...]"))
	}
	cfg, err := wallentry.ReadConfig(args[2])
	if err != nil {
		return fail(err)
	}
	code, err := wallentry.Run(context.Background(), cfg, args[4:])
	if err != nil {
		return fail(err)
	}
	return code
}
