package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/controllers"
	"github.com/addonwall/addonwall/internal/bwrap"
	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/decide"
	"github.com/addonwall/addonwall/internal/doors"
	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/launcher"
	"github.com/addonwall/addonwall/internal/paths"
	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/planfacts"
	"github.com/addonwall/addonwall/internal/seccomp"
)

// Default limits (the forge cells' app defaults).
const (
	defaultMemory = 512 << 20
	defaultCPU    = 1.0
	defaultDisk   = 1 << 30
)

// failure is an error that names the api reason an add-on is off for.
type failure struct {
	reason string
	err    error
}

func (f *failure) Error() string  { return f.err.Error() }
func (f *failure) Unwrap() error  { return f.err }
func (f *failure) Reason() string { return f.reason }

func fail(reason string, format string, args ...any) error {
	return &failure{reason: reason, err: fmt.Errorf(format, args...)}
}

// WallPreparer builds Launches from the reconciled AddonWall, the Crow
// home's entry and the host.
type WallPreparer struct {
	Paths paths.Paths
	// Home is the owner's home folder.
	Home string
	// Environ is the controller's own environment.
	Environ map[string]string
	// ControllerPaths are never a bind source (store, control socket).
	ControllerPaths []string
	// BwrapPath and SetprivPath are the probed binaries.
	BwrapPath, SetprivPath string
	Log                    logr.Logger

	// EntryBinary is the addonwall binary every wall runs as its entry;
	// empty means this process's own executable.
	EntryBinary string
	// ListenerFor makes the listener-owner check an add-on's relay runs
	// before a loopback connection is spliced; nil, or a nil check,
	// refuses every one.
	ListenerFor func(addonID string) egress.ListenerCheck
	// EgressDeny, when set, reads the operator's egress deny list (the
	// WallHost's spec.egressDenyList) for every spawn.
	EgressDeny func(ctx context.Context) ([]string, error)
	// TestOnlyEgress, when set, replaces the relays' resolver and dialer.
	// Tests only; see its type.
	TestOnlyEgress *TestOnlyEgress

	// doors holds the door tokens of the spawns running now (their sums).
	doors doors.Registry

	egressMu   sync.Mutex
	egress     map[string]*egressCounts
	egressHint func(id string)
}

// Prepare implements Preparer. For a walled decision it builds the plan
// and the filter once now, so a plan that cannot be built keeps the add-on
// off; every connect builds them again from fresh facts.
func (p *WallPreparer) Prepare(ctx context.Context, w *wallsv1.AddonWall, d decide.Decision) (Launch, controllers.Admission, error) {
	entry, err := p.entry(w.Name)
	if err != nil {
		return nil, controllers.Admission{}, err
	}
	res, err := launcher.Resolve(entry.Command, p.Paths.InstallDir(w.Name), entry.CommandSHA256)
	if err != nil {
		return nil, controllers.Admission{}, fail(wallsv1.ReasonPlanFailed, "its command cannot run: %w", err)
	}
	switch d.Spawn {
	case decide.SpawnWalled:
		wl := &walledLaunch{p: p, w: w.DeepCopy(), d: d, res: res, limits: limitsOf(w, p.Paths.DataDir)}
		// The relay and the entry are made per spawn, in Start.
		pl, prog, err := wl.build(ctx, nil)
		if err != nil {
			return nil, controllers.Admission{}, err
		}
		// Every spawn builds bubblewrap's arguments; building them now puts
		// a plan bubblewrap could not take (too many masks) on the card at
		// once, not at the first connect.
		if _, err := bwrap.WalledArgs(pl); err != nil {
			return nil, controllers.Admission{}, fail(wallsv1.ReasonPlanFailed, "%w", err)
		}
		tier := wallsv1.TierWalled
		if prog == nil {
			tier = wallsv1.TierWalledNoSeccomp
		}
		adm := controllers.Admission{Tier: tier, PlanHash: pl.Hash(), Reach: decide.Reach(decide.ReachOf(w.Spec.Profile), decide.LangEN)}
		for _, u := range pl.Unbound {
			adm.Dropped = append(adm.Dropped, fmt.Sprintf("%s not bound: %s", u.Path, u.Reason))
		}
		set, doorsDropped := doorSet(w)
		door, err := p.doorEntry(set)
		if err != nil {
			return nil, controllers.Admission{}, err
		}
		adm.Dropped = append(adm.Dropped, networkDropped(w.Spec.Profile, entry.Env, door)...)
		adm.Dropped = append(adm.Dropped, doorsDropped...)
		p.planEgress(w.Name, adm.PlanHash)
		return wl, adm, nil
	case decide.SpawnPlain, decide.SpawnSetpriv:
		ul := &unwalledLaunch{res: res, args: entry.Args, env: p.unwalledEnv(entry), dir: p.Paths.InstallDir(w.Name)}
		if entry.Cwd != "" {
			ul.dir = entry.Cwd
		}
		if d.Spawn == decide.SpawnSetpriv {
			if p.SetprivPath == "" {
				return nil, controllers.Admission{}, fail(wallsv1.ReasonWallFailed, "setpriv was found missing")
			}
			ul.setpriv = p.SetprivPath
		}
		return ul, controllers.Admission{}, nil
	default:
		return nil, controllers.Admission{}, fmt.Errorf("no process is started for this add-on (%s)", d.Reason)
	}
}

