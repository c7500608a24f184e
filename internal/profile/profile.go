// Package profile turns the owner's files into AddonWall specs: what each
// add-on is, how it starts and what it may reach, from its mcp-addons.json
// entry, its manifest, the registry's addon-profiles.json, its compose
// file and addon-walls.json. Gather reads the files; Specs is pure.
package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/paths"
)

// Home is everything Gather read from a Crow home.
type Home struct {
	CrowHome string
	// Addons is mcp-addons.json; nil when the whole file could not be read.
	Addons *crowhome.AddonsFile
	// AddonsErr is why mcp-addons.json could not be read as a whole.
	AddonsErr error
	// Walls is addon-walls.json; nil when it could not be read.
	Walls *crowhome.Walls
	// WallsErr is why addon-walls.json could not be read.
	WallsErr error
	// Profiles is the registry's addon-profiles.json, nil when there is no
	// checkout or no file.
	Profiles map[string]crowhome.AddonProfile
	// ProfilesErr is why addon-profiles.json could not be read.
	ProfilesErr error
	// Bundles are the per-add-on files, by id.
	Bundles map[string]Bundle
}

// Bundle is what was read for one add-on.
type Bundle struct {
	// Manifest is nil when the bundle has none (or it failed).
	Manifest *crowhome.Manifest
	// ManifestErr is why the manifest could not be read.
	ManifestErr error
	// Compose is nil when the bundle has no compose file.
	Compose *crowhome.Compose
	// ComposeErr is why the compose file could not be read.
	ComposeErr error
	// Link says whether the add-on runs code from outside its install folder.
	Link crowhome.Link
}

// Gather reads the Crow home. It never stops at one bad file: every
// error is kept beside what it is about.
func Gather(p paths.Paths, trustedDirs []string) Home {
	h := Home{CrowHome: p.CrowHome, Bundles: map[string]Bundle{}}
	h.Addons, h.AddonsErr = crowhome.ReadAddons(p.AddonsFile())
	if errors.Is(h.AddonsErr, fs.ErrNotExist) {
		// No registry yet: a Crow home with no add-ons.
		h.Addons, h.AddonsErr = &crowhome.AddonsFile{Entries: map[string]crowhome.Entry{}}, nil
	}
	h.Walls, h.WallsErr = crowhome.ReadWalls(p.WallsFile())
	if p.Checkout != "" {
		pf := crowhome.ProfilesPath(p.Checkout)
		h.Profiles, h.ProfilesErr = crowhome.ReadProfiles(pf)
		if errors.Is(h.ProfilesErr, fs.ErrNotExist) {
			h.Profiles, h.ProfilesErr = nil, nil
		}
	}
	if h.Addons == nil {
		return h
	}
	for id, e := range h.Addons.Entries {
		h.Bundles[id] = gatherBundle(p, id, e, trustedDirs)
	}
	for id := range h.Addons.Problems {
		h.Bundles[id] = Bundle{}
	}
	return h
}

func gatherBundle(p paths.Paths, id string, e crowhome.Entry, trustedDirs []string) Bundle {
	var b Bundle
	mf := crowhome.ManifestPath(p.CrowHome, id)
	b.Manifest, b.ManifestErr = crowhome.ReadManifest(mf, id)
	if errors.Is(b.ManifestErr, fs.ErrNotExist) {
		b.Manifest, b.ManifestErr = nil, nil
	}
	if f, err := crowhome.GatherLinkFacts(p.CrowHome, id, e, trustedDirs); err == nil {
		b.Link = crowhome.Linked(p.CrowHome, id, e, f)
	}
	compose := ""
	install := p.InstallDir(id)
	if b.Manifest != nil && b.Manifest.ComposeFile != "" {
		compose = filepath.Join(install, filepath.Clean("/" + b.Manifest.ComposeFile)[1:])
	} else {
		for _, name := range []string{"docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml"} {
			if _, err := os.Lstat(filepath.Join(install, name)); err == nil {
				compose = filepath.Join(install, name)
				break
			}
		}
	}
	if compose != "" {
		b.Compose, b.ComposeErr = crowhome.ReadCompose(compose, e.Env.Values())
		if errors.Is(b.ComposeErr, fs.ErrNotExist) {
			b.Compose, b.ComposeErr = nil, nil
		}
	}
	return b
}

