package bwrap

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/planfacts"
)

// requireWall skips a test that needs a usable bubblewrap, or fails it when
// ADDONWALL_E2E=required (CI), and returns bwrap's path.
func requireWall(t testing.TB) string {
	t.Helper()
	r := Probe(context.Background(), ProbeOptions{})
	if r.Usable {
		return r.Path
	}
	if os.Getenv("ADDONWALL_E2E") == "required" {
		t.Fatalf("ADDONWALL_E2E=required but bubblewrap cannot hold a wall here: %s: %s", r.Reason, r.Message)
	}
	t.Skipf("bubblewrap cannot hold a wall here (%s: %s)", r.Reason, r.Message)
	return ""
}

// testRoot is a fresh folder at its own real path outside /tmp, /var/tmp and
// /dev/shm, which the plan never binds from. ADDONWALL_TEST_ROOT overrides
// where it is made.
func testRoot(t testing.TB) string {
	t.Helper()
	base := os.Getenv("ADDONWALL_TEST_ROOT")
	if base == "" {
		if os.Geteuid() == 0 {
			base = "/var/lib/addonwall-test"
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatal(err)
			}
			base = filepath.Join(home, "addonwall-test")
		}
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func mkfile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// crowLayout is a small real Crow home for one add-on, "demo".
type crowLayout struct {
	root, home, crow, data, install, folder, checkout string
}

func newCrow(t testing.TB) crowLayout {
	root := testRoot(t)
	l := crowLayout{root: root, home: root + "/home", checkout: root + "/checkout"}
	l.crow = l.home + "/.crow"
	l.data = l.crow + "/data"
	l.install = l.crow + "/bundles/demo"
	l.folder = l.data + "/demo"
	mkfile(t, l.install+"/index.txt", "install-ok")
	mkfile(t, l.checkout+"/README", "checkout-ok")
	if err := os.MkdirAll(l.folder, 0o755); err != nil {
		t.Fatal(err)
	}
	return l
}

// planFor gathers real facts and builds a real plan for a command.
func (l crowLayout) planFor(t testing.TB, command string, args []string, mutate func(*planfacts.Request)) *plan.Plan {
	t.Helper()
	req := planfacts.Request{
		AddonID: "demo", UID: uint32(os.Geteuid()),
		CrowHome: l.crow, DataDir: l.data, Checkout: l.checkout, Home: l.home,
		Command: command, Args: args,
		Env:     plan.EnvInput{Controller: map[string]string{"PATH": "/usr/bin:/bin"}},
		Seccomp: true,
	}
	if mutate != nil {
		mutate(&req)
	}
	in, err := planfacts.Gather(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// allowAll is the smallest valid seccomp program: return ALLOW. The real
// filter is internal/seccomp's; these tests exercise the --seccomp path.
func allowAll() []byte {
	return insn(0x06, 0, 0, 0x7fff0000)
}

func insn(code uint16, jt, jf uint8, k uint32) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint16(b[0:2], code)
	b[2], b[3] = jt, jf
	binary.LittleEndian.PutUint32(b[4:8], k)
	return b
}
