package listener

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/addonwall/addonwall/internal/dockerwatch"
)

// sharedProjects is the seed's one named exception to "only this add-on's
// own compose project": add-on id → the other add-ons' compose projects
// whose published ports it may reach. The table is ours; the seed names
// only "the media add-on's local text-to-speech add-ons", and Crow's one
// public local text-to-speech bundle is kokoro-tts (127.0.0.1:8880). A
// project listed here still has to be an installed add-on.
var sharedProjects = map[string][]string{
	"media": {"kokoro-tts"},
}

// IsCrowProcess is the default matcher for a Crow gateway or satellite in
// any checkout: a path it runs, or an argv element, its executable or
// working folder, with the folders servers/gateway in a row, or a part
// named satellite, crow-satellite or crow-gateway (with or without an
// extension). It errs towards yes: a false match only refuses a
// connection.
func IsCrowProcess(p Process) bool {
	cands := make([]string, 0, len(p.Argv)*2+len(p.ArgPaths)+2)
	for _, a := range p.Argv {
		cands = append(cands, a)
		if _, after, ok := strings.Cut(a, "="); ok {
			cands = append(cands, after)
		}
	}
	cands = append(cands, p.ArgPaths...)
	cands = append(cands, p.Exe, p.Cwd)
	for _, c := range cands {
		if crowPath(c) {
			return true
		}
	}
	return false
}

func crowPath(s string) bool {
	parts := strings.Split(s, "/")
	for i, part := range parts {
		if part == "servers" && i+1 < len(parts) && parts[i+1] == "gateway" {
			return true
		}
		name := part
		if ext := filepath.Ext(name); ext != "" && ext != name {
			name = strings.TrimSuffix(name, ext)
		}
		switch name {
		case "satellite", "crow-satellite", "crow-gateway":
			return true
		}
	}
	return false
}

// underTree reports which fact about p lies under one of roots ("" when
// none does). roots hold each tree both as given and at its real path.
// An argv element counts when it contains a root as a path, anywhere
// (so "-e require('/crow/x')" counts), or when, taken as a path relative
// to the working folder, it resolves under one.
func underTree(p Process, roots []string) string {
	for _, r := range roots {
		switch {
		case under(p.Exe, r):
			return "executable"
		case under(p.Cwd, r):
			return "working folder"
		}
		for _, a := range p.Argv {
			if a == r || strings.Contains(a, r+"/") || strings.HasSuffix(a, r) {
				return "argv element"
			}
		}
		for _, a := range p.ArgPaths {
			if under(a, r) {
				return "argv element"
			}
		}
	}
	return ""
}

// under reports whether path p is root or inside it.
func under(p, root string) bool {
	if p == "" || root == "" {
		return false
	}
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// containerRules are what judgeContainers needs to know about this Crow.
type containerRules struct {
	addonID   string
	installed func(id string) bool
	// bundles are <checkout>/bundles, as given and at its real path.
	bundles []string
	// resolve turns a working folder into its real path.
	resolve func(string) string
}

// judgeContainers decides a root-owned listener on target from the ports
// running containers publish. Every container publishing target's port
// on its address is judged and any refusal wins.
func judgeContainers(pub []dockerwatch.Published, target netip.AddrPort, r containerRules) (Reason, string) {
	var found bool
	for _, p := range pub {
		if !publishes(p, target) {
			continue
		}
		found = true
		if reason, detail := judgeContainer(p, r); reason != "" {
			return reason, detail
		}
	}
	if !found {
		return ReasonNotAContainerPort, fmt.Sprintf("no running container publishes tcp port %d on %s", target.Port(), target.Addr())
	}
	return "", ""
}

// publishes reports whether p is target's port, on target's address or
// on every address.
func publishes(p dockerwatch.Published, target netip.AddrPort) bool {
	if !strings.EqualFold(p.Protocol, "tcp") || p.HostPort != target.Port() {
		return false
	}
	if p.HostIP == "" {
		return true
	}
	a, err := netip.ParseAddr(p.HostIP)
	if err != nil {
		// An address we cannot read might be this one: judge it.
		return true
	}
	return a.IsUnspecified() || a.Unmap() == target.Addr().Unmap()
}

func judgeContainer(p dockerwatch.Published, r containerRules) (Reason, string) {
	id := shortID(p.ContainerID)
	if p.Project == "" {
		return ReasonUnlabelledContainer, fmt.Sprintf("container %s carries no compose project label", id)
	}
	if bundle, ok := checkoutBundle(p.WorkingDir, r); ok {
		// Compose names a project after its folder; a container from the
		// checkout's own bundle folder is that bundle's, and only when
		// this Crow has it installed.
		if bundle != p.Project {
			return ReasonOtherProject, fmt.Sprintf("container %s was started from the checkout's bundle folder %q but is labelled project %q", id, bundle, p.Project)
		}
		if !r.installed(bundle) {
			return ReasonNotInstalled, fmt.Sprintf("container %s was started from the checkout's bundle folder %q, which this Crow has not installed", id, bundle)
		}
	}
	if !r.installed(p.Project) {
		return ReasonNotInstalled, fmt.Sprintf("container %s belongs to compose project %q, which is no installed add-on", id, p.Project)
	}
	if p.Project == r.addonID {
		return "", ""
	}
	for _, other := range sharedProjects[r.addonID] {
		if p.Project == other {
			return "", ""
		}
	}
	return ReasonOtherProject, fmt.Sprintf("container %s belongs to another add-on's compose project %q", id, p.Project)
}

// checkoutBundle returns <id> when dir is <checkout>/bundles/<id> or
// inside it.
func checkoutBundle(dir string, r containerRules) (string, bool) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", false
	}
	for _, d := range []string{filepath.Clean(dir), r.resolve(dir)} {
		for _, b := range r.bundles {
			if rest, ok := strings.CutPrefix(d, b+"/"); ok && rest != "" {
				id, _, _ := strings.Cut(rest, "/")
				return id, true
			}
		}
	}
	return "", false
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
