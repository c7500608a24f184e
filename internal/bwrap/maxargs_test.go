package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tree of hard links (as pnpm installs node_modules: every file a link
// into its store) is masked file by file, since a link's other names may be
// a .env elsewhere. Past bubblewrap's argument limit the plan cannot run:
// WalledArgs says so, naming the limit, before bubblewrap is ever started.
func TestWalledArgsOverBubblewrapsLimit(t *testing.T) {
	l := newCrow(t)
	store := filepath.Join(l.root, "store")
	mkfile(t, filepath.Join(store, "f"), "x")
	link := func(n int) {
		dir := filepath.Join(l.install, "node_modules")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := os.Link(filepath.Join(store, "f"), filepath.Join(dir, fmt.Sprintf("f%05d", i))); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	// Positive control: a few hundred links are masked and fit.
	link(300)
	a, err := WalledArgs(l.planFor(t, "/bin/sh", []string{"-c", "true"}, nil))
	if err != nil {
		t.Fatalf("300 masked links: %v", err)
	}
	if n := len(a.Args); n < 300 || n > MaxArgs {
		t.Fatalf("300 masked links gave %d arguments", n)
	}
	link(MaxArgs / 2)
	_, err = WalledArgs(l.planFor(t, "/bin/sh", []string{"-c", "true"}, nil))
	if err == nil || !strings.Contains(err.Error(), "over the 9000 that bubblewrap accepts") {
		t.Fatalf("%d masked links: %v, want the limit named", MaxArgs/2, err)
	}
}
