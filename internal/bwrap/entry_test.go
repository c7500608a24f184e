package bwrap

import (
	"net"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/planfacts"
)

// entryScript runs as the add-on behind a stand-in entry and reports what
// the wall shows at the entry's places.
const entryScript = `
check() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name:yes"; else echo "$name:no"; fi; }
echo "config:$(cat /run/addonwall/entry.json)"
check socket test -S /run/addonwall/relay/relay.sock
check write_relay sh -c "echo x > /run/addonwall/relay/planted"
check write_entry sh -c "echo x > /run/addonwall/entry"
echo "parent:$(tr '\0' ' ' < /proc/1/cmdline)"
`

// withStandInEntry makes a relay folder with a listening socket and plans
// /usr/bin/env as the entry: like the real entry it runs what follows
// "--", so the add-on's view of the entry's places can be checked here
// without the addonwall binary.
func withStandInEntry(t *testing.T, l crowLayout) func(*planfacts.Request) {
	relay := l.root + "/state/relay/r1"
	if err := os.MkdirAll(relay, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(relay, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", relay+"/relay.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return func(r *planfacts.Request) {
		r.Entry = &planfacts.EntryRequest{
			Binary:   "/usr/bin/env",
			Args:     []string{"-u", "NOTHING"},
			Config:   []byte(`{"relaySocket":"/run/addonwall/relay/relay.sock","proxyPort":39080}`),
			RelayDir: relay,
		}
	}
}

func TestWalledArgsWithEntry(t *testing.T) {
	l := newCrow(t)
	p := l.planFor(t, "/bin/sh", []string{"-c", "true"}, withStandInEntry(t, l))
	a, err := WalledArgs(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bwrap", "--args", "3", "--", plan.EntryPath, "-u", "NOTHING", "--", p.Command, "-c", "true"}
	if got := a.Argv(); !reflect.DeepEqual(got, want) {
		t.Fatalf("bwrap argv = %q, want %q", got, want)
	}
	got := parseArgs(t, a.Args)
	kinds := map[string]plan.MountKind{}
	for _, m := range got.mounts {
		kinds[m.Dest] = m.Kind
	}
	for dest, want := range map[string]plan.MountKind{plan.EntryPath: plan.RoBindFd, plan.RelayDirPath: plan.RoBindFd, plan.EntryConfigPath: plan.RoBindData} {
		if kinds[dest] != want {
			t.Errorf("%s is mounted as %q, want %q", dest, kinds[dest], want)
		}
	}
}

func TestWallWithEntry(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	p := l.planFor(t, "/bin/sh", []string{"-c", entryScript}, withStandInEntry(t, l))
	out := runWall(t, bwrapPath, p)
	lines := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			lines[k] = v
		}
	}
	if !strings.Contains(lines["config"], `"proxyPort":39080`) {
		t.Errorf("the entry's config is not readable at %s: %q", plan.EntryConfigPath, lines["config"])
	}
	// The socket shows through the read-only bind (positive control),
	// and nothing can be put beside it.
	for name, want := range map[string]string{"socket": "yes", "write_relay": "no", "write_entry": "no"} {
		if lines[name] != want {
			t.Errorf("%s = %q, want %s\n%s", name, lines[name], want, out)
		}
	}
	if _, err := os.Stat(l.root + "/state/relay/r1/planted"); err == nil {
		t.Error("a file written inside the wall landed in the relay folder")
	}
	// env execs what follows "--", so the add-on's parent is the wall's
	// pid 1, which was told to run the entry first.
	if !strings.Contains(lines["parent"], " -- "+plan.EntryPath+" -u NOTHING -- "+p.Command) {
		t.Errorf("the wall did not run the entry first: pid 1 is %q", lines["parent"])
	}
}
