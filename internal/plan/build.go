package plan

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// AddonIDPattern is what an add-on id must look like: it becomes a path
// element under the Crow home and the data folder.
var AddonIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

const (
	maxArgs   = 256
	maxArgLen = 4096
)

// reservedHomeNames are Crow home entries that can never be a state folder.
var reservedHomeNames = map[string]bool{
	"bundles": true, "data": true, "secrets": true, "env": true,
	"mcp-addons.json": true, "addon-walls.json": true, "addon-walls-migrate": true,
}

// crowDbKeep are the data folder entries a crowDb add-on sees (plus its own
// folder).
var crowDbKeep = map[string]bool{"crow.db": true, "crow.db-wal": true, "crow.db-shm": true}

type builder struct {
	in      Input
	p       *Plan
	mounts  []Mount
	trees   []TreeScan // scanned trees that are bound
	code    []string   // code trees bound read-only (real paths)
	rw      []string   // host folders the add-on can write
	ownEnv  string
	dataDir string
	home    string
}

// Build turns the facts into a validated plan, or says which fact stops it.
func Build(in Input) (*Plan, error) {
	b := &builder{in: in, p: &Plan{AddonID: in.AddonID}}
	steps := []func() error{
		b.checkBasics,
		b.neverBind,
		b.system,
		b.install,
		b.dataFolder,
		b.checkout,
		b.runtime,
		b.grants,
		b.stateDirs,
		b.crowDB,
		b.command,
		b.entry,
		b.ownEnvFile,
		b.scanMasks,
		b.neverBindMasks,
		b.env,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("add-on %s: %w", in.AddonID, err)
		}
	}
	b.finish()
	if err := b.p.Validate(); err != nil {
		return nil, fmt.Errorf("add-on %s: the plan built does not validate (a bug in the planner; the add-on stays off): %w", in.AddonID, err)
	}
	return b.p, nil
}

func (b *builder) checkBasics() error {
	in := b.in
	if !AddonIDPattern.MatchString(in.AddonID) {
		return fmt.Errorf("add-on id %q is not valid (lower-case letters, digits and '-', at most 64)", in.AddonID)
	}
	for _, f := range []struct {
		name  string
		facts PathFacts
	}{{"CROW_HOME", in.CrowHome}, {"the data dir", in.DataDir}, {"the owner's home", in.Home}} {
		if !cleanAbs(f.facts.Path) {
			return fmt.Errorf("%s %q is not a clean absolute path", f.name, f.facts.Path)
		}
		if !f.facts.Exists() || f.facts.RealKind != KindDir || !cleanAbs(f.facts.Real) {
			return fmt.Errorf("%s %s is not an existing folder", f.name, f.facts.Path)
		}
	}
	b.dataDir = in.DataDir.Real
	b.home = in.Home.Real
	b.p.Namespaces = Namespaces{User: true, DisableUserns: true, PID: true, IPC: true, UTS: true, Cgroup: true, Net: true}
	b.p.Hostname = Hostname
	b.p.Seccomp = in.Seccomp
	return nil
}

// neverBind lists every path no host bind may show.
func (b *builder) neverBind() error {
	in := b.in
	nb := []string{
		in.CrowHome.Real, in.CrowHome.Path,
		in.DataDir.Real, in.DataDir.Path,
		filepath.Join(in.CrowHome.Real, "mcp-addons.json"),
		filepath.Join(in.CrowHome.Real, "addon-walls.json"),
	}
	nb = append(nb, hostPlaces...)
	for _, h := range []string{in.Home.Real, in.Home.Path} {
		for _, name := range in.HomeHidden {
			if name == "" || strings.ContainsAny(name, "/\x00") || name[0] != '.' || name == "." || name == ".." {
				return fmt.Errorf("hidden home entry %q is not a single hidden name", name)
			}
			nb = append(nb, filepath.Join(h, name))
		}
		nb = append(nb,
			filepath.Join(h, ".config/autostart"),
			filepath.Join(h, ".config/systemd"),
			filepath.Join(h, ".local/share/systemd"))
	}
	for _, c := range in.ControllerPaths {
		if !cleanAbs(c) {
			return fmt.Errorf("controller path %q is not a clean absolute path", c)
		}
		nb = append(nb, c)
	}
	seen := map[string]bool{}
	for _, p := range nb {
		if p != "" && !seen[p] {
			seen[p] = true
			b.p.NeverBind = append(b.p.NeverBind, p)
		}
	}
	sort.Strings(b.p.NeverBind)
	return nil
}

