package owner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/fixit"
)

func newChoices(t *testing.T) (*Choices, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "addon-walls.json")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return &Choices{WallsFile: file, Failures: fixit.New(func() time.Time { return now }), Written: &Written{},
		Now: func() time.Time { return now }}, file
}

func choiceOf(t *testing.T, file, id string) crowhome.Choice {
	t.Helper()
	w, err := crowhome.ReadWalls(file)
	if err != nil {
		t.Fatal(err)
	}
	return w.Addons[id].Choice
}

func TestUnwallTakesTheIDFromTheRecord(t *testing.T) {
	c, file := newChoices(t)
	ref, _, err := c.Failures.Raise("kb", "WallFailed")
	if err != nil {
		t.Fatal(err)
	}

	// Forged and stale refs change nothing: the file is not even created.
	for _, forged := range []string{"kb", "", "0123456789abcdef0123456789abcdef", ref + "0"} {
		if _, err := c.Unwall(forged); !errors.Is(err, fixit.ErrUnknownRef) {
			t.Fatalf("forged ref %q: %v", forged, err)
		}
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a forged ref wrote addon-walls.json: %v", err)
	}

	// Positive control: the live ref unwalls the add-on its record names.
	id, err := c.Unwall(ref)
	if err != nil || id != "kb" {
		t.Fatalf("unwall: %q %v", id, err)
	}
	if got := choiceOf(t, file, "kb"); got != crowhome.ChoiceNotWalled {
		t.Fatalf("choice after unwall: %q", got)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("addon-walls.json mode: %v %v", fi.Mode(), err)
	}
	sum, _ := crowhome.Fingerprint(file)
	if !c.Written.Ours(sum) {
		t.Fatal("the controller's own write is not remembered as its own")
	}
	// A card is used once.
	if _, err := c.Unwall(ref); !errors.Is(err, fixit.ErrUnknownRef) {
		t.Fatalf("second use of a card: %v", err)
	}

	// Wall it again can only write walled.
	if err := c.Wall("kb"); err != nil {
		t.Fatal(err)
	}
	if got := choiceOf(t, file, "kb"); got != crowhome.ChoiceWalled {
		t.Fatalf("choice after wall: %q", got)
	}
	if err := c.Wall("../kb"); err == nil {
		t.Fatal("an id that is not an add-on id must be refused")
	}
	// An edit made outside Crow is not ours.
	if err := os.WriteFile(file, []byte(`{"version":1,"addons":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sum, _ = crowhome.Fingerprint(file)
	if c.Written.Ours(sum) {
		t.Fatal("an outside edit was taken for the controller's own")
	}
}
