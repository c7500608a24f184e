package plan

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Fixed places of the in-namespace entry inside the wall. EntryDir is the
// wall's own: nothing is bound there but the entry, its config and the
// relay's socket folder.
const (
	EntryDir = "/run/addonwall"
	// EntryPath is where the addonwall binary is bound, read-only.
	EntryPath = "/run/addonwall/entry"
	// EntryConfigPath is the entry's config, bound as data.
	EntryConfigPath = "/run/addonwall/entry.json"
	// RelayDirPath is where the spawn's relay socket folder is bound,
	// read-only: a socket in a read-only bind still connects, and the
	// add-on cannot put anything beside it.
	RelayDirPath = "/run/addonwall/relay"
)

// maxEntryConfig bounds the entry's config.
const maxEntryConfig = 64 << 10

// EntryInput is the in-namespace entry of one spawn: the program the wall
// runs first, which starts the add-on.
type EntryInput struct {
	// Binary are the facts of the addonwall binary at its real path, and
	// Chain those of every folder from "/" down to it.
	Binary PathFacts
	Chain  []PathFacts
	// Args are the entry's own arguments; "--" and the add-on's command
	// follow them.
	Args []string
	// Config is the entry's config, bound read-only at EntryConfigPath.
	Config []byte
	// RelayDir are the facts of the spawn's relay socket folder, at its
	// real path.
	RelayDir PathFacts
}

// EntryPlan is the entry in a plan.
type EntryPlan struct {
	// Binary is the host path bound at EntryPath.
	Binary string `json:"binary"`
	// Args are the entry's own arguments.
	Args []string `json:"args"`
	// RelayDir is the host path bound at RelayDirPath. It differs for
	// every spawn, so Hash leaves it out.
	RelayDir string `json:"relayDir"`
}

// Argv is what the wall runs: the entry with its arguments, then "--" and
// the add-on's command, or the add-on's command alone when the plan has
// no entry (a wall with no way out at all).
func (p *Plan) Argv() []string {
	if p.Entry == nil {
		return append([]string{p.Command}, p.Args...)
	}
	out := append([]string{EntryPath}, p.Entry.Args...)
	out = append(out, "--", p.Command)
	return append(out, p.Args...)
}

// trustedChain refuses a program whose file or any folder above it someone
// other than root or the wall's uid could rewrite, or that is reached
// through a symlinked folder.
func trustedChain(what string, f PathFacts, chain []PathFacts, uid uint32) error {
	if len(chain) == 0 || chain[0].Path != "/" {
		return fmt.Errorf("%s %s: the facts of its folders are missing", what, f.Real)
	}
	for _, link := range append(append([]PathFacts{}, chain...), f) {
		if link.Kind == KindSymlink && link.Path != f.Path {
			return fmt.Errorf("%s %s: folder %s is a symlink", what, f.Real, link.Path)
		}
		if link.UID != 0 && link.UID != uid {
			return fmt.Errorf("%s %s: %s belongs to uid %d, who could rewrite it", what, f.Real, link.Real, link.UID)
		}
		if link.Mode&0o022 != 0 {
			return fmt.Errorf("%s %s: %s is writable by its group or by everyone (mode %o)", what, f.Real, link.Real, link.Mode&0o7777)
		}
	}
	return nil
}

// entry binds the in-namespace entry, its config and the relay's socket
// folder. They are the only host paths bound away from their own path,
// and the relay folder the only one from inside the controller's own
// folders: it is made fresh for this spawn and holds nothing but the
// relay's socket.
func (b *builder) entry() error {
	e := b.in.Entry
	if e == nil {
		return nil
	}
	f := e.Binary
	if !cleanAbs(f.Path) || !f.Exists() || f.RealKind != KindFile {
		return fmt.Errorf("the entry %q is not an existing file", f.Path)
	}
	if f.Kind == KindSymlink || f.Real != f.Path {
		return fmt.Errorf("the entry %s resolves to %s; name the real path", f.Path, f.Real)
	}
	if err := b.refuseSource(f.Real, false); err != nil {
		return fmt.Errorf("the entry: %w", err)
	}
	for _, w := range append(append([]string{}, b.rw...), writablePlaces...) {
		if within(f.Real, w) {
			return fmt.Errorf("the entry %s sits in %s, a folder the add-on or others can write", f.Real, w)
		}
	}
	if err := trustedChain("the entry", f, e.Chain, b.in.UID); err != nil {
		return err
	}
	if len(e.Args) > maxArgs {
		return fmt.Errorf("the entry has %d arguments, over the limit of %d", len(e.Args), maxArgs)
	}
	for i, a := range e.Args {
		if strings.IndexByte(a, 0) >= 0 || len(a) > maxArgLen {
			return fmt.Errorf("the entry's argument %d holds a NUL byte or is over %d bytes", i+1, maxArgLen)
		}
	}
	if e.Config == nil || len(e.Config) > maxEntryConfig {
		return fmt.Errorf("the entry's config is missing or over %d bytes", maxEntryConfig)
	}

	r := e.RelayDir
	if !cleanAbs(r.Path) || r.Kind != KindDir || r.RealKind != KindDir || r.Real != r.Path {
		return fmt.Errorf("the relay's socket folder %q is not a folder at its own real path", r.Path)
	}
	if r.UID != b.in.UID || r.Mode&0o7777 != 0o700 {
		return fmt.Errorf("the relay's socket folder %s is uid %d mode %o, not the wall's uid %d and 0700", r.Path, r.UID, r.Mode&0o7777, b.in.UID)
	}
	if err := relaySourceOK(r.Real); err != nil {
		return err
	}
	for _, w := range append(append([]string{}, b.rw...), b.p.Own...) {
		if within(r.Real, w) || within(w, r.Real) {
			return fmt.Errorf("the relay's socket folder %s overlaps %s, a folder the wall binds", r.Real, w)
		}
	}

	b.p.Entry = &EntryPlan{Binary: f.Real, Args: append([]string{}, e.Args...), RelayDir: r.Real}
	b.add(Mount{Kind: RoBindFd, Source: f.Real, Dest: EntryPath, Anchor: "/", Expect: f.ID, ExpectKind: KindFile, Why: "the in-namespace entry (this addonwall binary)"})
	b.add(Mount{Kind: RoBindFd, Source: r.Real, Dest: RelayDirPath, Anchor: "/", Expect: r.ID, ExpectKind: KindDir, Why: "the relay's socket folder, this spawn's only"})
	b.add(Mount{Kind: RoBindData, Dest: EntryConfigPath, Data: append([]byte{}, e.Config...), Perms: 0o444, Why: "the entry's config"})
	return nil
}

