package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := wallsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// openStore opens a store in a fresh folder (or dir, if given) and
// closes it at the end of the test.
func openStore(t testing.TB, dir string, opts ...Option) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	var log logr.Logger
	if tt, ok := t.(*testing.T); ok {
		log = testr.NewWithOptions(tt, testr.Options{Verbosity: 0})
	} else {
		log = logr.Discard()
	}
	s, err := Open(dir, newScheme(t), append([]Option{WithLogger(log)}, opts...)...)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testWall(ns, name string) *wallsv1.AddonWall {
	return &wallsv1.AddonWall{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: wallsv1.AddonWallSpec{
			InstallDir: "/home/crow/.crow/bundles/" + name,
			Launcher: wallsv1.Launcher{
				Command: "node",
				Args:    []string{"server/index.js"},
			},
		},
	}
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// writeFile writes a file the way an owner would with an editor that
// saves in place (truncate, then write).
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
