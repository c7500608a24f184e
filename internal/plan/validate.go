package plan

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Validate checks a plan's cross-field rules on the plan alone, whoever built
// it: every namespace unshared; every writable host bind by fd; path binds
// only from system folders; no host bind from, or showing, a never-bind path
// outside the add-on's own folders; no secrets file bound but the add-on's
// own .env; nothing that cannot travel through bubblewrap's --args (NUL);
// nothing in EntryDir but the entry, its config and the relay's folder,
// each once. bwrap.Start calls it again before spawning.
func (p *Plan) Validate() error {
	if p == nil {
		return fmt.Errorf("no plan")
	}
	if !AddonIDPattern.MatchString(p.AddonID) {
		return fmt.Errorf("add-on id %q is not valid", p.AddonID)
	}
	ns := p.Namespaces
	if !(ns.User && ns.DisableUserns && ns.PID && ns.IPC && ns.UTS && ns.Cgroup && ns.Net) {
		return fmt.Errorf("a wall unshares every namespace (user with nested user namespaces disabled, pid, ipc, uts, cgroup, net); this plan does not")
	}
	if p.Hostname == "" || strings.ContainsAny(p.Hostname, "\x00/") {
		return fmt.Errorf("hostname %q is not valid", p.Hostname)
	}
	if !cleanAbs(p.Command) {
		return fmt.Errorf("command %q is not a clean absolute path", p.Command)
	}
	for i, a := range p.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d holds a NUL byte", i+1)
		}
	}
	if err := p.validateEnv(); err != nil {
		return err
	}
	if err := p.validateEntry(); err != nil {
		return err
	}
	if !cleanAbs(p.Chdir) {
		return fmt.Errorf("working folder %q is not a clean absolute path", p.Chdir)
	}
	chdirBound := false
	for i, m := range p.Mounts {
		if err := p.validateMount(i, m); err != nil {
			return fmt.Errorf("mount %d (%s %s): %w", i+1, m.Kind, m.Dest, err)
		}
		if m.Kind == RoBindFd && m.Dest == p.Chdir && m.ExpectKind == KindDir {
			chdirBound = true
		}
	}
	if !chdirBound {
		return fmt.Errorf("working folder %s is not bound read-only by fd", p.Chdir)
	}
	for _, n := range p.NeverBind {
		if isOwn(n, p.Own) {
			continue
		}
		if m := p.Visible(n); m != nil && m.IsHostBind() {
			return fmt.Errorf("%s is never bound, yet %s %s shows it", n, m.Kind, m.Source)
		}
	}
	return nil
}

// Visible returns the mount that decides what the wall shows at path p: the
// last mount that covers it. nil means nothing does (an empty folder of the
// wall's own root).
func (p *Plan) Visible(path string) *Mount {
	var last *Mount
	for i := range p.Mounts {
		if covers(p.Mounts[i], path) {
			last = &p.Mounts[i]
		}
	}
	return last
}

func (p *Plan) validateEnv() error {
	for name, value := range p.Env {
		if err := checkEnvVar("child environment", name, value); err != nil {
			return err
		}
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		if !strings.HasPrefix(p.Env[k], "http://127.0.0.1:") {
			return fmt.Errorf("child environment: %s must point at the wall's own proxy", k)
		}
	}
	if p.Env["TMPDIR"] != "/tmp" {
		return fmt.Errorf("child environment: TMPDIR must be /tmp")
	}
	return nil
}

func (p *Plan) validateMount(i int, m Mount) error {
	if !cleanAbs(m.Dest) {
		return fmt.Errorf("destination is not a clean absolute path")
	}
	if ok, err := p.validateEntryMount(m); ok {
		return err
	}
	switch m.Kind {
	case RoBind:
		if !IsSystemPath(m.Source) {
			return fmt.Errorf("a bind by path is only for system folders; %s must be bound by fd", m.Source)
		}
	case RoBindFd, Bind:
		if !cleanAbs(m.Anchor) || !within(m.Source, m.Anchor) {
			return fmt.Errorf("fd bind of %s needs a trusted folder above it, has %q", m.Source, m.Anchor)
		}
		if m.ExpectKind != KindDir && m.ExpectKind != KindFile {
			return fmt.Errorf("fd bind of %s must expect a file or a folder", m.Source)
		}
		if m.Expect.IsZero() {
			return fmt.Errorf("fd bind of %s does not name the file it must open", m.Source)
		}
	case MaskFile, MaskDir, Tmpfs, Proc, Dev, Dir:
		if m.Source != "" {
			return fmt.Errorf("has a source")
		}
		return nil
	case Symlink:
		if m.Source == "" || strings.IndexByte(m.Source, 0) >= 0 {
			return fmt.Errorf("link target is not valid")
		}
		return nil
	case RoBindData:
		if (m.Slot == "") == (m.Data == nil) {
			return fmt.Errorf("needs exactly one of fixed data or a slot")
		}
		return nil
	case RemountRo:
		for _, e := range p.Mounts[:i] {
			if e.Dest == m.Dest && (e.Kind == MaskDir || e.Kind == Tmpfs) {
				return nil
			}
		}
		return fmt.Errorf("remounts something that is not an earlier tmpfs")
	default:
		return fmt.Errorf("unknown mount kind")
	}
	// Host binds from here on.
	if !cleanAbs(m.Source) || m.Source != m.Dest {
		return fmt.Errorf("a host path is bound at its own real path; source %q", m.Source)
	}
	if withinAny(m.Source, hostPlaces) {
		return fmt.Errorf("%s is under a host folder that holds sockets or kernel state", m.Source)
	}
	if IsShieldedPath(m.Source) {
		return fmt.Errorf("%s is inside a shielded credential folder", m.Source)
	}
	if IsSensitiveName(filepath.Base(m.Source)) && !(m.Source == p.OwnEnvFile && m.Kind == RoBindFd) {
		return fmt.Errorf("%s is a secrets file", m.Source)
	}
	for _, n := range p.NeverBind {
		if within(m.Source, n) && !withinAny(m.Source, p.Own) {
			return fmt.Errorf("%s is inside %s, which is never bound", m.Source, n)
		}
	}
	return nil
}
