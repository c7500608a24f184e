package planfacts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/addonwall/addonwall/internal/plan"
)

// Describe reports what is at path: lstat of the path itself, its real path
// and the owner, mode, inode and size of what it resolves to. A path that
// does not exist, dangles or loops comes back with an empty Real and no
// error; an error means the facts could not be read (permission, I/O).
func Describe(path string) (plan.PathFacts, error) {
	f := plan.PathFacts{Path: path}
	if !filepath.IsAbs(path) || strings.IndexByte(path, 0) >= 0 {
		return f, nil // the plan refuses it by name
	}
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return f, nil
		}
		return f, fmt.Errorf("lstat %s: %w", path, err)
	}
	f.Kind = kindOf(lst.Mode)
	if f.Kind == plan.KindSymlink {
		link, err := os.Readlink(path)
		if err != nil {
			return f, fmt.Errorf("readlink %s: %w", path, err)
		}
		f.Link = link
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return f, nil
		}
		return f, fmt.Errorf("resolve %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(real, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return f, nil
		}
		return f, fmt.Errorf("lstat %s: %w", real, err)
	}
	f.Real = real
	f.RealKind = kindOf(st.Mode)
	f.ID = idOf(&st)
	f.UID = st.Uid
	f.Mode = st.Mode & 0o7777
	f.Nlink = uint64(st.Nlink)
	f.Size = st.Size
	return f, nil
}

