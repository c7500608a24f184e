package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pin(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestResolve(t *testing.T) {
	install := t.TempDir()
	run := filepath.Join(install, "run.sh")
	if err := os.WriteFile(run, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := pin(t, run)

	// Positive controls.
	if r, err := Resolve("sh", install, ""); err != nil || !strings.HasPrefix(r.Path, "/") {
		t.Fatalf("a bare name from the trusted folders: %+v %v", r, err)
	}
	if r, err := Resolve("./run.sh", install, good); err != nil || r.Path != run {
		t.Fatalf("a pinned relative launcher: %+v %v", r, err)
	}
	if _, err := Resolve("/bin/sh", install, ""); err != nil {
		t.Fatalf("a root-owned absolute command: %v", err)
	}

	refused := map[string]struct{ cmd, pin string }{
		"no command":                             {"", ""},
		"a .. element":                           {"/usr/bin/../bin/sh", ""},
		"relative without a pin":                 {"./run.sh", ""},
		"relative with a wrong pin":              {"./run.sh", strings.Repeat("0", 64)},
		"relative leaving the folder":            {"../" + filepath.Base(install) + "/run.sh", good},
		"a bare name not in the trusted folders": {"no-such-launcher-anywhere", ""},
	}
	for name, c := range refused {
		if _, err := Resolve(c.cmd, install, c.pin); err == nil {
			t.Errorf("%s (%q) was accepted", name, c.cmd)
		}
	}

	// A launcher that changed since it was pinned is refused.
	if err := os.WriteFile(run, []byte("#!/bin/sh\necho changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("./run.sh", install, good); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("a changed launcher must not match its pin: %v", err)
	}
}

// An absolute command that someone other than root owns runs only pinned.
func TestUserOwnedAbsoluteNeedsAPin(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "server")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(p, dir, ""); err == nil {
		t.Fatal("an unpinned user-owned absolute command was accepted")
	}
	if _, err := Resolve(p, dir, pin(t, p)); err != nil {
		t.Fatalf("the same command, pinned: %v", err)
	}
}
