package planfacts

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/addonwall/addonwall/internal/plan"
)

func sortedPaths(nodes []plan.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Path)
	}
	sort.Strings(out)
	return out
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func nodeAt(nodes []plan.Node, path string) (plan.Node, bool) {
	for _, n := range nodes {
		if n.Path == path {
			return n, true
		}
	}
	return plan.Node{}, false
}

// realTemp is a temp folder at its own real path.
func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestScanRecordsWhatThePlanMasks(t *testing.T) {
	root := realTemp(t)
	write(t, root+"/.env", "SECRET=1")
	write(t, root+"/a/b/c/.env", "SECRET=2")
	write(t, root+"/a/.env.local", "SECRET=3")
	write(t, root+"/.mcp.json", "{}")
	write(t, root+"/.ssh/id_rsa", "KEY")
	write(t, root+"/x/.config/gcloud/creds.json", "{}")
	write(t, root+"/readme.md", "hello")
	write(t, root+"/.envelope", "not a dotenv file")
	// A hard link to .env under another name.
	if err := os.Link(root+"/.env", root+"/docs-notes.txt"); err != nil {
		t.Fatal(err)
	}
	// A symlink chain that ends at a .env, a dangling one and a loop.
	if err := os.Symlink(".env", root+"/step2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("step2", root+"/step1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/x", root+"/dangling"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop2", root+"/loop1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop1", root+"/loop2"); err != nil {
		t.Fatal(err)
	}
	// A symlinked folder holding a .env must not be walked into.
	outside := realTemp(t)
	write(t, outside+"/.env", "OUTSIDE")
	if err := os.Symlink(outside, root+"/linkdir"); err != nil {
		t.Fatal(err)
	}
	// A unix socket.
	l, err := net.Listen("unix", root+"/gw.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	s, err := Scan(context.Background(), root, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if s.Incomplete != "" {
		t.Fatalf("incomplete: %s", s.Incomplete)
	}
	wantSensitive := []string{
		root + "/.env", root + "/.mcp.json", root + "/.ssh", root + "/.ssh/id_rsa",
		root + "/a/.env.local", root + "/a/b/c/.env",
		root + "/x/.config/gcloud", root + "/x/.config/gcloud/creds.json",
	}
	if got := sortedPaths(s.Sensitive); strings.Join(got, "\n") != strings.Join(wantSensitive, "\n") {
		t.Fatalf("sensitive:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantSensitive, "\n"))
	}
	env, _ := nodeAt(s.Sensitive, root+"/.env")
	alias, ok := nodeAt(s.Links, root+"/docs-notes.txt")
	if !ok || alias.ID != env.ID || env.Nlink != 2 {
		t.Fatalf("hard link alias not recorded with the .env's inode: %+v %+v", alias, env)
	}
	if _, ok := nodeAt(s.Links, root+"/readme.md"); ok {
		t.Fatal("a file with one name is recorded as a hard link")
	}
	step1, ok := nodeAt(s.Symlinks, root+"/step1")
	if !ok || step1.Target != root+"/.env" || step1.TargetID != env.ID {
		t.Fatalf("symlink chain not resolved to the .env: %+v", step1)
	}
	for _, p := range []string{"/dangling", "/loop1"} {
		if n, ok := nodeAt(s.Symlinks, root+p); !ok || n.Target != "" {
			t.Fatalf("%s: want a recorded link leading nowhere, got %+v (found %v)", p, n, ok)
		}
	}
	if ld, ok := nodeAt(s.Symlinks, root+"/linkdir"); !ok || ld.TargetKind != plan.KindDir {
		t.Fatalf("symlinked folder not recorded: %+v", ld)
	}
	for _, n := range s.Sensitive {
		if strings.HasPrefix(n.Path, root+"/linkdir/") {
			t.Fatalf("the scan followed a symlinked folder: %s", n.Path)
		}
	}
	if got := sortedPaths(s.Sockets); len(got) != 1 || got[0] != root+"/gw.sock" {
		t.Fatalf("sockets = %v", got)
	}
}

func TestScanLimits(t *testing.T) {
	root := realTemp(t)
	for i := 0; i < 20; i++ {
		write(t, filepath.Join(root, "d", string(rune('a'+i))), "x")
	}
	deep := root + "/deep"
	for i := 0; i < 10; i++ {
		deep += "/n"
	}
	write(t, deep+"/f", "x")

	cases := []struct {
		name string
		lim  Limits
		want string
	}{
		{"within the limits the tree is complete", Limits{MaxEntries: 1000, MaxDepth: 20}, ""},
		{"too many entries", Limits{MaxEntries: 15, MaxDepth: 20}, "more than 15 entries"},
		{"too deep", Limits{MaxEntries: 1000, MaxDepth: 5}, "deeper than 5 levels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Scan(context.Background(), root, c.lim)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" && s.Incomplete != "" {
				t.Fatalf("incomplete: %s", s.Incomplete)
			}
			if c.want != "" && !strings.Contains(s.Incomplete, c.want) {
				t.Fatalf("incomplete = %q, want %q", s.Incomplete, c.want)
			}
		})
	}
}

