package cli

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/addonwall/addonwall/internal/scheme"
	"github.com/addonwall/addonwall/internal/store"
)

// openReader opens the store read-only: reading commands work whether or
// not the controller runs, and never write. Files the store refuses (a
// broken hand edit) are named on stderr: their last good version is what
// the command shows.
func openReader(g *globals) (client.Reader, error) {
	p, err := g.paths()
	if err != nil {
		return nil, err
	}
	sch, err := scheme.New()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(p.Store, sch, store.ReadOnly(), store.WithoutFileWatch())
	if err != nil {
		return nil, fmt.Errorf("opening the store %s (is --store or --crow-home right?): %w", p.Store, err)
	}
	for _, p := range st.Problems() {
		fmt.Fprintf(g.errw, "warning: the store refuses a file, and shows its last good version: %s\n", shown(p.String()))
	}
	return st.Client(), nil
}
