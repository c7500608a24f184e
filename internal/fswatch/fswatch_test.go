package fswatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func start(t *testing.T, setup func(w *Watcher)) chan struct{} {
	t.Helper()
	w, err := New(logr.Discard(), 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	setup(w)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := make(chan struct{}, 1)
	go func() { _ = w.Run(ctx, out) }()
	return out
}

func expectHint(t *testing.T, out chan struct{}, what string) {
	t.Helper()
	select {
	case <-out:
	case <-time.After(2 * time.Second):
		t.Fatalf("no hint after %s", what)
	}
}

func expectQuiet(t *testing.T, out chan struct{}, what string) {
	t.Helper()
	select {
	case <-out:
		t.Fatalf("unexpected hint after %s", what)
	case <-time.After(150 * time.Millisecond):
	}
}

func TestFileSavedByRenameAndCreatedLater(t *testing.T) {
	home := t.TempDir()
	target := filepath.Join(home, "crow", "addon-walls.json")
	out := start(t, func(w *Watcher) { w.File(target) })

	// The folder and the file appear after the watch started.
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	expectHint(t, out, "creating the folder on the way")
	if err := os.WriteFile(target, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectHint(t, out, "creating the file")

	// An editor saves by writing a temp file and renaming it over.
	tmp := target + ".swp"
	if err := os.WriteFile(tmp, []byte(`{"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	expectHint(t, out, "a save by rename")

	// A second rename-save: the watch survived the first.
	if err := os.WriteFile(tmp, []byte(`{"version":1,"addons":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	expectHint(t, out, "a second save by rename")

	// A file beside it that nobody asked about gives no hint.
	if err := os.WriteFile(filepath.Join(filepath.Dir(target), "other.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expectQuiet(t, out, "writing an unrelated file")
}

func TestTreeSeesManifestsOfNewBundles(t *testing.T) {
	bundles := t.TempDir()
	out := start(t, func(w *Watcher) { w.Tree(bundles) })

	dir := filepath.Join(bundles, "kb")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	expectHint(t, out, "a new bundle folder")
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectHint(t, out, "a manifest written in the new bundle")
	// Three levels down is out of scope.
	deep := filepath.Join(dir, "server", "lib")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	expectHint(t, out, "a folder inside the bundle")
	if err := os.WriteFile(filepath.Join(deep, "x.js"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expectQuiet(t, out, "a write three levels down")
}

func TestBurstIsOneHint(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "mcp-addons.json")
	w, err := New(logr.Discard(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	w.File(f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan struct{}, 1)
	go func() { _ = w.Run(ctx, out) }()

	const writes = 20
	for i := 0; i < writes; i++ {
		if err := os.WriteFile(f, []byte{byte('0' + i%10)}, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Count the hints the burst gives. Within one settle window it is one;
	// a heavily loaded machine may split the burst once, never into many.
	hints := 0
	deadline := time.After(2 * time.Second)
	for done := false; !done; {
		select {
		case <-out:
			hints++
		case <-deadline:
			done = true
		}
	}
	if hints < 1 || hints > 2 {
		t.Fatalf("%d writes in a burst gave %d hints, want 1 (2 at most on a loaded machine)", writes, hints)
	}
}