// Chain describes every folder from "/" down to the folder holding real (a
// real path), in that order.
func Chain(real string) ([]plan.PathFacts, error) {
	if !filepath.IsAbs(real) || filepath.Clean(real) != real {
		return nil, fmt.Errorf("chain of %q: not a clean absolute path", real)
	}
	var dirs []string
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == "/" {
			break
		}
	}
	out := make([]plan.PathFacts, 0, len(dirs))
	for i := len(dirs) - 1; i >= 0; i-- {
		f, err := Describe(dirs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// System describes every system path the plan may bind.
func System() ([]plan.PathFacts, error) {
	var out []plan.PathFacts
	for _, p := range plan.SystemCandidates() {
		f, err := Describe(p)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// HomeHidden lists the names of the hidden top-level entries of home.
func HomeHidden(home string) ([]string, error) {
	entries, err := os.ReadDir(home)
	if err != nil {
		return nil, fmt.Errorf("list the owner's home %s: %w", home, err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// DirEntries lists a folder's entries with their kinds (no symlink followed).
func DirEntries(dir string) ([]plan.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	out := make([]plan.DirEntry, 0, len(entries))
	for _, e := range entries {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, e.Name()), &st); err != nil {
			return nil, fmt.Errorf("lstat %s: %w", filepath.Join(dir, e.Name()), err)
		}
		out = append(out, plan.DirEntry{Name: e.Name(), Kind: kindOf(st.Mode)})
	}
	return out, nil
}

// GrantRequest is one owner file field and its value.
type GrantRequest struct {
	Field      string
	Value      string
	OwnerTyped bool
}

// Request names everything Gather looks at. Paths are as configured; the
// command is already resolved (resolve-command) to an absolute path.
type Request struct {
	AddonID  string
	UID      uint32
	CrowHome string
	DataDir  string
	Checkout string
	Home     string
	Command  string
	Args     []string
	// Runtime is the runtime's install folder (node's prefix), or empty.
	Runtime string

	Read       []GrantRequest
	Write      []GrantRequest
	OAuthDir   *GrantRequest
	OwnEnvFile bool
	CrowDB     bool
	FirstParty bool
	Doors      bool
	// StateDirs are the core table's folder names for this add-on.
	StateDirs []string

	Env             plan.EnvInput
	ControllerPaths []string
	Seccomp         bool
	ProxyPort       int
	// Entry, when set, is the in-namespace entry of this spawn.
	Entry *EntryRequest
	// Limits bound every scan; zero means DefaultLimits.
	Limits Limits
}

// EntryRequest names the in-namespace entry: the addonwall binary (at its
// real path), its arguments and config, and the spawn's relay folder.
type EntryRequest struct {
	Binary   string
	Args     []string
	Config   []byte
	RelayDir string
}

// Gather reads every fact the plan needs for one spawn. Trees are scanned
// afresh each time, so a .env created since the last spawn is seen.
func Gather(ctx context.Context, req Request) (plan.Input, error) {
	lim := req.Limits
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	g := &gatherer{ctx: ctx, lim: lim, scans: map[string]plan.TreeScan{},
		wide: []string{req.Home, req.CrowHome, req.DataDir}}
	in := plan.Input{
		AddonID:         req.AddonID,
		UID:             req.UID,
		ControllerPaths: req.ControllerPaths,
		Env:             req.Env,
		Seccomp:         req.Seccomp,
		ProxyPort:       req.ProxyPort,
		Scans:           g.scans,
	}
	in.CrowHome = g.describe(req.CrowHome)
	in.DataDir = g.describe(req.DataDir)
	in.Home = g.describe(req.Home)
	if req.Checkout != "" {
		in.Checkout = g.describe(req.Checkout)
		g.scanDir(in.Checkout)
	}
	if g.err == nil && in.Home.Real != "" {
		in.HomeHidden, g.err = HomeHidden(in.Home.Real)
	}
	if plan.AddonIDPattern.MatchString(req.AddonID) {
		in.Install = g.describe(filepath.Join(req.CrowHome, "bundles", req.AddonID))
		in.DataFolder = g.describe(filepath.Join(req.DataDir, req.AddonID))
	}
	g.scanDir(in.Install)
	g.scanDir(in.DataFolder)
	in.Command.Facts = g.describe(req.Command)
	in.Command.Args = req.Args
	if g.err == nil && in.Command.Facts.Real != "" {
		in.Command.Chain, g.err = Chain(in.Command.Facts.Real)
	}
	if req.Runtime != "" {
		in.Runtime = g.describe(req.Runtime)
		if !plan.IsSystemPath(in.Runtime.Real) {
			g.scanDir(in.Runtime)
		}
	}
	if e := req.Entry; e != nil {
		in.Entry = &plan.EntryInput{Args: e.Args, Config: e.Config}
		in.Entry.Binary = g.describe(e.Binary)
		if g.err == nil && in.Entry.Binary.Real != "" {
			in.Entry.Chain, g.err = Chain(in.Entry.Binary.Real)
		}
		in.Entry.RelayDir = g.describe(e.RelayDir)
	}
	if g.err == nil {
		in.System, g.err = System()
	}
	prof := &in.Profile
	prof.OwnEnvFile, prof.CrowDB, prof.FirstParty, prof.Doors = req.OwnEnvFile, req.CrowDB, req.FirstParty, req.Doors
	for _, r := range req.Read {
		prof.Read = append(prof.Read, g.grant(r, r.Value))
	}
	for _, r := range req.Write {
		prof.Write = append(prof.Write, g.grant(r, r.Value))
	}
	if r := req.OAuthDir; r != nil {
		gr := g.grant(*r, filepath.Dir(r.Value))
		prof.OAuthDir = &gr
	}
	for _, name := range req.StateDirs {
		sd := plan.StateDir{Name: name}
		if name != "" && !strings.ContainsAny(name, "/\x00") && name != "." && name != ".." {
			sd.Facts = g.describe(filepath.Join(req.CrowHome, name))
			if req.FirstParty {
				g.scanDir(sd.Facts)
			}
		}
		prof.StateDirs = append(prof.StateDirs, sd)
	}
	if req.CrowDB && g.err == nil && in.DataDir.Real != "" {
		prof.DataDirEntries, g.err = DirEntries(in.DataDir.Real)
	}
	if g.err != nil {
		return plan.Input{}, fmt.Errorf("gather the facts for add-on %s: %w", req.AddonID, g.err)
	}
	return in, nil
}

type gatherer struct {
	ctx   context.Context
	lim   Limits
	scans map[string]plan.TreeScan
	// wide are folders a grant may not hold (the plan refuses such a
	// grant); a grant holding one is not scanned, which would be slow.
	wide []string
	err  error
}

func (g *gatherer) describe(p string) plan.PathFacts {
	if g.err != nil {
		return plan.PathFacts{Path: p}
	}
	f, err := Describe(p)
	if err != nil {
		g.err = err
	}
	return f
}

// scanDir scans a folder the plan may bind, once. Only real, clean paths
// are scanned; the plan refuses the others by their facts.
func (g *gatherer) scanDir(f plan.PathFacts) {
	if g.err != nil || f.RealKind != plan.KindDir || f.Real == "" {
		return
	}
	if _, done := g.scans[f.Real]; done {
		return
	}
	s, err := Scan(g.ctx, f.Real, g.lim)
	if err != nil {
		g.err = err
		return
	}
	g.scans[f.Real] = s
}

// grant describes an owner grant at path (the value itself, or the token
// file's folder) and scans it when it is a folder.
func (g *gatherer) grant(r GrantRequest, path string) plan.Grant {
	gr := plan.Grant{Field: r.Field, Value: r.Value, OwnerTyped: r.OwnerTyped, Facts: plan.PathFacts{Path: path}}
	if !r.OwnerTyped || !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return gr // refused by the plan; nothing to look at
	}
	gr.Facts = g.describe(path)
	if gr.Facts.Kind != plan.KindDir || gr.Facts.Real != path {
		return gr
	}
	for _, w := range g.wide {
		if w != "" && (w == path || strings.HasPrefix(w, strings.TrimSuffix(path, "/")+"/")) {
			return gr
		}
	}
	g.scanDir(gr.Facts)
	return gr
}
