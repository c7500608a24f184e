package plan

import (
	"path/filepath"
	"testing"
)

// The fixture is a made-up host: the owner's home /home/u, CROW_HOME
// /home/u/.crow, data dir /home/u/.crow/data, checkout /srv/crow, node from
// /usr, and add-on "demo".
const (
	tHome     = "/home/u"
	tCrow     = "/home/u/.crow"
	tData     = "/home/u/.crow/data"
	tCheckout = "/srv/crow"
	tInstall  = "/home/u/.crow/bundles/demo"
	tFolder   = "/home/u/.crow/data/demo"
	tUID      = 1000
)

var nextIno uint64 = 100

func newID() FileID {
	nextIno++
	return FileID{Dev: 8, Ino: nextIno}
}

func dirFacts(p string) PathFacts {
	return PathFacts{Path: p, Real: p, Kind: KindDir, RealKind: KindDir, ID: newID(), UID: tUID, Mode: 0o755}
}

func rootDir(p string) PathFacts {
	f := dirFacts(p)
	f.UID = 0
	return f
}

func fileFacts(p string) PathFacts {
	return PathFacts{Path: p, Real: p, Kind: KindFile, RealKind: KindFile, ID: newID(), UID: tUID, Mode: 0o644, Nlink: 1, Size: 10}
}

func linkFacts(p, link, real string, realKind Kind) PathFacts {
	return PathFacts{Path: p, Real: real, Kind: KindSymlink, RealKind: realKind, Link: link, ID: newID(), UID: 0, Mode: 0o777}
}

func node(p string, k Kind) Node {
	return Node{Path: p, Kind: k, ID: newID(), Nlink: 1, Size: 10}
}

func scan(root string, sensitive ...Node) TreeScan {
	return TreeScan{Root: root, RootID: newID(), Entries: 10, Sensitive: sensitive}
}

// baseInput is a valid input; each test row changes one thing.
func baseInput() Input {
	install := dirFacts(tInstall)
	folder := dirFacts(tFolder)
	checkout := dirFacts(tCheckout)
	node := PathFacts{Path: "/usr/bin/node", Real: "/usr/bin/node", Kind: KindFile, RealKind: KindFile, ID: newID(), UID: 0, Mode: 0o755}
	in := Input{
		AddonID:    "demo",
		UID:        tUID,
		CrowHome:   dirFacts(tCrow),
		DataDir:    dirFacts(tData),
		Checkout:   checkout,
		Home:       dirFacts(tHome),
		HomeHidden: []string{".crow", ".ssh", ".config", ".local", ".bashrc", ".nvm"},
		Install:    install,
		DataFolder: folder,
		Command: Command{
			Facts: node,
			Chain: []PathFacts{rootDir("/"), rootDir("/usr"), rootDir("/usr/bin")},
			Args:  []string{"server/index.js"},
		},
		Runtime: rootDir("/usr"),
		System: []PathFacts{
			rootDir("/usr"),
			linkFacts("/bin", "usr/bin", "/usr/bin", KindDir),
			linkFacts("/lib", "usr/lib", "/usr/lib", KindDir),
			linkFacts("/lib64", "usr/lib64", "/usr/lib64", KindDir),
			rootDir("/etc/ssl/certs"),
			{Path: "/etc/passwd", Real: "/etc/passwd", Kind: KindFile, RealKind: KindFile, ID: newID(), Mode: 0o644},
			linkFacts("/etc/localtime", "/usr/share/zoneinfo/Etc/UTC", "/usr/share/zoneinfo/Etc/UTC", KindFile),
		},
		Env: EnvInput{Controller: map[string]string{"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}},
		Scans: map[string]TreeScan{
			tInstall:  scan(tInstall),
			tFolder:   scan(tFolder),
			tCheckout: scan(tCheckout),
		},
		Seccomp: true,
	}
	return in
}

func mustBuild(t *testing.T, in Input) *Plan {
	t.Helper()
	p, err := Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p
}

// shown returns the kind of mount that decides path p, or "" for nothing.
func shown(p *Plan, path string) MountKind {
	if m := p.Visible(path); m != nil {
		return m.Kind
	}
	return ""
}

// hostVisible reports whether the wall shows the host's file at path.
func hostVisible(p *Plan, path string) bool {
	m := p.Visible(path)
	return m != nil && m.IsHostBind()
}

func addSensitive(in *Input, root string, n Node) {
	s := in.Scans[root]
	s.Sensitive = append(s.Sensitive, n)
	in.Scans[root] = s
}

func addLink(in *Input, root string, n Node) {
	s := in.Scans[root]
	s.Links = append(s.Links, n)
	in.Scans[root] = s
}

func join(a string, b ...string) string { return filepath.Join(append([]string{a}, b...)...) }