// relaySourceOK holds for a relay folder wherever it is checked: never
// under a host folder of sockets, never in a shielded folder, never a
// secrets name.
func relaySourceOK(p string) error {
	switch {
	case withinAny(p, hostPlaces):
		return fmt.Errorf("the relay's socket folder %s is under a host folder that holds sockets or kernel state", p)
	case IsShieldedPath(p):
		return fmt.Errorf("the relay's socket folder %s is inside a shielded credential folder", p)
	case IsSensitiveName(filepath.Base(p)):
		return fmt.Errorf("the relay's socket folder %s has a secrets file's name", p)
	}
	return nil
}

// validateEntryMount checks a mount at one of the entry's places, or
// reports false when m is not at one. The entry and the relay folder are
// bound by fd, read-only, from exactly the sources the plan's Entry names.
func (p *Plan) validateEntryMount(m Mount) (bool, error) {
	if !within(m.Dest, EntryDir) {
		return false, nil
	}
	if p.Entry == nil {
		return true, fmt.Errorf("%s is the entry's, and this plan has no entry", EntryDir)
	}
	switch m.Dest {
	case EntryConfigPath:
		if m.Kind != RoBindData || m.Data == nil || m.Slot != "" {
			return true, fmt.Errorf("the entry's config must be fixed data")
		}
		return true, nil
	case EntryPath:
		if m.Kind != RoBindFd || m.ExpectKind != KindFile || m.Source != p.Entry.Binary {
			return true, fmt.Errorf("the entry must be %s, bound read-only by fd", p.Entry.Binary)
		}
	case RelayDirPath:
		if m.Kind != RoBindFd || m.ExpectKind != KindDir || m.Source != p.Entry.RelayDir {
			return true, fmt.Errorf("the relay folder must be %s, bound read-only by fd", p.Entry.RelayDir)
		}
	default:
		return true, fmt.Errorf("nothing but the entry, its config and the relay folder is placed in %s", EntryDir)
	}
	if !cleanAbs(m.Anchor) || !within(m.Source, m.Anchor) || m.Expect.IsZero() {
		return true, fmt.Errorf("fd bind of %s needs a trusted folder above it and the file it must open", m.Source)
	}
	if !cleanAbs(m.Source) {
		return true, fmt.Errorf("source %q is not a clean absolute path", m.Source)
	}
	if err := relaySourceOK(m.Source); err != nil {
		return true, err
	}
	if m.Dest == EntryPath {
		for _, n := range p.NeverBind {
			if within(m.Source, n) {
				return true, fmt.Errorf("%s is inside %s, which is never bound", m.Source, n)
			}
		}
		return true, nil
	}
	// The relay folder may sit inside a never-bind path (the controller's
	// own folder), but must hold none, nor touch the add-on's folders.
	for _, n := range p.NeverBind {
		if within(n, m.Source) {
			return true, fmt.Errorf("the relay folder %s holds %s, which is never bound", m.Source, n)
		}
	}
	for _, o := range p.Own {
		if within(m.Source, o) || within(o, m.Source) {
			return true, fmt.Errorf("the relay folder %s overlaps the add-on's own %s", m.Source, o)
		}
	}
	for _, w := range p.Mounts {
		if w.Kind == Bind && (within(m.Source, w.Source) || within(w.Source, m.Source)) {
			return true, fmt.Errorf("the relay folder %s overlaps the writable %s", m.Source, w.Source)
		}
	}
	return true, nil
}

// validateEntry checks the plan's entry as a whole: when there is one, its
// three mounts are there exactly once.
func (p *Plan) validateEntry() error {
	if p.Entry == nil {
		return nil
	}
	if len(p.Entry.Args) == 0 {
		return fmt.Errorf("the entry has no arguments")
	}
	for i, a := range p.Entry.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("the entry's argument %d holds a NUL byte", i+1)
		}
	}
	count := map[string]int{}
	for _, m := range p.Mounts {
		if m.Dest == EntryPath || m.Dest == EntryConfigPath || m.Dest == RelayDirPath {
			count[m.Dest]++
		}
	}
	for _, d := range []string{EntryPath, EntryConfigPath, RelayDirPath} {
		if count[d] != 1 {
			return fmt.Errorf("a plan with an entry mounts %s exactly once, not %d times", d, count[d])
		}
	}
	return nil
}
