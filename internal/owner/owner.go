// Package owner carries out the owner's two choices, "Run without the
// wall" and "Wall it again", through the one writer of addon-walls.json,
// and remembers which versions of that file the controller itself wrote,
// so an edit made outside Crow can be told apart.
package owner

import (
	"fmt"
	"sync"
	"time"

	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/fixit"
)

// Choices implements session.OwnerChoices.
type Choices struct {
	// WallsFile is addon-walls.json.
	WallsFile string
	// Failures are the records behind Fix-it cards.
	Failures *fixit.Records
	// Written remembers the versions the controller wrote.
	Written *Written
	// Now is the clock.
	Now func() time.Time
}

// Unwall is "Run without the wall". The add-on is the one the card's
// record names, never one the caller names, so a forged or stale ref
// changes nothing.
func (c *Choices) Unwall(ref string) (string, error) {
	rec, err := c.Failures.Take(ref)
	if err != nil {
		return "", err
	}
	sum, err := crowhome.SetChoice(c.WallsFile, rec.ID, crowhome.ChoiceNotWalled, c.Now())
	c.Written.Add(sum)
	if err != nil {
		return "", fmt.Errorf("recording the choice for add-on %s (nothing changed; try again): %w", rec.ID, err)
	}
	return rec.ID, nil
}

// Wall is "Wall it again": it can only ever write walled.
func (c *Choices) Wall(id string) error {
	if err := crowhome.ValidID(id); err != nil {
		return err
	}
	sum, err := crowhome.SetChoice(c.WallsFile, id, crowhome.ChoiceWalled, c.Now())
	c.Written.Add(sum)
	if err != nil {
		return fmt.Errorf("recording the choice for add-on %s (nothing changed; try again): %w", id, err)
	}
	return nil
}

// Written is the set of addon-walls.json versions (sha256) the controller
// wrote itself.
type Written struct {
	mu   sync.Mutex
	sums map[string]bool
}

// Add remembers a version; an empty sum is ignored.
func (w *Written) Add(sum string) {
	if sum == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sums == nil {
		w.sums = map[string]bool{}
	}
	w.sums[sum] = true
}

// Ours reports whether the controller wrote this version.
func (w *Written) Ours(sum string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sums[sum]
}
