// Package demo makes a demo Crow home with real add-ons from npm — one
// walled, one not walled by the owner's choice, one that shares Crow's
// database, one off with a Fix-it card — runs the controller on it, and
// talks MCP to the walled one through `addonwall connect`.
package demo

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/addonwall/addonwall/internal/paths"
)

//go:embed home/package.json home/package-lock.json
var npmFiles embed.FS

// Add-on ids of the demo.
const (
	IDNotes      = "notes"
	IDEverything = "everything"
	IDMemory     = "memory"
	IDBroken     = "broken"
)

// Home is a demo Crow home.
type Home struct {
	Root  string
	Paths paths.Paths
	// Notes is the folder the notes add-on is granted, read-only.
	Notes string
}

// Build makes the demo home under root, replacing an earlier one. npm
// packages are installed once into <root>/../npm and copied into each
// bundle (a copy, not hard links: a file with several names is masked).
func Build(ctx context.Context, root string, log io.Writer) (*Home, error) {
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("removing the earlier demo home %s: %w", root, err)
	}
	h := &Home{Root: root, Notes: filepath.Join(root, "notes")}
	h.Paths = paths.Paths{
		CrowHome: filepath.Join(root, "crow"),
		DataDir:  filepath.Join(root, "data"),
		Checkout: filepath.Join(root, "checkout"),
		Store:    filepath.Join(root, "crow", "addonwall", "store"),
	}
	for _, d := range []string{h.Paths.CrowHome, h.Paths.DataDir, h.Notes, filepath.Join(h.Paths.Checkout, "registry")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	modules, err := installNPM(ctx, filepath.Join(filepath.Dir(root), "npm"), log)
	if err != nil {
		return nil, err
	}
	files := map[string]string{
		filepath.Join(h.Notes, "hello.txt"): "Hello from a folder the owner granted to the notes add-on.\n",
		filepath.Join(h.Notes, ".env"):      "NOTES_API_TOKEN=this-must-never-be-readable-from-inside-the-wall\n",
	}
	for p, content := range files {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	entry := func(pkg string, extra ...string) map[string]any {
		args := append([]string{filepath.Join("node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")}, extra...)
		return map[string]any{"command": "node", "args": args}
	}
	notes := entry("server-filesystem", h.Notes)
	notes["env"] = map[string]string{"NOTES_DIR": h.Notes}
	addons := map[string]any{
		IDNotes:      notes,
		IDEverything: entry("server-everything"),
		IDMemory:     entry("server-memory"),
		IDBroken:     entry("server-memory"),
	}
	manifests := map[string]map[string]any{
		IDNotes: {
			"server":   map[string]any{"command": "node", "envKeys": []string{"NOTES_DIR"}},
			"env_vars": []any{map[string]any{"name": "NOTES_DIR", "description": "the folder of notes to serve"}},
			"sandbox":  map[string]any{"network": "none", "files": map[string]any{"read": []string{"NOTES_DIR"}}},
		},
		IDEverything: {"sandbox": map[string]any{"network": "none"}},
		IDMemory:     {"sandbox": map[string]any{"network": "none"}},
		// "intranet" is not a network the wall knows: this add-on is off,
		// and its card names the file and the key.
		IDBroken: {"sandbox": map[string]any{"network": "intranet"}},
	}
	for id, m := range manifests {
		m["id"], m["name"] = id, id
		dir := h.Paths.InstallDir(id)
		if err := writeJSON(filepath.Join(dir, "manifest.json"), m); err != nil {
			return nil, err
		}
		if err := copyTree(modules, filepath.Join(dir, "node_modules")); err != nil {
			return nil, fmt.Errorf("copying the npm packages into %s: %w", dir, err)
		}
	}
	if err := writeJSON(h.Paths.AddonsFile(), addons); err != nil {
		return nil, err
	}
	walls := map[string]any{"version": 1, "addons": map[string]any{
		IDEverything: map[string]any{"choice": "notWalled", "changedAt": time.Now().UTC().Format(time.RFC3339)},
	}}
	if err := writeJSON(h.Paths.WallsFile(), walls); err != nil {
		return nil, err
	}
	profiles := map[string]any{IDMemory: map[string]any{"crowDb": true, "storage": false, "firstParty": true}}
	if err := writeJSON(filepath.Join(h.Paths.Checkout, "registry", "addon-profiles.json"), profiles); err != nil {
		return nil, err
	}
	return h, nil
}

// installNPM installs the demo's npm packages into dir once (npm ci from
// the embedded lock file) and returns its node_modules.
func installNPM(ctx context.Context, dir string, log io.Writer) (string, error) {
	modules := filepath.Join(dir, "node_modules")
	stamp := filepath.Join(dir, ".installed")
	lock, err := npmFiles.ReadFile("home/package-lock.json")
	if err != nil {
		return "", err
	}
	if old, err := os.ReadFile(stamp); err == nil && string(old) == string(lock) {
		return modules, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := npmFiles.ReadFile("home/" + f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(log, "installing the demo's MCP servers from npm into %s ...\n", dir)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm ci in %s (is npm installed and the npm registry reachable?): %w", dir, err)
	}
	if err := os.WriteFile(stamp, lock, 0o600); err != nil {
		return "", err
	}
	return modules, nil
}

func writeJSON(p string, v any) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(p, append(b, '\n'), 0o600)
}

// copyTree copies a folder of regular files, folders and symlinks.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case fi.Mode().IsRegular():
			return copyFile(p, target, fi.Mode().Perm())
		default:
			return errors.New("unexpected file type at " + p)
		}
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