// Specs is the AddonWall spec of every add-on of the home, by id. It is
// pure. ok is false when mcp-addons.json could not be read as a whole: the
// caller must then keep the last good specs rather than delete them.
func Specs(h Home) (specs map[string]wallsv1.AddonWallSpec, ok bool) {
	if h.Addons == nil {
		return nil, false
	}
	specs = map[string]wallsv1.AddonWallSpec{}
	for id, fe := range h.Addons.Problems {
		specs[id] = wallsv1.AddonWallSpec{
			InstallDir:   filepath.Join(h.CrowHome, "bundles", id),
			InputProblem: problem(fe),
		}
	}
	for id, e := range h.Addons.Entries {
		specs[id] = spec(h, id, e)
	}
	return specs, true
}

func spec(h Home, id string, e crowhome.Entry) wallsv1.AddonWallSpec {
	b := h.Bundles[id]
	s := wallsv1.AddonWallSpec{
		InstallDir: filepath.Join(h.CrowHome, "bundles", id),
		Linked:     b.Link.Linked,
		Launcher: wallsv1.Launcher{
			Command:       e.Command,
			Args:          append([]string(nil), e.Args...),
			Cwd:           e.Cwd,
			EnvKeys:       e.Env.Keys(),
			Transport:     wallsv1.Transport(e.Transport),
			URL:           e.URL,
			CommandSHA256: e.CommandSHA256,
			NpxIntegrity:  e.NpxIntegrity,
		},
	}
	if s.Launcher.Transport == "" {
		s.Launcher.Transport = wallsv1.TransportStdio
	}
	if p, ok := h.Profiles[id]; ok {
		s.FirstParty = p.FirstParty
		s.Profile.CrowDb = p.CrowDb
		s.Profile.Storage = p.Storage
	}
	if h.Walls != nil {
		if c, ok := h.Walls.Addons[id]; ok {
			s.OwnerChoice = wallsv1.OwnerChoice(c.Choice)
		}
	}
	switch {
	case b.ManifestErr != nil:
		s.InputProblem = problem(b.ManifestErr)
	case h.WallsErr != nil:
		// The owner's choices cannot be read: no add-on runs on a guess.
		s.InputProblem = problem(h.WallsErr)
	case h.ProfilesErr != nil:
		s.InputProblem = problem(h.ProfilesErr)
	}
	if m := b.Manifest; m != nil {
		sb := m.Sandbox
		s.Profile.Network.Internet = sb.Network.Internet
		s.Profile.Network.Hosts = fields(sb.Network.Hosts, m, e)
		s.Profile.Files.Read = fields(sb.Files.Read, m, e)
		s.Profile.Files.Write = fields(sb.Files.Write, m, e)
		if sb.Files.OAuthDir != "" {
			f := fields([]string{sb.Files.OAuthDir}, m, e)[0]
			s.Profile.Files.OAuthDir = &f
		}
		s.Profile.OwnEnvFile = sb.OwnEnvFile
		s.Profile.Doors = sb.Doors
	}
	if c := b.Compose; c != nil {
		s.Profile.ComposePorts = composePorts(c)
	}
	return s
}

// fields names environment fields and says whether each value is one the
// owner typed: a value equal to the manifest's default is only the
// default (Crow's install copies defaults into the entry), and a field
// with no value is not owner-typed either.
func fields(names []string, m *crowhome.Manifest, e crowhome.Entry) []wallsv1.EnvField {
	if len(names) == 0 {
		return nil
	}
	defaults := map[string]*crowhome.EnvVar{}
	for i := range m.EnvVars {
		defaults[m.EnvVars[i].Name] = &m.EnvVars[i]
	}
	out := make([]wallsv1.EnvField, 0, len(names))
	for _, n := range names {
		v, set := e.Env.Get(n)
		typed := set && v != ""
		if d := defaults[n]; typed && d != nil && d.HasDefault && d.Default == v {
			typed = false
		}
		out = append(out, wallsv1.EnvField{Name: n, OwnerTyped: typed})
	}
	return out
}

func composePorts(c *crowhome.Compose) []wallsv1.ComposePort {
	var out []wallsv1.ComposePort
	for _, p := range c.Ports {
		if p.HostPort == 0 || (p.Protocol != "tcp" && p.Protocol != "udp") {
			continue
		}
		addr := p.HostIP
		if p.AllAddresses || addr == "" {
			addr = "0.0.0.0"
		}
		out = append(out, wallsv1.ComposePort{Address: addr, Port: int32(p.HostPort), Protocol: p.Protocol})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Address < out[j].Address
	})
	return out
}

// problem turns a reader's error into the spec's InputProblem, naming the
// file and the key. Reader errors never carry an environment value.
func problem(err error) *wallsv1.InputProblem {
	var fe *crowhome.FileError
	if errors.As(err, &fe) {
		return &wallsv1.InputProblem{File: fe.File, Key: fe.Key, Message: fe.Msg}
	}
	return &wallsv1.InputProblem{File: "", Message: fmt.Sprint(err)}
}
