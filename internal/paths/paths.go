// Package paths says where things are: the Crow home, Crow's data folder,
// the Crow checkout, the store and the controller's control socket, from
// flags first and the controller's own environment second.
package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Paths are the folders every command works on.
type Paths struct {
	// CrowHome is Crow's home ($CROW_HOME, default ~/.crow).
	CrowHome string
	// DataDir is Crow's data folder ($CROW_DATA_DIR, default ~/.crow/data;
	// it does not derive from CrowHome).
	DataDir string
	// Checkout is the Crow checkout ($CROW_APP_ROOT); empty when unknown.
	Checkout string
	// Store is the file-backed store (default <CrowHome>/addonwall/store).
	Store string
}

// Flags are the path flags as given on the command line; empty means unset.
type Flags struct {
	CrowHome, DataDir, Checkout, Store string
}

// Resolve applies flags, then the environment, then the defaults. Every
// path comes back absolute and cleaned.
func Resolve(f Flags, getenv func(string) string) (Paths, error) {
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return Paths{}, fmt.Errorf("finding the home folder for the default Crow home (set --crow-home or CROW_HOME): %w", err)
		}
	}
	pick := func(flag, env, def string) string {
		switch {
		case flag != "":
			return flag
		case env != "" && getenv(env) != "":
			return getenv(env)
		default:
			return def
		}
	}
	p := Paths{
		CrowHome: pick(f.CrowHome, "CROW_HOME", filepath.Join(home, ".crow")),
		DataDir:  pick(f.DataDir, "CROW_DATA_DIR", filepath.Join(home, ".crow", "data")),
		Checkout: pick(f.Checkout, "CROW_APP_ROOT", ""),
	}
	p.Store = pick(f.Store, "", filepath.Join(p.CrowHome, "addonwall", "store"))
	for _, s := range []*string{&p.CrowHome, &p.DataDir, &p.Checkout, &p.Store} {
		if *s == "" {
			continue
		}
		abs, err := filepath.Abs(*s)
		if err != nil {
			return Paths{}, fmt.Errorf("making %q absolute: %w", *s, err)
		}
		*s = abs
	}
	return p, nil
}

// StateDir is the controller's own folder in the Crow home.
func (p Paths) StateDir() string { return filepath.Join(p.CrowHome, "addonwall") }

// ControlSocket is the running controller's control socket (0600, owner
// only). It lives in the controller's own folder, never inside a tree a
// wall binds.
func (p Paths) ControlSocket() string { return filepath.Join(p.StateDir(), "control.sock") }

// NoticesFile is where notices go when Crow's database is absent.
func (p Paths) NoticesFile() string { return filepath.Join(p.StateDir(), "notices.jsonl") }

// AddonsFile is Crow's add-on registry.
func (p Paths) AddonsFile() string { return filepath.Join(p.CrowHome, "mcp-addons.json") }

// WallsFile is the owner's wall settings.
func (p Paths) WallsFile() string { return filepath.Join(p.CrowHome, "addon-walls.json") }

// BundlesDir holds the installed bundles.
func (p Paths) BundlesDir() string { return filepath.Join(p.CrowHome, "bundles") }

// InstallDir is one add-on's install folder.
func (p Paths) InstallDir(id string) string { return filepath.Join(p.BundlesDir(), id) }

// ProfilesFile is the registry's addon-profiles.json in the checkout, or
// empty when no checkout is known.
func (p Paths) ProfilesFile() string {
	if p.Checkout == "" {
		return ""
	}
	return filepath.Join(p.Checkout, "registry", "addon-profiles.json")
}

// CrowDB is Crow's database.
func (p Paths) CrowDB() string { return filepath.Join(p.DataDir, "crow.db") }

// ErrNoHost is returned when the host's name cannot be read.
var ErrNoHost = errors.New("cannot read this computer's host name")

// Namespace is the store namespace of this host's add-ons: the host name,
// lower-cased and cut to a DNS label, so a fleet's hosts never collide.
func Namespace(hostname func() (string, error)) (string, error) {
	h, err := hostname()
	if err != nil || h == "" {
		return "", fmt.Errorf("%w: %v", ErrNoHost, err)
	}
	return DNSLabel(h), nil
}

// DNSLabel turns a host name into a valid namespace name.
func DNSLabel(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(out) < 63; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		case c == '.':
			// A host name's first label names the host.
			i = len(s)
		default:
			out = append(out, '-')
		}
	}
	for len(out) > 0 && out[len(out)-1] == '-' {
		out = out[:len(out)-1]
	}
	for len(out) > 0 && out[0] == '-' {
		out = out[1:]
	}
	if len(out) == 0 {
		return "host"
	}
	return string(out)
}
