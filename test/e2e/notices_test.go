package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/e2eenv"
)

func (h *home) notices() string {
	b, _ := os.ReadFile(filepath.Join(h.paths.StateDir(), "notices.jsonl"))
	return string(b)
}

// CROW-NOTES items 58, 59 and 62: the boot notices, the once-per-computer
// marker set after delivery, and silence when walls are off.
func TestBootNotices(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	h.write("mcp-addons.json", map[string]any{"kb": h.addon("kb", nil), "media": h.addon("media", nil)})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{"media": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, nil)
	eventually(t, 40*time.Second, "both boot notices", func() (bool, string) {
		n := h.notices()
		return strings.Contains(n, "Some add-ons are not walled") && strings.Contains(n, "Add-ons now run inside walls on this computer"), n
	})
	if n := h.notices(); !strings.Contains(n, "media") {
		t.Fatalf("the per-boot note must name the unwalled add-on: %s", n)
	}
	eventually(t, 5*time.Second, "the wallsOn marker", func() (bool, string) {
		w, err := crowhome.ReadWalls(h.paths.WallsFile())
		if err != nil {
			return false, err.Error()
		}
		_, ok := w.Announced[crowhome.AnnounceWallsOn]
		return ok, "no marker"
	})
}

func TestWallsOffSendNothing(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	h.write("mcp-addons.json", map[string]any{"kb": h.addon("kb", nil)})
	h.run(nil, nil)
	h.waitWord("kb", "not walled (switched off for this computer)", 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	if n := h.notices(); n != "" {
		t.Fatalf("walls off and no kill switch must send nothing, sent: %s", n)
	}
}

func TestKillSwitchNotice(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	h.write("mcp-addons.json", map[string]any{"kb": h.addon("kb", nil)})
	h.run(map[string]string{"CROW_ADDON_WALLS": "off", "CROW_ADDON_WALLS_DEFAULT": "walled"}, nil)
	eventually(t, 15*time.Second, "the kill-switch notice", func() (bool, string) {
		n := h.notices()
		return strings.Contains(n, "Add-on walls are switched off by the operator"), n
	})
	if n := h.notices(); strings.Contains(n, "Some add-ons are not walled") {
		t.Fatalf("the kill-switch notice replaces the per-boot note on the first boot: %s", n)
	}
}
