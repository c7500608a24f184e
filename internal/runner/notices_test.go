package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/decide"
	"github.com/addonwall/addonwall/internal/notice"
	"github.com/addonwall/addonwall/internal/owner"
	"github.com/addonwall/addonwall/internal/paths"
	"github.com/addonwall/addonwall/internal/profile"
)

// TestMarkerWriteDoesNotSwallowAnOutsideEdit: an owner's edit of
// addon-walls.json that lands just before the controller sets a boot
// marker (and before the importer read it) is still announced as changed
// outside Crow, once; with no such edit, setting the marker announces
// nothing.
func TestMarkerWriteDoesNotSwallowAnOutsideEdit(t *testing.T) {
	changedOutside := func(home string) int {
		t.Helper()
		ns, err := notice.List(home)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range ns {
			if strings.Contains(x.Title, "changed outside Crow") {
				n++
			}
		}
		return n
	}
	setup := func(t *testing.T) (*notices, paths.Paths) {
		root := t.TempDir()
		p := paths.Paths{CrowHome: filepath.Join(root, "crow"), DataDir: filepath.Join(root, "data")}
		for _, d := range []string{p.CrowHome, p.DataDir} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		sw := decide.ReadSwitches(func(k string) string { return map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}[k] })
		n := &notices{o: Options{Paths: p, Log: logr.Discard()}, sw: sw, written: &owner.Written{}}
		// The importer's first read: no file yet.
		n.observe(context.Background(), profile.Home{Walls: &crowhome.Walls{}})
		return n, p
	}

	t.Run("control: no outside edit", func(t *testing.T) {
		n, p := setup(t)
		if err := n.markAnnounced(context.Background(), crowhome.AnnounceWallsOn); err != nil {
			t.Fatal(err)
		}
		w, err := crowhome.ReadWalls(p.WallsFile())
		if err != nil || w.Announced[crowhome.AnnounceWallsOn].IsZero() {
			t.Fatalf("the marker was not set: %v %+v", err, w)
		}
		// The importer then reads the controller's own version.
		n.observe(context.Background(), profile.Home{Walls: w})
		if got := changedOutside(p.CrowHome); got != 0 {
			t.Fatalf("%d changed-outside notes with no outside edit, want 0", got)
		}
	})

	t.Run("an edit the importer has not read yet", func(t *testing.T) {
		n, p := setup(t)
		edit := `{"version":1,"addons":{"kb":{"choice":"notWalled","changedAt":"2026-11-29T00:00:00Z"}},"announced":{}}`
		if err := os.WriteFile(p.WallsFile(), []byte(edit), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := n.markAnnounced(context.Background(), crowhome.AnnounceWallsOn); err != nil {
			t.Fatal(err)
		}
		w, err := crowhome.ReadWalls(p.WallsFile())
		if err != nil || w.Addons["kb"].Choice != crowhome.ChoiceNotWalled || w.Announced[crowhome.AnnounceWallsOn].IsZero() {
			t.Fatalf("the marker write lost the owner's edit or the marker: %v %+v", err, w)
		}
		// The importer only ever reads the merged version.
		n.observe(context.Background(), profile.Home{Walls: w})
		if got := changedOutside(p.CrowHome); got != 1 {
			t.Fatalf("%d changed-outside notes, want exactly 1", got)
		}
	})
}