func (p *WallPreparer) entry(id string) (crowhome.Entry, error) {
	f, err := crowhome.ReadAddons(p.Paths.AddonsFile())
	if err != nil {
		return crowhome.Entry{}, fail(wallsv1.ReasonInvalidInput, "reading its entry: %w", err)
	}
	if fe, bad := f.Problems[id]; bad {
		return crowhome.Entry{}, fail(wallsv1.ReasonInvalidInput, "%w", fe)
	}
	e, ok := f.Entries[id]
	if !ok {
		return crowhome.Entry{}, fail(wallsv1.ReasonInvalidInput, "%s has no entry for it", p.Paths.AddonsFile())
	}
	return e, nil
}

// unwalledEnv is the environment of a child that runs without a wall: the
// controller's own, less every name that looks like a secret, the host
// switches and loader-injection names, plus the entry's own values.
func (p *WallPreparer) unwalledEnv(e crowhome.Entry) map[string]string {
	env := map[string]string{}
	for k, v := range p.Environ {
		if plan.LooksSecret(k) || plan.IsInjectionName(k) || strings.HasPrefix(k, "CROW_ADDON_WALLS") {
			continue
		}
		env[k] = v
	}
	for k, v := range e.Env.Values() {
		env[k] = v
	}
	return env
}

func limitsOf(w *wallsv1.AddonWall, dataDir string) Limits {
	l := Limits{Memory: defaultMemory, CPU: defaultCPU, Disk: defaultDisk, DataDir: dataDir + "/" + w.Name}
	if q := w.Spec.Limits.Memory; q != nil {
		l.Memory = q.Value()
	}
	if q := w.Spec.Limits.CPU; q != nil {
		l.CPU = q.AsApproximateFloat64()
	}
	if q := w.Spec.Limits.Disk; q != nil {
		l.Disk = q.Value()
	}
	return l
}

// ensureDataFolder makes <dataDir>/<id> (0700) when it is missing. What is
// there is looked at first: a symlink or a file there fails the add-on,
// since writing below it could land anywhere.
func ensureDataFolder(dataDir, id string) error {
	dir := filepath.Join(dataDir, id)
	fi, err := os.Lstat(dir)
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("its data folder %s is a symlink; move it away (a data folder must be a real folder)", dir)
	case err == nil && !fi.IsDir():
		return fmt.Errorf("its data folder %s is not a folder; move it away", dir)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("looking at its data folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("making Crow's data folder %s: %w", dataDir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making its data folder %s: %w", dir, err)
	}
	return nil
}

// walledLaunch starts a child inside its wall. It never falls back.
type walledLaunch struct {
	p      *WallPreparer
	w      *wallsv1.AddonWall
	d      decide.Decision
	res    launcher.Resolved
	limits Limits
}

func (l *walledLaunch) Walled() bool   { return true }
func (l *walledLaunch) Limits() Limits { return l.limits }