func TestScanRefusesABadRoot(t *testing.T) {
	root := realTemp(t)
	if err := os.Symlink(root, root+"-link"); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(root + "-link")
	if _, err := Scan(context.Background(), root+"-link", DefaultLimits); err == nil {
		t.Fatal("a symlinked root was scanned")
	}
	if _, err := Scan(context.Background(), root, DefaultLimits); err != nil {
		t.Fatalf("positive control: %v", err)
	}
	if _, err := Scan(context.Background(), "rel/path", DefaultLimits); err == nil {
		t.Fatal("a relative root was scanned")
	}
}

func TestScanUnreadableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a 000 folder anyway; this case needs an unprivileged user")
	}
	root := realTemp(t)
	write(t, root+"/closed/.env", "x")
	if err := os.Chmod(root+"/closed", 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(root+"/closed", 0o755)
	s, err := Scan(context.Background(), root, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Incomplete, "cannot open") {
		t.Fatalf("incomplete = %q", s.Incomplete)
	}
}

func TestDescribe(t *testing.T) {
	root := realTemp(t)
	write(t, root+"/f", "x")
	if err := os.Symlink("f", root+"/l"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nothing", root+"/dangling"); err != nil {
		t.Fatal(err)
	}
	f, err := Describe(root + "/f")
	if err != nil || f.Kind != plan.KindFile || f.Real != root+"/f" || f.ID.IsZero() || uint32(f.UID) != uint32(os.Geteuid()) {
		t.Fatalf("file facts %+v, %v", f, err)
	}
	l, err := Describe(root + "/l")
	if err != nil || l.Kind != plan.KindSymlink || l.Link != "f" || l.Real != root+"/f" || l.RealKind != plan.KindFile || l.ID != f.ID {
		t.Fatalf("link facts %+v, %v", l, err)
	}
	d, err := Describe(root + "/dangling")
	if err != nil || d.Exists() || d.Kind != plan.KindSymlink {
		t.Fatalf("dangling facts %+v, %v", d, err)
	}
	m, err := Describe(root + "/missing")
	if err != nil || m.Exists() || m.Kind != plan.KindMissing {
		t.Fatalf("missing facts %+v, %v", m, err)
	}
	c, err := Chain(root + "/f")
	if err != nil || c[0].Path != "/" || c[len(c)-1].Path != root {
		t.Fatalf("chain %+v, %v", c, err)
	}
}

func TestGather(t *testing.T) {
	base := realTemp(t)
	home := base + "/home"
	crow := home + "/.crow"
	data := crow + "/data"
	write(t, crow+"/bundles/demo/index.js", "x")
	write(t, crow+"/bundles/demo/.env", "A=1")
	write(t, data+"/demo/state.json", "{}")
	write(t, data+"/crow.db", "")
	write(t, home+"/.ssh/id_rsa", "k")
	write(t, base+"/share/doc.txt", "d")
	write(t, crow+"/browser/x", "s")
	in, err := Gather(context.Background(), Request{
		AddonID: "demo", UID: uint32(os.Geteuid()), CrowHome: crow, DataDir: data, Home: home,
		Command: "/bin/sh", Args: []string{"-c", "true"}, Runtime: "/usr",
		Read:       []GrantRequest{{Field: "DOCS", Value: base + "/share", OwnerTyped: true}, {Field: "WIDE", Value: home, OwnerTyped: true}},
		CrowDB:     true,
		FirstParty: true,
		StateDirs:  []string{"browser"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if in.Install.Real != crow+"/bundles/demo" || in.DataFolder.Real != data+"/demo" {
		t.Fatalf("install/data facts: %+v %+v", in.Install, in.DataFolder)
	}
	for _, root := range []string{crow + "/bundles/demo", data + "/demo", base + "/share", crow + "/browser"} {
		if _, ok := in.Scans[root]; !ok {
			t.Errorf("%s not scanned", root)
		}
	}
	if _, ok := in.Scans[home]; ok {
		t.Error("a grant holding the owner's home was scanned; the plan refuses it anyway")
	}
	if _, ok := nodeAt(in.Scans[crow+"/bundles/demo"].Sensitive, crow+"/bundles/demo/.env"); !ok {
		t.Error("install .env not found")
	}
	if len(in.HomeHidden) != 2 {
		t.Errorf("hidden home entries = %v, want .crow and .ssh", in.HomeHidden)
	}
	if len(in.Profile.DataDirEntries) != 2 {
		t.Errorf("data dir entries = %v", in.Profile.DataDirEntries)
	}
	if in.Command.Facts.Real == "" || len(in.Command.Chain) == 0 || len(in.System) == 0 {
		t.Errorf("command or system facts missing")
	}
}
