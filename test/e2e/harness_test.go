// Package e2e runs the real controller (the same wiring as `addonwall
// run`) on temporary Crow homes and checks what an owner sees: status in
// the store, `addonwall get` output, notices, sessions through
// `addonwall connect`.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/cli"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/paths"
	"github.com/addonwall/addonwall/internal/runner"
	"github.com/addonwall/addonwall/internal/scheme"
	"github.com/addonwall/addonwall/internal/store"
)

const testNS = "testhost"

// home is one temporary Crow home with its data folder and store.
type home struct {
	t     *testing.T
	root  string
	paths paths.Paths
}

// newHome makes a Crow home. It cannot live under /tmp: a wall never
// binds anything there (host sockets live there), so a Crow home there
// could not run walled. It goes under $ADDONWALL_TEST_DIR, else the
// repository's .cache folder, in a short folder (the control socket's path
// must fit in a unix socket address).
func newHome(t *testing.T) *home {
	t.Helper()
	base := os.Getenv("ADDONWALL_TEST_DIR")
	if base == "" {
		base = filepath.Join(e2eenv.RepoRoot(t), ".cache", "e2e")
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(base, "aw")
	if err != nil {
		t.Fatal(err)
	}
	if sock := filepath.Join(root, "crow", "addonwall", "control.sock"); len(sock) > 100 {
		t.Fatalf("the test folder %s is too deep for a unix socket path; set ADDONWALL_TEST_DIR to a short folder", base)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	p := paths.Paths{
		CrowHome: filepath.Join(root, "crow"),
		DataDir:  filepath.Join(root, "data"),
		Store:    filepath.Join(root, "crow", "addonwall", "store"),
	}
	for _, d := range []string{p.CrowHome, p.DataDir, p.BundlesDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return &home{t: t, root: root, paths: p}
}

func (h *home) write(rel string, v any) {
	h.t.Helper()
	var data []byte
	switch x := v.(type) {
	case string:
		data = []byte(x)
	default:
		var err error
		if data, err = json.MarshalIndent(v, "", "  "); err != nil {
			h.t.Fatal(err)
		}
	}
	p := filepath.Join(h.paths.CrowHome, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		h.t.Fatal(err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		h.t.Fatal(err)
	}
}

// addon installs a bundle folder with a manifest and returns its entry.
func (h *home) addon(id string, manifest map[string]any) map[string]any {
	h.t.Helper()
	if manifest == nil {
		manifest = map[string]any{}
	}
	manifest["id"] = id
	manifest["name"] = id
	h.write(filepath.Join("bundles", id, "manifest.json"), manifest)
	return map[string]any{"command": "/bin/sh", "args": []string{"-c", "cat"}}
}

// run starts the controller with the given environment until the test ends.
func (h *home) run(env map[string]string, tweak func(*runner.Options)) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	o := runner.Options{
		Paths:       h.paths,
		Namespace:   testNS,
		MetricsAddr: "0",
		HealthAddr:  "0",
		Getenv:      func(k string) string { return env[k] },
		Log:         testr.NewWithOptions(h.t, testr.Options{Verbosity: 0}),
		Ready:       ready,
	}
	if tweak != nil {
		tweak(&o)
	}
	done := make(chan struct{})
	var runErr error
	go func() { runErr = runner.Run(ctx, o); close(done) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
			if runErr != nil {
				h.t.Errorf("the controller ended with an error: %v", runErr)
			}
		case <-time.After(20 * time.Second):
			h.t.Error("the controller did not stop within 20 s of SIGTERM's equivalent")
		}
	})
	select {
	case <-ready:
	case <-done:
		h.t.Fatalf("the controller stopped at start: %v", runErr)
	case <-time.After(30 * time.Second):
		h.t.Fatal("the controller's caches did not sync in 30 s")
	}
}

// reader reads the store directly, as the CLI does.
func (h *home) reader() client.Reader {
	h.t.Helper()
	sch, err := scheme.New()
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := store.Open(h.paths.Store, sch, store.ReadOnly(), store.WithoutFileWatch())
	if err != nil {
		h.t.Fatal(err)
	}
	return st.Client()
}

func (h *home) wall(id string) (*wallsv1.AddonWall, error) {
	var w wallsv1.AddonWall
	err := h.reader().Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: id}, &w)
	return &w, err
}

// eventually polls cond every 20 ms until it holds or the time is up.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		if state != "" {
			last = state
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last seen: %s", what, within, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWord waits until the add-on's status word is want.
func (h *home) waitWord(id, want string, within time.Duration) *wallsv1.AddonWall {
	h.t.Helper()
	var got *wallsv1.AddonWall
	eventually(h.t, within, "add-on "+id+" reads "+want, func() (bool, string) {
		w, err := h.wall(id)
		if err != nil {
			return false, err.Error()
		}
		got = w
		return w.Status.Word == want && w.Status.ObservedGeneration == w.Generation,
			"word " + w.Status.Word + ", reason " + w.Status.Reason
	})
	return got
}

// cli runs an addonwall command against this home and returns its output.
func (h *home) cli(args ...string) (string, error) {
	h.t.Helper()
	root := cli.NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--crow-home", h.paths.CrowHome, "--data-dir", h.paths.DataDir, "--store", h.paths.Store, "-n", testNS))
	err := root.Execute()
	return out.String(), err
}

// getLine returns the `addonwall get addonwalls` line of an add-on.
func (h *home) getLine(id string, extra ...string) string {
	h.t.Helper()
	out, err := h.cli(append([]string{"get", "addonwalls"}, extra...)...)
	if err != nil {
		h.t.Fatalf("addonwall get: %v\n%s", err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == id {
			return l
		}
	}
	h.t.Fatalf("addonwall get shows no line for %s:\n%s", id, out)
	return ""
}
