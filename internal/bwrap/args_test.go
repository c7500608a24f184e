package bwrap

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/planfacts"
)

// parsed is what an --args payload says, read back.
type parsed struct {
	flags    map[string]bool
	hostname string
	chdir    string
	env      map[string]string
	mounts   []plan.Mount // Source holds "fd:N" for descriptor mounts
	seccomp  string
	status   string
}

// parseArgs reads bubblewrap options back; it fails on anything it does not
// know, so an option the builder adds cannot slip by the round trip.
func parseArgs(t *testing.T, args []string) parsed {
	t.Helper()
	p := parsed{flags: map[string]bool{}, env: map[string]string{}}
	perms := ""
	for i := 0; i < len(args); i++ {
		next := func() string {
			i++
			if i >= len(args) {
				t.Fatalf("option %s lacks a value", args[i-1])
			}
			return args[i]
		}
		switch a := args[i]; a {
		case "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
			"--unshare-cgroup", "--unshare-net", "--die-with-parent", "--new-session", "--clearenv":
			p.flags[a] = true
		case "--cap-drop":
			p.flags[a+"="+next()] = true
		case "--hostname":
			p.hostname = next()
		case "--chdir":
			p.chdir = next()
		case "--setenv":
			k := next()
			p.env[k] = next()
		case "--seccomp":
			p.seccomp = next()
		case "--json-status-fd":
			p.status = next()
		case "--perms":
			perms = next()
		case "--ro-bind":
			src, dst := next(), next()
			if src == "/dev/null" {
				p.mounts = append(p.mounts, plan.Mount{Kind: plan.MaskFile, Dest: dst})
			} else {
				p.mounts = append(p.mounts, plan.Mount{Kind: plan.RoBind, Source: src, Dest: dst})
			}
		case "--ro-bind-fd":
			fd := next()
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.RoBindFd, Source: "fd:" + fd, Dest: next()})
		case "--bind-fd":
			fd := next()
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.Bind, Source: "fd:" + fd, Dest: next()})
		case "--ro-bind-data":
			fd := next()
			m := plan.Mount{Kind: plan.RoBindData, Source: "fd:" + fd, Dest: next()}
			v, _ := strconv.ParseUint(perms, 8, 32)
			m.Perms = uint32(v)
			perms = ""
			p.mounts = append(p.mounts, m)
		case "--tmpfs":
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.Tmpfs, Dest: next()})
		case "--proc":
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.Proc, Dest: next()})
		case "--dev":
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.Dev, Dest: next()})
		case "--dir":
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.Dir, Dest: next()})
		case "--symlink":
			src := next()
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.Symlink, Source: src, Dest: next()})
		case "--remount-ro":
			p.mounts = append(p.mounts, plan.Mount{Kind: plan.RemountRo, Dest: next()})
		default:
			t.Fatalf("unknown bubblewrap option %q in the payload", a)
		}
	}
	return p
}

