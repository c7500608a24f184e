// Command addonwall runs Crow's add-ons inside walls. See README.md.
package main

import (
	"os"

	"github.com/addonwall/addonwall/internal/cli"
)

func main() { os.Exit(cli.Execute()) }
