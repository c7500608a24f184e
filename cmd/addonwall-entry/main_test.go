package main

import (
	"testing"

	"github.com/addonwall/addonwall/internal/wallentry"
)

// Anything but the one argument shape is refused before any config is
// read or any listener opened.
func TestRefusesOtherArguments(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"wall-entry"},
		{"wall-entry", "--config", "/nonexistent", "/bin/true"},
		{"run", "--config", "/nonexistent", "--", "/bin/true"},
	} {
		if got := run(args); got != wallentry.ExitEntryFailed {
			t.Errorf("run(%q) = %d, want %d", args, got, wallentry.ExitEntryFailed)
		}
	}
	// Positive control on the shape: the right shape gets as far as reading
	// the config (which does not exist here).
	if got := run([]string{"wall-entry", "--config", "/nonexistent/entry.json", "--", "/bin/true"}); got != wallentry.ExitEntryFailed {
		t.Errorf("a missing config must fail the entry, got %d", got)
	}
}