// refuseSource says why a host path can never be a bind source, or returns
// nil. own marks the add-on's own folders, the only exceptions inside a
// never-bind path.
func (b *builder) refuseSource(p string, own bool) error {
	if !cleanAbs(p) {
		return fmt.Errorf("%q is not a clean absolute path", p)
	}
	if IsShieldedPath(p) {
		return fmt.Errorf("%s is inside a shielded credential folder and is never bound", p)
	}
	if withinAny(p, hostPlaces) {
		return fmt.Errorf("%s is under a host folder that holds sockets or other users' files (/run, /tmp, /dev, /proc, /sys) and is never bound", p)
	}
	if IsSensitiveName(filepath.Base(p)) && p != b.ownEnv {
		return fmt.Errorf("%s is a secrets file (.env, .mcp.json or a credential file) and is never bound", p)
	}
	if own {
		return nil
	}
	for _, n := range b.p.NeverBind {
		if within(p, n) {
			return fmt.Errorf("%s is inside %s, which the wall never binds", p, n)
		}
	}
	return nil
}

// containsNeverBind names a never-bind path strictly inside p, if any.
func (b *builder) containsNeverBind(p string) string {
	for _, n := range b.p.NeverBind {
		if n != p && within(n, p) {
			return n
		}
	}
	return ""
}

func (b *builder) add(m Mount) { b.mounts = append(b.mounts, m) }

// isOwn reports whether a never-bind path is itself one of the add-on's own
// folders. A never-bind path strictly inside an own folder (another
// add-on's data inside a crowDb data dir, a data dir inside the install
// folder) is still masked.
func isOwn(n string, own []string) bool {
	for _, o := range own {
		if n == o {
			return true
		}
	}
	return false
}

func (b *builder) own(p string) { b.p.Own = append(b.p.Own, p) }

func (b *builder) system() error {
	facts := map[string]PathFacts{}
	for _, f := range b.in.System {
		facts[f.Path] = f
	}
	usr, ok := facts["/usr"]
	if !ok || usr.RealKind != KindDir || usr.Kind != KindDir {
		return fmt.Errorf("/usr is not a folder on this computer; the wall cannot bind the system")
	}
	var boundDirs []string
	for _, cand := range SystemCandidates() {
		f, ok := facts[cand]
		if !ok || !f.Exists() {
			continue
		}
		switch f.Kind {
		case KindSymlink:
			// Recreate the link only when it lands in a folder the wall binds
			// (/bin -> usr/bin, /etc/localtime -> /usr/share/zoneinfo/...).
			if withinAny(f.Real, boundDirs) && !strings.ContainsRune(f.Link, 0) && f.Link != "" {
				b.add(Mount{Kind: Symlink, Source: f.Link, Dest: cand, Why: "system link"})
			}
		case KindDir, KindFile:
			if f.Real != cand {
				continue // a parent is a link; the path is not its own real path
			}
			if f.UID != 0 || f.Mode&0o022 != 0 {
				if cand == "/usr" {
					return fmt.Errorf("/usr is not root-owned or is writable by others (uid %d, mode %o); the wall cannot trust it", f.UID, f.Mode&0o7777)
				}
				continue
			}
			b.add(Mount{Kind: RoBind, Source: cand, Dest: cand, ExpectKind: f.RealKind, Why: "system folder"})
			if f.RealKind == KindDir && !strings.HasPrefix(cand, "/etc/") {
				boundDirs = append(boundDirs, cand)
				b.code = append(b.code, cand)
			}
		}
	}
	b.add(Mount{Kind: Proc, Dest: "/proc", Why: "a fresh /proc for the wall's own pid namespace"})
	b.add(Mount{Kind: Dev, Dest: "/dev", Why: "bubblewrap's minimal /dev"})
	b.add(Mount{Kind: Tmpfs, Dest: "/tmp", Why: "a fresh, private /tmp (TMPDIR)"})
	b.add(Mount{Kind: RoBindData, Dest: "/etc/hosts", Data: []byte(hostsFile), Perms: 0o444, Why: "loopback-only hosts file"})
	return nil
}

