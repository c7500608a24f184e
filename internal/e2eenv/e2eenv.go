// Package e2eenv decides, for tests that need real tools (bubblewrap,
// docker, node), whether a missing tool skips the test or fails it. With
// ADDONWALL_E2E=required (as CI sets it) a missing tool is a failure, so a
// green run cannot hide a test that never ran.
package e2eenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Required reports whether end-to-end tests must run.
func Required() bool { return os.Getenv("ADDONWALL_E2E") == "required" }

// Need skips or fails the test when ok is false.
func Need(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if Required() {
		t.Fatalf("ADDONWALL_E2E=required, but %s", what)
	}
	t.Skipf("skipping: %s (set ADDONWALL_E2E=required to make this a failure)", what)
}

// Bwrap returns the path of bubblewrap, or skips/fails.
func Bwrap(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("bwrap")
	Need(t, err == nil, "bubblewrap (bwrap) is not installed")
	return p
}

// Node returns the path of node, or skips/fails.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	Need(t, err == nil, "node is not installed")
	return p
}

// Docker skips or fails unless a Docker engine answers.
func Docker(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := exec.CommandContext(ctx, "docker", "info").Run()
	Need(t, err == nil, "no Docker engine answers (start dockerd)")
}

// RepoRoot is the repository's top folder.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find the repository root")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// NodeModules returns test/npm/node_modules (the real MCP servers from
// npm), or skips/fails when `make test` has not installed them.
func NodeModules(t testing.TB) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), "test", "npm", "node_modules")
	_, err := os.Stat(filepath.Join(p, "@modelcontextprotocol", "server-filesystem", "package.json"))
	Need(t, err == nil, "the MCP servers from npm are not installed (run: make npm)")
	return p
}