func TestWalledArgsRoundTrip(t *testing.T) {
	l := newCrow(t)
	mkfile(t, l.install+"/.env", "OWN=1")
	mkfile(t, l.checkout+"/a/.env", "SECRET=1")
	p := l.planFor(t, "/bin/sh", []string{"-c", "true"}, func(r *planfacts.Request) {
		r.OwnEnvFile = true
		r.Doors = true
		r.Env.Own = []plan.EnvVar{{Name: "OWN_TOKEN", Value: "v a l\nue", OwnerTyped: true}}
	})
	a, err := WalledArgs(p)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := Encode(a.Args)
	if err != nil {
		t.Fatal(err)
	}
	got := parseArgs(t, Decode(payload))

	for _, f := range []string{"--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--unshare-cgroup", "--unshare-net", "--die-with-parent", "--new-session", "--clearenv", "--cap-drop=ALL"} {
		if !got.flags[f] {
			t.Errorf("missing %s", f)
		}
	}
	if got.hostname != p.Hostname || got.chdir != p.Chdir {
		t.Errorf("hostname/chdir = %q %q", got.hostname, got.chdir)
	}
	if !reflect.DeepEqual(got.env, p.Env) {
		t.Errorf("env round trip differs:\n got %v\nwant %v", got.env, p.Env)
	}
	if len(got.mounts) != len(p.Mounts) {
		t.Fatalf("%d mounts read back, plan has %d", len(got.mounts), len(p.Mounts))
	}
	for i, m := range p.Mounts {
		g := got.mounts[i]
		want := m.Kind
		if want == plan.MaskDir {
			want = plan.Tmpfs
		}
		if g.Kind != want || g.Dest != m.Dest {
			t.Errorf("mount %d: read back %s %s, plan %s %s", i, g.Kind, g.Dest, m.Kind, m.Dest)
			continue
		}
		switch m.Kind {
		case plan.RoBind, plan.Symlink:
			if g.Source != m.Source {
				t.Errorf("mount %d: source %s, plan %s", i, g.Source, m.Source)
			}
		case plan.RoBindFd, plan.Bind, plan.RoBindData:
			n, _ := strconv.Atoi(strings.TrimPrefix(g.Source, "fd:"))
			use := a.Fds[n-firstFd]
			if use.Mount != i || (use.Kind != FdMount && use.Kind != FdData) {
				t.Errorf("mount %d: fd %d carries %+v", i, n, use)
			}
			if m.Kind == plan.RoBindData && g.Perms != m.Perms {
				t.Errorf("mount %d: perms %o, plan %o", i, g.Perms, m.Perms)
			}
		}
	}
	if a.Fds[0].Kind != FdArgs {
		t.Error("fd 3 is not the args fd")
	}
	if n, _ := strconv.Atoi(got.seccomp); a.Fds[n-firstFd].Kind != FdSeccomp {
		t.Error("--seccomp does not name the seccomp fd")
	}
	if n, _ := strconv.Atoi(got.status); a.Fds[n-firstFd].Kind != FdStatus {
		t.Error("--json-status-fd does not name the status fd")
	}
	argv := a.Argv()
	want := append([]string{"bwrap", "--args", "3", "--", p.Command}, p.Args...)
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("bwrap argv = %q, want %q", argv, want)
	}
	for _, s := range argv {
		if strings.Contains(s, "OWN_TOKEN") || strings.Contains(s, "v a l") {
			t.Errorf("an environment value is on bwrap's command line: %q", s)
		}
	}
}

func TestWalledArgsRefusesAnInvalidPlan(t *testing.T) {
	l := newCrow(t)
	p := l.planFor(t, "/bin/sh", nil, nil)
	if _, err := WalledArgs(p); err != nil {
		t.Fatalf("positive control: %v", err)
	}
	p.Namespaces.Net = false
	if _, err := WalledArgs(p); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Fatalf("a plan with a shared network got arguments: %v", err)
	}
}

func TestBuildRefusesNUL(t *testing.T) {
	if _, err := Build(WithCommand("/bin/true", []string{"ok"})); err != nil {
		t.Fatalf("positive control: %v", err)
	}
	if _, err := Build(WithCommand("/bin/true", []string{"x\x00--bind\x00/\x00/"})); err == nil {
		t.Fatal("a NUL in an argument was accepted")
	}
	if _, err := Build(WithEnv(map[string]string{"A": "x\x00--bind"}), WithCommand("/bin/true", nil)); err == nil {
		t.Fatal("a NUL in an environment value was accepted")
	}
	if _, err := Encode([]string{"a\x00b"}); err == nil {
		t.Fatal("Encode accepted a NUL")
	}
}

func TestUnwalledInvocation(t *testing.T) {
	inv, err := Unwalled("/bin/sh", []string{"-c", "true"}, WithNoNewPrivs("/usr/bin/setpriv"), WithEnvMap(map[string]string{"B": "2", "A": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin/setpriv", "--no-new-privs", "--", "/bin/sh", "-c", "true"}
	if !reflect.DeepEqual(inv.Argv, want) || inv.Path != "/usr/bin/setpriv" {
		t.Fatalf("argv = %q", inv.Argv)
	}
	if !reflect.DeepEqual(inv.Env, []string{"A=1", "B=2"}) {
		t.Fatalf("env = %q", inv.Env)
	}
	empty, err := Unwalled("/bin/true", nil)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Env == nil || len(empty.Env) != 0 {
		t.Fatalf("an invocation without env must have an empty, non-nil env (nil inherits everything): %#v", empty.Env)
	}
	if _, err := Unwalled("sh", nil); err == nil {
		t.Fatal("a relative command was accepted")
	}
}

func FuzzEncodeDecode(f *testing.F) {
	f.Add("a", "", "--bind")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		data, err := Encode(args)
		if strings.ContainsRune(a+b+c, 0) {
			if err == nil {
				t.Fatal("NUL accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := Decode(data); !reflect.DeepEqual(got, args) {
			t.Fatalf("round trip %q -> %q", args, got)
		}
	})
}