// scanOf returns the complete scan of a tree, or why there is none.
func (b *builder) scanOf(root string) (TreeScan, string) {
	s, ok := b.in.Scans[root]
	if !ok {
		return TreeScan{}, "it was not scanned"
	}
	if s.Root != root {
		return TreeScan{}, fmt.Sprintf("its scan is of %s", s.Root)
	}
	if s.Incomplete != "" {
		return TreeScan{}, "it could not be scanned whole: " + s.Incomplete
	}
	return s, ""
}

func (b *builder) install() error {
	in := b.in
	want := filepath.Join(in.CrowHome.Path, "bundles", in.AddonID)
	f := in.Install
	if f.Path != want {
		return fmt.Errorf("install folder is %q, want %s", f.Path, want)
	}
	if f.Kind == KindSymlink {
		return fmt.Errorf("install folder %s is a symlink (a checkout-linked add-on); migrate it before walling it", f.Path)
	}
	realWant := filepath.Join(in.CrowHome.Real, "bundles", in.AddonID)
	if !f.Exists() || f.RealKind != KindDir || f.Real != realWant {
		return fmt.Errorf("install folder %s is not a folder at its own real path %s", f.Path, realWant)
	}
	if err := b.refuseSource(f.Real, true); err != nil {
		return fmt.Errorf("install folder: %w", err)
	}
	s, why := b.scanOf(f.Real)
	if why != "" {
		return fmt.Errorf("install folder %s cannot be bound: %s", f.Real, why)
	}
	b.trees = append(b.trees, s)
	b.code = append(b.code, f.Real)
	b.own(f.Real)
	b.p.Chdir = f.Real
	b.add(Mount{Kind: RoBindFd, Source: f.Real, Dest: f.Real, Anchor: filepath.Dir(f.Real), Expect: f.ID, ExpectKind: KindDir, Why: "the add-on's installed code"})
	return nil
}

func (b *builder) dataFolder() error {
	in := b.in
	f := in.DataFolder
	want := filepath.Join(in.DataDir.Path, in.AddonID)
	if f.Path != want {
		return fmt.Errorf("data folder is %q, want %s", f.Path, want)
	}
	switch {
	case f.Kind == KindSymlink:
		return fmt.Errorf("data folder %s is a symlink; the wall binds only a real folder", f.Path)
	case !f.Exists():
		return fmt.Errorf("data folder %s does not exist; create it before planning", f.Path)
	case f.RealKind != KindDir:
		return fmt.Errorf("data folder %s is a %s, not a folder", f.Path, f.RealKind)
	}
	realWant := filepath.Join(in.DataDir.Real, in.AddonID)
	if f.Real != realWant {
		return fmt.Errorf("data folder %s resolves to %s, not %s", f.Path, f.Real, realWant)
	}
	if f.UID != in.UID {
		return fmt.Errorf("data folder %s belongs to uid %d, not to the wall's uid %d", f.Path, f.UID, in.UID)
	}
	if err := b.refuseSource(f.Real, true); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	s, why := b.scanOf(f.Real)
	if why != "" {
		return fmt.Errorf("data folder %s cannot be bound: %s", f.Real, why)
	}
	b.trees = append(b.trees, s)
	b.rw = append(b.rw, f.Real)
	b.own(f.Real)
	b.add(Mount{Kind: Bind, Source: f.Real, Dest: f.Real, Anchor: in.DataDir.Real, Expect: f.ID, ExpectKind: KindDir, Why: "the add-on's own data folder"})
	return nil
}

