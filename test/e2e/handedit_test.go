package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonwall/addonwall/internal/e2eenv"
)

// An owner edits an AddonWall's file in the store by hand; the real
// controllers see it and write the condition back, and a broken edit is
// reported while the last good version keeps serving.
func TestHandEditOfAStoreFile(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	// The entry exists so the add-on can be prepared; the AddonWall itself
	// is written by hand (no managed-by annotation: the importer leaves it).
	entry := h.addon("hand", nil)
	h.write("mcp-addons.json", map[string]any{"hand": entry})
	file := filepath.Join(h.paths.Store, "walls.addonwall.dev", "addonwalls", testNS, "hand.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(filepath.Dir(file), ".hand.swp")
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	wall := func(choice string) string {
		return fmt.Sprintf(`# my own wall, written by hand
apiVersion: walls.addonwall.dev/v1alpha1
kind: AddonWall
metadata:
  name: hand
  namespace: %s
spec:
  installDir: %s
  launcher:
    command: /bin/sh
    transport: stdio
  ownerChoice: %s
`, testNS, h.paths.InstallDir("hand"), choice)
	}
	write(wall("walled"))
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, nil)
	w := h.waitWord("hand", "walled", 10*time.Second)
	if w.Annotations["walls.addonwall.dev/managed-by"] != "" {
		t.Fatal("the importer took over a hand-written AddonWall")
	}

	write(wall("notWalled"))
	w = h.waitWord("hand", "not walled (your choice)", time.Second)
	if c := readyReason(w.Status.Conditions); c != "OwnerChoice" {
		t.Fatalf("Ready condition reason %q, want OwnerChoice", c)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "# my own wall, written by hand") {
		t.Fatalf("the status write dropped the owner's comment:\n%s", b)
	}

	// A bad enum: refused and reported with the file and the field; the
	// controller keeps running on the last good version (the good edit
	// below is still taken).
	write(strings.Replace(wall("notWalled"), "transport: stdio", "transport: carrier-pigeon", 1))
	eventually(t, 2*time.Second, "the refused hand edit is reported", func() (bool, string) {
		out, _ := h.cli("get", "addonwalls")
		return strings.Contains(out, "hand.yaml") && strings.Contains(out, "spec.launcher.transport"), out
	})
	// Positive control: a good edit after the bad one is taken.
	write(wall("walled"))
	h.waitWord("hand", "walled", time.Second)
}

func readyReason(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Type == "Ready" {
			return c.Reason
		}
	}
	return ""
}
