package bwrap

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/planfacts"
)

// wallScript runs inside the wall and prints one "name:yes|no" line per
// check, then facts about the wall itself.
const wallScript = `
install=$1 checkout=$2 crow=$3 data=$4
check() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name:yes"; else echo "$name:no"; fi; }
check read_install cat "$install/index.txt"
check read_env cat "$install/.env"
check read_env_alias cat "$install/notes.txt"
check read_env_symlink cat "$install/config-link"
check read_checkout cat "$checkout/README"
check read_checkout_env cat "$checkout/a/b/c/.env"
check read_registry cat "$crow/mcp-addons.json"
check read_walls cat "$crow/addon-walls.json"
check read_secrets cat "$crow/secrets/k"
check read_other_data cat "$data/other/secret.txt"
check write_own sh -c "echo x > '$data/demo/out'"
check write_install sh -c "echo x > '$install/new'"
check write_tmp sh -c "echo x > /tmp/x"
check nested_userns unshare -U true
check read_host_etc_shadow cat /etc/shadow
for i in $(tail -n +3 /proc/net/dev | cut -d: -f1); do echo "iface:$i"; done
echo "hostname:$(cat /proc/sys/kernel/hostname)"
grep -E '^(NoNewPrivs|CapEff|Seccomp):' /proc/self/status | tr -d '\t ' | sed 's/^/status:/'
env | sed 's/^/env:/'
echo "pid1cmdline:$(tr '\0\n' '  ' < /proc/1/cmdline)"
echo "pid1environ:$(tr '\0\n' '  ' < /proc/1/environ)"
`

func TestWallEndToEnd(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	mkfile(t, l.install+"/.env", "SECRET=canary-env")
	if err := os.Link(l.install+"/.env", l.install+"/notes.txt"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", l.install+"/config-link"); err != nil {
		t.Fatal(err)
	}
	mkfile(t, l.checkout+"/a/b/c/.env", "SECRET=canary-checkout")
	mkfile(t, l.crow+"/mcp-addons.json", `{"demo":{"env":{"K":"canary-registry"}}}`)
	mkfile(t, l.crow+"/addon-walls.json", `{"version":1}`)
	mkfile(t, l.crow+"/secrets/k", "canary-secret")
	mkfile(t, l.data+"/other/secret.txt", "canary-other")

	p := l.planFor(t, "/bin/sh", []string{"-c", wallScript, "sh", l.install, l.checkout, l.crow, l.data}, func(r *planfacts.Request) {
		r.Env = plan.EnvInput{
			Controller: map[string]string{"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "CROW_TEST_CANARY": "canary-controller", "AWS_SECRET_ACCESS_KEY": "canary-aws"},
			Own:        []plan.EnvVar{{Name: "OWN_TOKEN", Value: "own-value", OwnerTyped: true}},
		}
	})
	out := runWall(t, bwrapPath, p)
	lines := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			lines[k] = append(lines[k], v)
		}
	}
	one := func(k string) string {
		if len(lines[k]) != 1 {
			t.Fatalf("%s: %v in output:\n%s", k, lines[k], out)
		}
		return lines[k][0]
	}
	// Each refusal beside its positive control on the same kind of path.
	for name, want := range map[string]string{
		"read_install": "yes", "read_env": "no", "read_env_alias": "no", "read_env_symlink": "no",
		"read_checkout": "yes", "read_checkout_env": "no",
		"read_registry": "no", "read_walls": "no", "read_secrets": "no", "read_other_data": "no",
		"write_own": "yes", "write_install": "no", "write_tmp": "yes",
		"nested_userns": "no", "read_host_etc_shadow": "no",
	} {
		if got := one(name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if got, err := os.ReadFile(l.folder + "/out"); err != nil || string(got) != "x\n" {
		t.Errorf("the write to the data folder did not land on the host: %q %v", got, err)
	}
	if _, err := os.Stat(l.install + "/new"); err == nil {
		t.Error("a file appeared in the install folder")
	}
	if ifs := lines["iface"]; len(ifs) != 1 || ifs[0] != "lo" {
		t.Errorf("interfaces = %v, want only lo", ifs)
	}
	if h := one("hostname"); h != plan.Hostname {
		t.Errorf("hostname = %q", h)
	}
	status := strings.Join(lines["status"], ",")
	for _, want := range []string{"NoNewPrivs:1", "CapEff:0000000000000000", "Seccomp:2"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %s: %s", want, status)
		}
	}
	env := strings.Join(lines["env"], "\n")
	if !strings.Contains(env, "OWN_TOKEN=own-value") || !strings.Contains(env, "HOME="+l.folder) {
		t.Errorf("the child lacks its own values (positive control):\n%s", env)
	}
	for _, canary := range []string{"canary-controller", "canary-aws", "canary-env", "canary-checkout", "canary-registry", "canary-secret", "canary-other"} {
		if strings.Contains(out, canary) {
			t.Errorf("%s reached the wall", canary)
		}
	}
	if c := one("pid1cmdline"); strings.Contains(c, "own-value") || strings.Contains(c, "--setenv") || strings.Contains(c, "--bind") {
		t.Errorf("bubblewrap's command line shows the plan: %s", c)
	}
	if e := strings.TrimSpace(one("pid1environ")); e != "PATH=/usr/bin:/bin" {
		t.Errorf("bubblewrap's environment inside the wall = %q, want only PATH", e)
	}
}

// TestWallChildHasOnlyStdio reads the descriptors of the add-on and of the
// wall's pid 1 from the host while the add-on runs, with a descriptor leaked
// (opened without O_CLOEXEC) in this process beforehand.
func TestWallChildHasOnlyStdio(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	mkfile(t, l.root+"/leak", "leaked")
	leaked, err := openNoCloexec(l.root + "/leak")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFd(leaked)
	// Positive control: a plain child of this process does inherit it, so
	// the check below can see a leak.
	if got := fdsOfPlainChild(t); !strings.Contains(got, " "+itoa(leaked)+" ") {
		t.Fatalf("control: the leaked descriptor %d is not inherited by a plain child (fds %q); the test cannot see leaks", leaked, got)
	}

	p := l.planFor(t, "/usr/bin/sleep", []string{"30"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	child, err := Start(ctx, p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Kill(); _, _ = child.Wait() }()
	pid := waitForExec(t, child, "/usr/bin/sleep")
	if got := fdList(t, pid); got != "0 1 2" {
		t.Errorf("the add-on holds descriptors %q, want exactly 0 1 2", got)
	}
	initFds := fdTargets(t, child.Pid())
	for fd, target := range initFds {
		if fd > 2 && !strings.HasPrefix(target, "anon_inode:") {
			t.Errorf("the wall's pid 1 holds descriptor %d -> %s", fd, target)
		}
	}
	ns := child.Namespaces()
	if ns["net"] == 0 || ns["pid"] == 0 {
		t.Errorf("namespaces not reported: %v", ns)
	}
}

// runWall runs plan p in a real wall with every syscall allowed, fails the
// test unless the command ran and exited 0, and returns its stdout.
func runWall(t *testing.T, bwrapPath string, p *plan.Plan) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	child, err := Start(ctx, p, allowAll(), Stdio{Stdout: &stdout, Stderr: &stderr}, WithBwrapPath(bwrapPath))
	if err != nil {
		t.Fatal(err)
	}
	exit, err := child.Wait()
	if err != nil || exit.SetupFailed || exit.Code != 0 {
		t.Fatalf("wall exit %+v, %v; stderr: %s", exit, err, stderr.String())
	}
	return stdout.String()
}