// codeTree binds a read-only tree that is not the add-on's own (checkout,
// runtime). required trees fail the plan when they cannot be bound.
func (b *builder) codeTree(what string, f PathFacts, required bool) error {
	if !f.Exists() || f.RealKind != KindDir || !cleanAbs(f.Real) {
		return fmt.Errorf("%s %s is not an existing folder", what, f.Path)
	}
	if err := b.refuseSource(f.Real, false); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if f.Real == "/" || within(b.home, f.Real) {
		return fmt.Errorf("%s %s holds the owner's whole home; the wall does not bind it", what, f.Real)
	}
	s, why := b.scanOf(f.Real)
	if why != "" {
		if required {
			return fmt.Errorf("%s %s cannot be bound: %s", what, f.Real, why)
		}
		b.p.Unbound = append(b.p.Unbound, Unbound{Path: f.Real, Reason: what + " not bound: " + why})
		return nil
	}
	b.trees = append(b.trees, s)
	b.code = append(b.code, f.Real)
	b.add(Mount{Kind: RoBindFd, Source: f.Real, Dest: f.Real, Anchor: "/", Expect: f.ID, ExpectKind: KindDir, Why: what})
	return nil
}

func (b *builder) checkout() error {
	if b.in.Checkout.Path == "" {
		return nil
	}
	return b.codeTree("the Crow checkout", b.in.Checkout, false)
}

func (b *builder) runtime() error {
	f := b.in.Runtime
	if f.Path == "" {
		return nil
	}
	if f.Exists() && withinAny(f.Real, b.code) {
		return nil // already inside a bound tree (a system folder, usually /usr)
	}
	return b.codeTree("the runtime's install folder", f, true)
}

// grantSource checks an owner grant's path and returns its real path.
func (b *builder) grantSource(field string, g Grant, write bool) (string, error) {
	if !g.OwnerTyped {
		return "", fmt.Errorf("%s (%s): the value is only the manifest's default; the owner must type the path before it is bound", field, g.Field)
	}
	if !cleanAbs(g.Value) {
		return "", fmt.Errorf("%s (%s): %q is not a clean absolute path", field, g.Field, g.Value)
	}
	f := g.Facts
	if !f.Exists() {
		return "", fmt.Errorf("%s (%s): %s does not exist", field, g.Field, f.Path)
	}
	if f.Kind == KindSymlink || f.Real != f.Path {
		return "", fmt.Errorf("%s (%s): %s resolves to %s; name the real path", field, g.Field, f.Path, f.Real)
	}
	if f.RealKind != KindDir && f.RealKind != KindFile {
		return "", fmt.Errorf("%s (%s): %s is a %s; only a file or a folder is bound", field, g.Field, f.Real, f.RealKind)
	}
	if err := b.refuseSource(f.Real, false); err != nil {
		return "", fmt.Errorf("%s (%s): %w", field, g.Field, err)
	}
	if n := b.containsNeverBind(f.Real); n != "" {
		return "", fmt.Errorf("%s (%s): %s holds %s, which the wall never binds", field, g.Field, f.Real, n)
	}
	if within(b.home, f.Real) {
		return "", fmt.Errorf("%s (%s): %s holds the owner's whole home", field, g.Field, f.Real)
	}
	if write {
		for _, c := range b.code {
			if within(f.Real, c) || within(c, f.Real) {
				return "", fmt.Errorf("%s (%s): %s overlaps code the add-on runs (%s); a write grant there would let it rewrite code", field, g.Field, f.Real, c)
			}
		}
	}
	return f.Real, nil
}

// grantTree binds one owner grant, scanning folders.
func (b *builder) grantTree(field string, g Grant, src string, write bool) {
	kind := g.Facts.RealKind
	if kind == KindDir {
		s, why := b.scanOf(src)
		if why != "" {
			b.p.Unbound = append(b.p.Unbound, Unbound{Path: src, Reason: field + " (" + g.Field + ") not bound: " + why})
			return
		}
		b.trees = append(b.trees, s)
	}
	m := Mount{Kind: RoBindFd, Source: src, Dest: src, Anchor: "/", Expect: g.Facts.ID, ExpectKind: kind, Why: field + " (" + g.Field + ")"}
	if write {
		m.Kind = Bind
		b.rw = append(b.rw, src)
	}
	b.add(m)
}

