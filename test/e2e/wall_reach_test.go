package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/test/probe/report"
)

// What the probe, as a walled add-on, can read, write and connect to,
// beside the same probe unwalled by the owner's choice: every path the wall
// refuses is one the unwalled control reaches, so no refusal passes for
// want of a file.
//
// SECURITY-CASES: FS-01 (Crow's secrets, addon-walls.json, mcp-addons.json,
// ~/.ssh by absolute path), FS-02 (another add-on's data at its real path
// and through a second spelling of the data folder), FS-10 (writes into the
// read-only install folder), FS-14 (the control socket and docker's socket
// are not reachable), ENV-04 (an LD_PRELOAD in the add-on's own values
// never reaches bubblewrap: see TestProbeInsideTheWall's pid 1 check; here
// the add-on starts with it set).
func TestProbeReach(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	const canary = "canary-reach-6b1d0e"
	fakeHome := filepath.Join(h.root, "home")
	mkfile(t, filepath.Join(fakeHome, ".ssh", "id_rsa"), canary)
	mkfile(t, filepath.Join(h.paths.CrowHome, "secrets", "k"), canary)
	mkfile(t, filepath.Join(h.paths.DataDir, "other", "secret.txt"), canary)
	// A second spelling of the data folder.
	alias := filepath.Join(h.root, "dalias")
	if err := os.Symlink(h.paths.DataDir, alias); err != nil {
		t.Fatal(err)
	}
	tmpName := fmt.Sprintf("/tmp/addonwall-reach-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(tmpName) })

	entry := func(id string) map[string]any {
		e := h.installProbe(id, nil)
		e["env"] = map[string]string{
			"PROBE_NEEDLES": canary,
			// A loader variable the owner typed: the add-on gets it; it
			// must never reach bubblewrap, which runs before any namespace.
			"LD_PRELOAD": filepath.Join(h.paths.DataDir, id, "evil.so"),
		}
		mkfile(t, filepath.Join(h.paths.InstallDir(id), "README"), "own code")
		mkfile(t, filepath.Join(h.paths.DataDir, id, "own.txt"), "own data")
		return e
	}
	h.write("mcp-addons.json", map[string]any{"pw": entry("pw"), "pu": entry("pu")})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{
		"pu": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.runWalls(walledEnv(map[string]string{"HOME": fakeHome}), nil)
	h.waitWord("pw", "walled", 15*time.Second)
	h.waitWord("pu", "not walled (your choice)", 15*time.Second)

	secrets := []string{
		filepath.Join(h.paths.CrowHome, "secrets", "k"),
		h.paths.AddonsFile(),
		h.paths.WallsFile(),
		filepath.Join(fakeHome, ".ssh", "id_rsa"),
		filepath.Join(h.paths.DataDir, "other", "secret.txt"),
		filepath.Join(alias, "other", "secret.txt"),
		filepath.Join(h.paths.Store),
	}
	sockets := []string{"unix:" + h.paths.ControlSocket()}
	for _, s := range []string{"/run/docker.sock", "/var/run/docker.sock"} {
		if fi, err := os.Stat(s); err == nil && fi.Mode()&os.ModeSocket != 0 {
			sockets = append(sockets, "unix:"+s)
		}
	}
	probeIn := func(id string) map[string]any {
		own := filepath.Join(h.paths.DataDir, id)
		return map[string]any{
			"read":    append([]string{filepath.Join(h.paths.InstallDir(id), "README"), filepath.Join(own, "own.txt")}, secrets...),
			"write":   []string{filepath.Join(own, "w.txt"), filepath.Join(h.paths.InstallDir(id), "new.txt"), tmpName},
			"connect": sockets,
		}
	}
	in, err := h.probeOnce("pw", "walled", probeIn("pw"), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The wall's /tmp is its own: its write left nothing on the host.
	if _, err := os.Stat(tmpName); !os.IsNotExist(err) {
		t.Errorf("the walled add-on's write to %s reached the host's /tmp (%v)", tmpName, err)
	}
	out := h.probeControl("pu", "not walled (your choice)", probeIn("pu"))
	find := func(r *report.Report, op, target string) report.Path {
		for _, p := range r.Paths {
			if p.Op == op && p.Target == target {
				return p
			}
		}
		t.Fatalf("the probe made no %s of %s", op, target)
		return report.Path{}
	}

	// Its own code and data: readable inside (positive controls).
	for _, p := range []string{filepath.Join(h.paths.InstallDir("pw"), "README"), filepath.Join(h.paths.DataDir, "pw", "own.txt")} {
		if got := find(in, "read", p); !got.OK || got.Bytes == 0 {
			t.Errorf("the walled add-on cannot read its own %s: %+v", p, got)
		}
	}
	for _, p := range secrets {
		w := find(in, "read", p)
		c := find(out, "read", p)
		if w.OK {
			t.Errorf("the walled add-on read %s (%d bytes)", p, w.Bytes)
		}
		if !c.OK && c.Errno != "EISDIR" {
			t.Errorf("control: the unwalled add-on cannot read %s (%s): the refusal above proves nothing", p, c.Errno)
		}
	}
	// (The wall's entry holds the add-on's own environment, PROBE_NEEDLES
	// included: TestProbeInsideTheWall judges environments. Here only what
	// was read counts.)
	for _, n := range in.Needles {
		if strings.HasPrefix(n.Where, "read:") {
			t.Errorf("the canary turned up in the wall: %+v", n)
		}
	}
	hits := 0
	for _, n := range out.Needles {
		if strings.HasPrefix(n.Where, "read:") {
			hits++
		}
	}
	if hits == 0 {
		t.Error("control: the unwalled reads found no canary")
	}

	// Writes: its data folder yes, its code no; /tmp is the wall's own.
	if got := find(in, "write", filepath.Join(h.paths.DataDir, "pw", "w.txt")); !got.OK {
		t.Errorf("the walled add-on cannot write its data folder: %+v", got)
	}
	if got := find(in, "write", filepath.Join(h.paths.InstallDir("pw"), "new.txt")); got.OK {
		t.Error("the walled add-on wrote into its install folder")
	}
	if _, err := os.Stat(filepath.Join(h.paths.InstallDir("pw"), "new.txt")); err == nil {
		t.Error("a file appeared in the walled add-on's install folder")
	}
	if got := find(out, "write", filepath.Join(h.paths.InstallDir("pu"), "new.txt")); !got.OK {
		t.Errorf("control: the unwalled add-on cannot write its install folder: %+v", got)
	}
	if got := find(in, "write", tmpName); !got.OK {
		t.Errorf("the walled add-on has no /tmp of its own: %+v", got)
	}
	// Positive control: unwalled, the same write lands in the host's /tmp.
	if b, err := os.ReadFile(tmpName); err != nil || !strings.Contains(string(b), "addonwall-probe") {
		t.Errorf("control: the host's %s holds %q (%v)", tmpName, b, err)
	}

	// Sockets: none of the host's reachable from the wall; all from outside.
	for _, sock := range sockets {
		if got := find(in, "connect", sock); got.OK {
			t.Errorf("the walled add-on connected to %s", sock)
		}
		if got := find(out, "connect", sock); !got.OK {
			t.Errorf("control: the unwalled add-on cannot connect to %s (%s)", sock, got.Errno)
		}
	}
	if !slices.Contains(in.EnvNames, "LD_PRELOAD") {
		t.Logf("the add-on's own LD_PRELOAD did not reach it (names: %v)", in.EnvNames)
	}
}