// build gathers fresh facts and builds the plan and the filter. With nw it
// opens the spawn's network and plans its entry; the caller closes nw.
func (l *walledLaunch) build(ctx context.Context, nw *wallNetwork) (*plan.Plan, []byte, error) {
	p := l.p
	entry, err := p.entry(l.w.Name)
	if err != nil {
		return nil, nil, err
	}
	grant := func(fs []wallsv1.EnvField) []planfacts.GrantRequest {
		var out []planfacts.GrantRequest
		for _, f := range fs {
			v, _ := entry.Env.Get(f.Name)
			out = append(out, planfacts.GrantRequest{Field: f.Name, Value: v, OwnerTyped: f.OwnerTyped})
		}
		return out
	}
	prof := l.w.Spec.Profile
	set, _ := doorSet(l.w)
	var own []plan.EnvVar
	for _, k := range entry.Env.Keys() {
		v, _ := entry.Env.Get(k)
		own = append(own, plan.EnvVar{Name: k, Value: v, OwnerTyped: true})
	}
	if err := ensureDataFolder(p.Paths.DataDir, l.w.Name); err != nil {
		return nil, nil, fail(wallsv1.ReasonPlanFailed, "%w", err)
	}
	hasTable := seccomp.HasTable(runtime.GOARCH)
	req := planfacts.Request{
		AddonID:         l.w.Name,
		UID:             uint32(os.Getuid()),
		CrowHome:        p.Paths.CrowHome,
		DataDir:         p.Paths.DataDir,
		Checkout:        p.Paths.Checkout,
		Home:            p.Home,
		Command:         l.res.Path,
		Args:            entry.Args,
		Runtime:         l.res.Runtime,
		Read:            grant(prof.Files.Read),
		Write:           grant(prof.Files.Write),
		OwnEnvFile:      prof.OwnEnvFile,
		CrowDB:          l.d.BindCrowDatabase,
		FirstParty:      l.w.Spec.FirstParty,
		Doors:           !set.Empty(),
		Env:             plan.EnvInput{Controller: p.Environ, Own: own},
		ControllerPaths: p.ControllerPaths,
		Seccomp:         hasTable,
	}
	if prof.Files.OAuthDir != nil {
		g := grant([]wallsv1.EnvField{*prof.Files.OAuthDir})[0]
		req.OAuthDir = &g
	}
	if nw != nil {
		if err := nw.open(ctx, p, l.w, entry, set); err != nil {
			return nil, nil, err
		}
		if req.Entry, err = nw.request(); err != nil {
			return nil, nil, err
		}
		req.ProxyPort = nw.entry.ProxyPort
	}
	in, err := planfacts.Gather(ctx, req)
	if err != nil {
		return nil, nil, fail(wallsv1.ReasonPlanFailed, "gathering what its wall binds: %w", err)
	}
	pl, err := plan.Build(in)
	if err != nil {
		return nil, nil, fail(wallsv1.ReasonPlanFailed, "%w", err)
	}
	if !hasTable {
		return pl, nil, nil
	}
	prog, err := seccomp.Build(runtime.GOARCH)
	if err != nil {
		return nil, nil, fail(wallsv1.ReasonSeccompFailed, "building its seccomp filter: %w", err)
	}
	return pl, prog.Bytes(), nil
}

// Start implements Launch.
func (l *walledLaunch) Start(ctx context.Context, stdio [3]*os.File) (Process, error) {
	nw := &wallNetwork{}
	pl, prog, err := l.build(ctx, nw)
	if err != nil {
		nw.close()
		return nil, err
	}
	opts := []bwrap.StartOption{bwrap.WithBwrapPath(l.p.BwrapPath), bwrap.WithLogger(l.p.Log)}
	if tok := nw.door.tokenText(); tok != nil {
		// The token reaches the wall as a 0400 file through a sealed
		// memfd; only its sha256 stays here.
		opts = append(opts, bwrap.WithData(plan.DoorTokenSlot, tok))
		defer clear(tok)
	}
	c, err := bwrap.Start(ctx, pl, prog, bwrap.Stdio{Stdin: stdio[0], Stdout: stdio[1], Stderr: stdio[2]}, opts...)
	if err != nil {
		nw.close()
		return nil, fail(wallsv1.ReasonWallFailed, "starting its wall: %w", err)
	}
	wp, err := newWalledProcess(ctx, &bwrapProcess{c: c, walled: true}, nw)
	if err != nil {
		return nil, err
	}
	return wp, nil
}

// unwalledLaunch starts a child without a wall, as decided.
type unwalledLaunch struct {
	res     launcher.Resolved
	args    []string
	env     map[string]string
	dir     string
	setpriv string
}

func (l *unwalledLaunch) Walled() bool { return false }

// Start implements Launch.
func (l *unwalledLaunch) Start(ctx context.Context, stdio [3]*os.File) (Process, error) {
	// An empty setpriv path means none: a plain spawn is exactly that.
	opts := []bwrap.StartOption{bwrap.WithSetprivPath(l.setpriv)}
	c, err := bwrap.StartUnwalled(ctx, l.res.Path, l.args, l.env, l.dir,
		bwrap.Stdio{Stdin: stdio[0], Stdout: stdio[1], Stderr: stdio[2]}, opts...)
	if err != nil {
		return nil, err
	}
	return &bwrapProcess{c: c}, nil
}

// bwrapProcess adapts a bwrap.Child to Process.
type bwrapProcess struct {
	c      *bwrap.Child
	walled bool
}

func (b *bwrapProcess) Pid() int {
	if !b.walled {
		return b.c.Pid()
	}
	if pid, err := b.c.CommandPid(); err == nil && pid > 0 {
		return pid
	}
	return b.c.Pid()
}

func (b *bwrapProcess) Wait() Exit {
	e, err := b.c.Wait()
	x := Exit{Code: e.Code, Signal: e.Signal, SetupFailed: e.SetupFailed, Message: e.Message}
	if err != nil && x.Code == 0 && x.Signal == "" {
		// An error with no exit status is not a clean end.
		x.Code = -1
	}
	return x
}

func (b *bwrapProcess) Kill() { _ = b.c.Kill() }