func (b *builder) grants() error {
	prof := b.in.Profile
	readSet := map[string]bool{}
	for _, g := range prof.Read {
		src, err := b.grantSource("sandbox.files.read", g, false)
		if err != nil {
			return err
		}
		readSet[src] = true
	}
	bound := map[string]bool{}
	for _, g := range prof.Write {
		src, err := b.grantSource("sandbox.files.write", g, true)
		if err != nil {
			return err
		}
		if readSet[src] || bound[src] {
			continue // a read grant is never widened to a write
		}
		bound[src] = true
		b.grantTree("sandbox.files.write", g, src, true)
	}
	for _, g := range prof.Read {
		src := g.Facts.Real
		if bound[src] {
			continue
		}
		bound[src] = true
		b.grantTree("sandbox.files.read", g, src, false)
	}
	if g := prof.OAuthDir; g != nil {
		const field = "sandbox.files.oauthDir"
		if !cleanAbs(g.Value) {
			return fmt.Errorf("%s (%s): %q is not a clean absolute path", field, g.Field, g.Value)
		}
		folder := *g
		folder.Value = filepath.Dir(g.Value)
		if g.Facts.Path != folder.Value {
			return fmt.Errorf("%s (%s): facts are about %s, not the token file's folder %s", field, g.Field, g.Facts.Path, folder.Value)
		}
		if folder.Facts.Exists() && folder.Facts.RealKind != KindDir {
			return fmt.Errorf("%s (%s): %s is not a folder", field, g.Field, folder.Value)
		}
		src, err := b.grantSource(field, folder, true)
		if err != nil {
			return err
		}
		if readSet[src] || bound[src] {
			return fmt.Errorf("%s (%s): %s is also a read or write grant; name it once", field, g.Field, src)
		}
		bound[src] = true
		b.grantTree(field, folder, src, true)
	}
	return nil
}

func (b *builder) stateDirs() error {
	in := b.in
	for _, sd := range in.Profile.StateDirs {
		if sd.Name == "" || sd.Name == "." || sd.Name == ".." || strings.ContainsAny(sd.Name, "/\x00") {
			return fmt.Errorf("state folder name %q from the core table is not a single name", sd.Name)
		}
		if reservedHomeNames[sd.Name] || IsSensitiveName(sd.Name) {
			return fmt.Errorf("state folder name %q from the core table is one of Crow's own home entries", sd.Name)
		}
		path := filepath.Join(in.CrowHome.Real, sd.Name)
		if !in.Profile.FirstParty {
			b.p.Unbound = append(b.p.Unbound, Unbound{Path: path, Reason: "state folder not bound: the add-on is not first-party"})
			continue
		}
		f := sd.Facts
		if f.Kind == KindSymlink || !f.Exists() || f.RealKind != KindDir || f.Real != path {
			b.p.Unbound = append(b.p.Unbound, Unbound{Path: path, Reason: "state folder not bound: it is not an existing real folder"})
			continue
		}
		if err := b.refuseSource(path, true); err != nil {
			return fmt.Errorf("state folder: %w", err)
		}
		s, why := b.scanOf(path)
		if why != "" {
			b.p.Unbound = append(b.p.Unbound, Unbound{Path: path, Reason: "state folder not bound: " + why})
			continue
		}
		b.trees = append(b.trees, s)
		b.rw = append(b.rw, path)
		b.own(path)
		b.add(Mount{Kind: Bind, Source: path, Dest: path, Anchor: in.CrowHome.Real, Expect: f.ID, ExpectKind: KindDir, Why: "state folder " + sd.Name})
	}
	return nil
}

