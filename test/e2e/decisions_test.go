package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/runner"
)

// Each row is one Crow home and one seed rule (CROW-NOTES.md §6): the word
// must show in status and in `addonwall get`.
func TestSeedRulesShowTheirWord(t *testing.T) {
	e2eenv.Bwrap(t)
	type row struct {
		name    string
		item    string
		env     map[string]string
		choice  string // the owner's choice in addon-walls.json
		dotenv  string // a bundle .env
		noBwrap bool
		want    string
		mode    wallsv1.Mode
	}
	rows := []row{
		{name: "no switches", item: "1", want: "not walled (switched off for this computer)", mode: wallsv1.ModeNotWalled},
		{name: "default walled", item: "2", env: map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, want: "walled", mode: wallsv1.ModeWalled},
		{name: "default off", item: "3", env: map[string]string{"CROW_ADDON_WALLS_DEFAULT": "off"}, want: "not walled (switched off for this computer)", mode: wallsv1.ModeNotWalled},
		{name: "default typo", item: "4", env: map[string]string{"CROW_ADDON_WALLS_DEFAULT": "Walled "}, want: "not walled (switched off for this computer)", mode: wallsv1.ModeNotWalled},
		{name: "kill switch wins", item: "5", env: map[string]string{"CROW_ADDON_WALLS": "off", "CROW_ADDON_WALLS_DEFAULT": "walled"}, choice: "walled",
			want: "not walled (switched off by the operator)", mode: wallsv1.ModeNotWalled},
		{name: "owner's choice", item: "6", env: map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, choice: "notWalled",
			want: "not walled (your choice)", mode: wallsv1.ModeNotWalled},
		{name: "switch keys in a bundle .env are ignored", item: "7", env: map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"},
			dotenv: "CROW_ADDON_WALLS=off\nCROW_ADDON_WALLS_DEFAULT=off\n", want: "walled", mode: wallsv1.ModeWalled},
		{name: "no bubblewrap", item: "9", env: map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, noBwrap: true,
			want: "not walled on this computer; docker reachable", mode: wallsv1.ModeNotWalled},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			h := newHome(t)
			h.write("mcp-addons.json", map[string]any{"kb": h.addon("kb", nil)})
			if r.choice != "" {
				h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{"kb": map[string]any{"choice": r.choice, "changedAt": "2026-11-01T00:00:00Z"}}})
			}
			if r.dotenv != "" {
				h.write(filepath.Join("bundles", "kb", ".env"), r.dotenv)
			}
			h.run(r.env, func(o *runner.Options) {
				if r.noBwrap {
					o.BwrapPath = filepath.Join(h.root, "no-such-bwrap")
				}
			})
			w := h.waitWord("kb", r.want, 10*time.Second)
			if w.Status.Mode != r.mode {
				t.Fatalf("item %s: mode %s, want %s", r.item, w.Status.Mode, r.mode)
			}
			if line := h.getLine("kb"); !strings.Contains(line, r.want) {
				t.Fatalf("item %s: addonwall get shows %q, want the word %q", r.item, line, r.want)
			}
		})
	}
}

// A walled add-on the owner unwalls through its card's ref, and walls
// again (items 55–57); a forged ref changes nothing.
func TestOwnerChoicesThroughTheController(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	// A read grant whose value is only the manifest's default is refused
	// by the plan: the wall cannot be built, so the add-on is off.
	entry := h.addon("kb", map[string]any{
		"env_vars": []any{map[string]any{"name": "NOTES_DIR", "default": h.root}},
		"sandbox":  map[string]any{"files": map[string]any{"read": []string{"NOTES_DIR"}}},
	})
	entry["env"] = map[string]string{"NOTES_DIR": h.root}
	h.write("mcp-addons.json", map[string]any{"kb": entry})
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, nil)
	w := h.waitWord("kb", "off: it could not run inside its wall", 10*time.Second)
	if w.Status.Failure == nil || w.Status.Failure.Ref == "" {
		t.Fatalf("an add-on that is off must carry a Fix-it card: %+v", w.Status)
	}
	ref := w.Status.Failure.Ref

	// A forged ref and an id in place of a ref change nothing.
	for _, forged := range []string{"kb", strings.Repeat("0", 32)} {
		if out, err := h.cli("unwall", "--ref", forged); err == nil {
			t.Fatalf("unwall --ref %s was accepted: %s", forged, out)
		}
	}
	if _, err := os.Stat(h.paths.WallsFile()); !os.IsNotExist(err) {
		t.Fatalf("a forged ref wrote addon-walls.json (%v)", err)
	}

	// Positive control: the card's own ref unwalls the add-on it names.
	if out, err := h.cli("unwall", "--ref", ref); err != nil {
		t.Fatalf("unwall with the card's ref: %v\n%s", err, out)
	}
	h.waitWord("kb", "not walled (your choice)", 5*time.Second)
	fi, err := os.Stat(h.paths.WallsFile())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("addon-walls.json must be 0600: %v %v", fi, err)
	}
	if _, err := h.cli("unwall", "--ref", ref); err == nil {
		t.Fatal("a card's ref must work once")
	}

	// Wall it again: back under the wall (off again, since it still cannot run).
	if out, err := h.cli("wall", "kb"); err != nil {
		t.Fatalf("wall kb: %v\n%s", err, out)
	}
	h.waitWord("kb", "off: it could not run inside its wall", 5*time.Second)
}
