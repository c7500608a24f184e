// Package bench measures addonwall where users feel it: connect → MCP
// initialize, walled against unwalled and against a peer sandbox (srt) in
// the same run; a hand edit of a store file → reconciled status; the
// controller's memory with 500 add-ons. `make bench` runs these with the
// store, relay and listener benchmarks and prints the figures as ratios.
package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/paths"
	"github.com/addonwall/addonwall/internal/runner"
	"github.com/addonwall/addonwall/internal/scheme"
	"github.com/addonwall/addonwall/internal/session"
	"github.com/addonwall/addonwall/internal/store"
)

const ns = "bench"

// bins holds the addonwall and probe binaries built once.
var bins struct{ addonwall, entry, probe string }

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		// Only benchmarks live here: a plain `go test ./...` builds nothing.
		os.Exit(m.Run())
	}
	// Not under /tmp: every wall binds the addonwall binary as its entry,
	// and a wall never binds anything from /tmp.
	root := repoRoot()
	if err := os.MkdirAll(filepath.Join(root, ".cache"), 0o755); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp(filepath.Join(root, ".cache"), "bench-bin")
	if err != nil {
		panic(err)
	}
	for name, pkg := range map[string]string{"addonwall": ".", "addonwall-entry": "./cmd/addonwall-entry", "probe": "./test/probe"} {
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir, cmd.Stderr = root, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := cmd.Run(); err != nil {
			panic(fmt.Sprintf("building %s: %v", name, err))
		}
	}
	bins.addonwall, bins.entry, bins.probe = filepath.Join(dir, "addonwall"), filepath.Join(dir, "addonwall-entry"), filepath.Join(dir, "probe")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// benchHome makes a Crow home outside /tmp (a wall never binds /tmp).
func benchHome(tb testing.TB) paths.Paths {
	tb.Helper()
	base := os.Getenv("ADDONWALL_TEST_DIR")
	if base == "" {
		base = filepath.Join(repoRoot(), ".cache", "bench")
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		tb.Fatal(err)
	}
	root, err := os.MkdirTemp(base, "b")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(root) })
	p := paths.Paths{CrowHome: filepath.Join(root, "crow"), DataDir: filepath.Join(root, "data"), Store: filepath.Join(root, "crow", "addonwall", "store")}
	for _, d := range []string{p.CrowHome, p.DataDir, p.BundlesDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	return p
}

func writeJSON(tb testing.TB, p string, v any) {
	tb.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// installProbe puts the probe binary into an add-on's install folder and
// returns its entry (./probe, pinned by sha256).
func installProbe(tb testing.TB, p paths.Paths, id string) map[string]any {
	tb.Helper()
	data, err := os.ReadFile(bins.probe)
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(p.InstallDir(id), "probe")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		tb.Fatal(err)
	}
	writeJSON(tb, filepath.Join(p.InstallDir(id), "manifest.json"), map[string]any{"id": id, "name": id})
	sum := sha256.Sum256(data)
	return map[string]any{"command": "./probe", "args": []string{"mcp"}, "command_sha256": hex.EncodeToString(sum[:])}
}

// runController runs the controller in this process until the benchmark ends.
func runController(tb testing.TB, p paths.Paths, env map[string]string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runner.Run(ctx, runner.Options{Paths: p, Namespace: ns, MetricsAddr: "0", HealthAddr: "0",
			Getenv: func(k string) string { return env[k] }, Log: logr.Discard(), Ready: ready,
			// This process is the test binary: the walls run the real one.
			WallPreparer: func(wp *session.WallPreparer) { wp.EntryBinary = bins.entry }})
	}()
	tb.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-done:
		tb.Fatal("the controller stopped at start")
	case <-time.After(60 * time.Second):
		tb.Fatal("the controller did not start in 60 s")
	}
}

func reader(tb testing.TB, p paths.Paths) client.Reader {
	tb.Helper()
	sch, err := scheme.New()
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(p.Store, sch, store.ReadOnly(), store.WithoutFileWatch())
	if err != nil {
		tb.Fatal(err)
	}
	return st.Client()
}

// waitAll waits until n add-ons are decided, each with the wanted word.
func waitAll(tb testing.TB, p paths.Paths, words map[string]string, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		var l wallsv1.AddonWallList
		ok := false
		if err := reader(tb, p).List(context.Background(), &l, client.InNamespace(ns)); err == nil && len(l.Items) == len(words) {
			ok = true
			for _, w := range l.Items {
				if want, named := words[w.Name]; w.Status.Mode == "" || (named && want != "" && w.Status.Word != want) {
					ok = false
				}
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the add-ons were not decided as wanted within %s", within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var _ = e2eenv.Required