func (b *builder) crowDB() error {
	in := b.in
	if !in.Profile.CrowDB {
		return nil
	}
	dd := in.DataDir
	if dd.Kind == KindSymlink && dd.Real == "" {
		return fmt.Errorf("the data dir %s does not resolve", dd.Path)
	}
	if err := b.refuseSource(dd.Real, true); err != nil {
		return fmt.Errorf("crowDb data dir: %w", err)
	}
	b.own(dd.Real)
	b.rw = append(b.rw, dd.Real)
	b.add(Mount{Kind: Bind, Source: dd.Real, Dest: dd.Real, Anchor: dd.Real, Expect: dd.ID, ExpectKind: KindDir, Why: "Crow's data folder, for crow.db"})
	for _, e := range in.Profile.DataDirEntries {
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
			return fmt.Errorf("data dir entry %q is not a single name", e.Name)
		}
		if crowDbKeep[e.Name] || e.Name == in.AddonID {
			continue
		}
		p := filepath.Join(dd.Real, e.Name)
		switch e.Kind {
		case KindDir:
			b.add(Mount{Kind: MaskDir, Dest: p, Why: "Crow data entry, not this add-on's"})
		case KindSymlink:
			// A link cannot be mounted over; inside the wall it resolves
			// only to what the wall shows, which is masked or its own.
			continue
		default:
			b.add(Mount{Kind: MaskFile, Dest: p, Why: "Crow data entry, not this add-on's"})
		}
		b.p.NeverBind = append(b.p.NeverBind, p)
	}
	sort.Strings(b.p.NeverBind)
	return nil
}

func (b *builder) command() error {
	c := b.in.Command
	f := c.Facts
	if !cleanAbs(f.Real) || !f.Exists() {
		return fmt.Errorf("command %q did not resolve to an existing file", f.Path)
	}
	if f.RealKind != KindFile {
		return fmt.Errorf("command %s is a %s, not a file", f.Real, f.RealKind)
	}
	if len(c.Args) > maxArgs {
		return fmt.Errorf("command has %d arguments, over the limit of %d", len(c.Args), maxArgs)
	}
	for i, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d holds a NUL byte", i+1)
		}
		if len(a) > maxArgLen {
			return fmt.Errorf("argument %d is %d bytes, over the limit of %d", i+1, len(a), maxArgLen)
		}
	}
	b.p.Command = f.Real
	b.p.Args = append([]string{}, c.Args...)
	for _, w := range append(append([]string{}, b.rw...), writablePlaces...) {
		if within(f.Real, w) {
			return fmt.Errorf("command %s sits in %s, a folder the add-on or others can write; it is not a valid source for what the wall runs", f.Real, w)
		}
	}
	if withinAny(f.Real, b.code) {
		return nil
	}
	if err := b.refuseSource(f.Real, false); err != nil {
		return fmt.Errorf("command: %w", err)
	}
	if err := trustedChain("command", f, c.Chain, b.in.UID); err != nil {
		return err
	}
	b.add(Mount{Kind: RoBindFd, Source: f.Real, Dest: f.Real, Anchor: "/", Expect: f.ID, ExpectKind: KindFile, Why: "the command, outside the code trees"})
	return nil
}

func (b *builder) ownEnvFile() error {
	if !b.in.Profile.OwnEnvFile {
		return nil
	}
	install := b.in.Install.Real
	path := install + "/.env"
	s := b.in.Scans[install]
	for _, n := range s.Sensitive {
		if n.Path != path {
			continue
		}
		switch {
		case n.Kind == KindSymlink:
			return fmt.Errorf("ownEnvFile: %s is a symlink; it names a file the add-on does not own", path)
		case n.Kind != KindFile:
			return fmt.Errorf("ownEnvFile: %s is a %s, not a file", path, n.Kind)
		case n.Nlink != 1:
			return fmt.Errorf("ownEnvFile: %s has %d names (a hard link); it may be another file's secrets", path, n.Nlink)
		case n.Size > MaxOwnEnvFileSize:
			return fmt.Errorf("ownEnvFile: %s is %d bytes, over the %d-byte limit", path, n.Size, MaxOwnEnvFileSize)
		}
		b.ownEnv = path
		b.p.OwnEnvFile = path
		b.add(Mount{Kind: RoBindFd, Source: path, Dest: path, Anchor: install, Expect: n.ID, ExpectKind: KindFile, Why: "the add-on's own .env, over its mask"})
		return nil
	}
	return nil
}

