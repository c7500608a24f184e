package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/addonwall/addonwall/internal/e2eenv"
)

// While the controller runs, an edit of addon-walls.json, a manifest or
// mcp-addons.json changes the status within a second; removing an entry
// removes its AddonWall; a broken file turns only its add-on off, naming
// the file and the key.
func TestCrowHomeEditsReachStatus(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	addons := map[string]any{"kb": h.addon("kb", nil), "media": h.addon("media", nil)}
	h.write("mcp-addons.json", addons)
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, nil)
	h.waitWord("kb", "walled", 10*time.Second)
	h.waitWord("media", "walled", 10*time.Second)

	// addon-walls.json: the owner's choice, written outside Crow.
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{"kb": map[string]any{"choice": "notWalled", "changedAt": "2026-11-29T00:00:00Z"}}})
	h.waitWord("kb", "not walled (your choice)", time.Second)
	h.waitWord("media", "walled", time.Second) // the other add-on is untouched

	// A broken manifest turns only that add-on off, naming the file and key.
	h.write(filepath.Join("bundles", "media", "manifest.json"), `{"id":"media","name":"media","sandbox":{"network":"intranet"}}`)
	w := h.waitWord("media", "off: it could not run inside its wall", time.Second)
	p := w.Spec.InputProblem
	if p == nil || !strings.HasSuffix(p.File, filepath.Join("bundles", "media", "manifest.json")) || !strings.Contains(p.Key, "network") {
		t.Fatalf("the reason must name the manifest and the key: %+v", p)
	}
	if w.Status.Failure == nil || !strings.Contains(w.Status.Failure.Message, "manifest.json") {
		t.Fatalf("the card must name the file: %+v", w.Status.Failure)
	}
	h.waitWord("kb", "not walled (your choice)", time.Second)

	// Fixing the manifest brings it back.
	h.write(filepath.Join("bundles", "media", "manifest.json"), `{"id":"media","name":"media","sandbox":{"network":"none"}}`)
	h.waitWord("media", "walled", time.Second)

	// A bad entry in mcp-addons.json turns only that add-on off.
	bad := h.addon("media", nil)
	bad["env"] = map[string]any{"BAD NAME": "x"}
	addons["media"] = bad
	h.write("mcp-addons.json", addons)
	w = h.waitWord("media", "off: it could not run inside its wall", time.Second)
	if p := w.Spec.InputProblem; p == nil || !strings.HasSuffix(p.File, "mcp-addons.json") || !strings.Contains(p.Key, "media") {
		t.Fatalf("the reason must name mcp-addons.json and the entry: %+v", p)
	}
	h.waitWord("kb", "not walled (your choice)", time.Second)

	// Removing the entry removes the AddonWall.
	delete(addons, "media")
	h.write("mcp-addons.json", addons)
	eventually(t, time.Second, "media's AddonWall is removed", func() (bool, string) {
		_, err := h.wall("media")
		return apierrors.IsNotFound(err), errString(err)
	})

	// mcp-addons.json broken as a whole: the last good state is kept.
	h.write("mcp-addons.json", `{"kb": {"command": "/bin/sh"`)
	time.Sleep(300 * time.Millisecond)
	if w, err := h.wall("kb"); err != nil || w.Status.Word != "not walled (your choice)" {
		t.Fatalf("a broken mcp-addons.json must keep the last good state: %v %+v", err, w.Status)
	}
	// The notice of the outside edit went out (no crow.db here: the file).
	eventually(t, 20*time.Second, "the settings-changed notice", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(h.paths.StateDir(), "notices.jsonl"))
		return strings.Contains(string(b), "Add-on wall settings were changed outside Crow"), string(b)
	})
}

func errString(err error) string {
	if err == nil {
		return "still there"
	}
	return err.Error()
}