func maskFor(kind Kind, p, why string) (Mount, bool) {
	switch kind {
	case KindDir:
		return Mount{Kind: MaskDir, Dest: p, Why: why}, true
	case KindSymlink, KindMissing:
		return Mount{}, false
	default:
		return Mount{Kind: MaskFile, Dest: p, Why: why}, true
	}
}

// scanMasks masks, in every bound tree, each sensitive entry, each socket,
// every other name of a sensitive file, every file with a name outside the
// scanned trees, and the target of every symlink that leads to such a file.
func (b *builder) scanMasks() error {
	sensitiveIDs := map[FileID]bool{}
	byID := map[FileID]map[string]Node{}
	nlink := map[FileID]uint64{}
	note := func(n Node) {
		if n.Kind != KindFile || n.ID.IsZero() {
			return
		}
		if byID[n.ID] == nil {
			byID[n.ID] = map[string]Node{}
		}
		byID[n.ID][n.Path] = n
		if n.Nlink > nlink[n.ID] {
			nlink[n.ID] = n.Nlink
		}
	}
	for _, t := range b.trees {
		for _, n := range t.Sensitive {
			note(n)
			if n.Kind == KindFile && !n.ID.IsZero() {
				sensitiveIDs[n.ID] = true
			}
			if n.Kind == KindSymlink {
				if m, ok := maskFor(n.TargetKind, n.Target, "target of sensitive link "+n.Path); ok && n.Target != "" {
					b.add(m)
				}
				if !n.TargetID.IsZero() {
					sensitiveIDs[n.TargetID] = true
				}
				continue
			}
			if m, ok := maskFor(n.Kind, n.Path, "secrets or credentials"); ok {
				b.add(m)
			}
		}
		for _, n := range t.Sockets {
			b.add(Mount{Kind: MaskFile, Dest: n.Path, Why: "a unix socket"})
		}
		for _, n := range t.Links {
			note(n)
		}
	}
	ids := make([]FileID, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Dev != ids[j].Dev {
			return ids[i].Dev < ids[j].Dev
		}
		return ids[i].Ino < ids[j].Ino
	})
	for _, id := range ids {
		names := byID[id]
		why := ""
		switch {
		case sensitiveIDs[id]:
			why = "another name of a secrets file"
		case uint64(len(names)) < nlink[id]:
			why = "a hard link whose other names lie outside the wall"
		default:
			continue
		}
		for p := range names {
			if p == b.ownEnv {
				continue
			}
			b.add(Mount{Kind: MaskFile, Dest: p, Why: why})
		}
	}
	for _, t := range b.trees {
		for _, n := range t.Symlinks {
			if n.Target == "" || !cleanAbs(n.Target) {
				continue
			}
			bad := sensitiveIDs[n.TargetID] || IsSensitiveName(filepath.Base(n.Target)) || IsShieldedPath(n.Target)
			for _, nb := range b.p.NeverBind {
				if within(n.Target, nb) && !withinAny(n.Target, b.p.Own) {
					bad = true
				}
			}
			if bad && n.Target != b.ownEnv {
				if m, ok := maskFor(n.TargetKind, n.Target, "target of link "+n.Path); ok {
					b.add(m)
				}
			}
		}
	}
	return nil
}

// neverBindMasks masks never-bind paths that sit inside a bound tree (a Crow
// home or data dir inside the checkout). A never-bind path of unknown kind
// inside a bound tree stops the plan rather than be guessed at.
func (b *builder) neverBindMasks() error {
	kinds := map[string]Kind{
		b.in.CrowHome.Real: KindDir,
		b.in.DataDir.Real:  KindDir,
		filepath.Join(b.in.CrowHome.Real, "mcp-addons.json"):  KindFile,
		filepath.Join(b.in.CrowHome.Real, "addon-walls.json"): KindFile,
	}
	// Other spellings of the Crow home and data dir are symlinks: what
	// they lead to is their real path, handled above.
	spelling := map[string]bool{b.in.CrowHome.Path: b.in.CrowHome.Path != b.in.CrowHome.Real,
		b.in.DataDir.Path: b.in.DataDir.Path != b.in.DataDir.Real}
	for _, n := range b.p.NeverBind {
		if isOwn(n, b.p.Own) || spelling[n] {
			continue
		}
		inside, hidden := false, false
		for _, m := range b.mounts {
			if m.IsHostBind() && m.ExpectKind == KindDir && n != m.Source && within(n, m.Source) {
				inside = true
			}
			if (m.Kind == MaskDir && within(n, m.Dest)) || (m.Kind == MaskFile && m.Dest == n) {
				hidden = true
			}
		}
		if !inside || hidden {
			continue
		}
		kind, ok := kinds[n]
		if !ok {
			return fmt.Errorf("%s lies inside a bound tree and the plan does not know what it is; it cannot be masked safely", n)
		}
		if m, ok := maskFor(kind, n, "never bound: "+n); ok {
			b.add(m)
		}
	}
	return nil
}

func (b *builder) env() error {
	port := b.in.ProxyPort
	if port == 0 {
		port = DefaultProxyPort
	}
	if port < 1 || port > 65535 {
		return fmt.Errorf("proxy port %d is out of range", port)
	}
	env, dropped, err := BuildEnv(b.in.Env, b.in.DataFolder.Real, port, b.in.Profile.Doors)
	if err != nil {
		return err
	}
	b.p.Env = env
	b.p.DroppedEnv = dropped
	if b.in.Profile.Doors {
		b.add(Mount{Kind: RoBindData, Dest: DoorTokenPath, Slot: DoorTokenSlot, Perms: 0o400, Why: "the door token"})
	}
	return nil
}

// phase orders mounts at the same depth: binds, then masks over them, then
// what goes back on top of a mask.
func (b *builder) phase(m Mount) int {
	switch m.Kind {
	case MaskFile, MaskDir:
		return 2
	case RoBindData:
		return 3
	case RoBindFd:
		if m.Source == b.ownEnv && b.ownEnv != "" {
			return 3
		}
	case RemountRo:
		return 4
	}
	return 1
}

// covers reports whether a mount shows (or hides) path p.
func covers(m Mount, p string) bool {
	if m.Dest == p {
		return true
	}
	switch m.Kind {
	case MaskDir, Tmpfs, Proc, Dev, Dir:
		return within(p, m.Dest)
	case RoBind, RoBindFd, Bind:
		return m.ExpectKind == KindDir && within(p, m.Dest)
	}
	return false
}

// finish orders the mounts, drops masks with nothing to hide and makes every
// masking tmpfs read-only once everything below it is mounted.
func (b *builder) finish() {
	ms := b.mounts
	sort.SliceStable(ms, func(i, j int) bool {
		di, dj := depth(ms[i].Dest), depth(ms[j].Dest)
		if di != dj {
			return di < dj
		}
		pi, pj := b.phase(ms[i]), b.phase(ms[j])
		if pi != pj {
			return pi < pj
		}
		return ms[i].Dest < ms[j].Dest
	})
	var out []Mount
	seen := map[string]bool{}
	for _, m := range ms {
		if m.Kind == MaskFile || m.Kind == MaskDir {
			key := string(m.Kind) + "\x00" + m.Dest
			if seen[key] {
				continue
			}
			var last *Mount
			for i := range out {
				if covers(out[i], m.Dest) {
					last = &out[i]
				}
			}
			if last == nil || !last.IsHostBind() {
				continue // nothing from the host shows there
			}
			seen[key] = true
		}
		out = append(out, m)
	}
	for _, m := range out {
		if m.Kind == MaskDir {
			out = append(out, Mount{Kind: RemountRo, Dest: m.Dest, Why: "make the mask read-only"})
		}
	}
	b.p.Mounts = out
	sort.Strings(b.p.Own)
}
