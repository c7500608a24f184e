package bwrap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/planfacts"
)

// markerCmd writes a marker into the add-on's data folder (its HOME): the
// proof that a child ran.
var markerCmd = []string{"-c", `echo ran > "$HOME/marker"`}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// script writes an executable shell script standing in for bwrap. It is a
// stand-in only for faults the real bwrap cannot be made to show here (a
// kernel that refuses user namespaces, a hang, an old build).
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func runToEnd(t *testing.T, c *Child) Exit {
	t.Helper()
	exit, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return exit
}

func TestStartPositiveControl(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	p := l.planFor(t, "/bin/sh", markerCmd, nil)
	c, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath))
	if err != nil {
		t.Fatal(err)
	}
	if exit := runToEnd(t, c); exit.Code != 0 || exit.SetupFailed {
		t.Fatalf("exit %+v", exit)
	}
	if !exists(l.folder + "/marker") {
		t.Fatal("the command did not run")
	}
}

func TestStartWithMissingBwrap(t *testing.T) {
	l := newCrow(t)
	p := l.planFor(t, "/bin/sh", markerCmd, nil)
	_, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(l.root+"/no/such/bwrap"))
	if err == nil || !strings.Contains(err.Error(), "stays off") {
		t.Fatalf("Start with a missing bwrap: %v", err)
	}
	if exists(l.folder + "/marker") {
		t.Fatal("a child ran although bwrap is missing: Start fell back")
	}
	r := Probe(context.Background(), ProbeOptions{Path: l.root + "/no/such/bwrap"})
	if r.Installed || r.Reason != v1alpha1.ReasonBubblewrapMissing {
		t.Fatalf("probe of a missing bwrap: %+v", r)
	}
}

// userNSRefused is what bwrap prints when the kernel refuses it a user
// namespace (bubblewrap.c, the EPERM branch after clone).
const userNSRefused = `No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.`

func TestUserNamespaceRefused(t *testing.T) {
	real := requireWall(t)
	l := newCrow(t)
	fake := script(t, l.root, "bwrap", `case "$1" in --version|--help) exec `+real+` "$@";; esac
echo "bwrap: `+userNSRefused+`" >&2
exit 1
`)
	r := Probe(context.Background(), ProbeOptions{Path: fake})
	if r.Usable || r.Reason != v1alpha1.ReasonUserNamespacesRefused || !strings.Contains(r.Message, "sysctl kernel.unprivileged_userns_clone=1") ||
		!strings.Contains(r.Message, "apparmor_restrict_unprivileged_userns") {
		t.Fatalf("probe: %+v", r)
	}
	if ok := Probe(context.Background(), ProbeOptions{Path: real}); !ok.Usable || ok.Reason != v1alpha1.ReasonBubblewrapUsable || len(ok.Missing) != 0 {
		t.Fatalf("positive control: the real bwrap probes unusable: %+v", ok)
	}
	p := l.planFor(t, "/bin/sh", markerCmd, nil)
	_, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(fake))
	if err == nil || !strings.Contains(err.Error(), "No permissions to creating new namespace") {
		t.Fatalf("Start with a bwrap that cannot make a namespace: %v", err)
	}
	if exists(l.folder + "/marker") {
		t.Fatal("a child ran after the walled attempt failed")
	}
}

func TestProbeTimesOut(t *testing.T) {
	l := newCrow(t)
	hang := script(t, l.root, "bwrap", "exec sleep 30\n")
	r := Probe(context.Background(), ProbeOptions{Path: hang, Timeout: 300 * time.Millisecond})
	if r.Usable || r.Reason != v1alpha1.ReasonProbeTimedOut {
		t.Fatalf("probe of a hanging bwrap: %+v", r)
	}
	quick := script(t, l.root, "bwrap-quick", "echo bubblewrap 9.9; exit 0\n")
	if r := Probe(context.Background(), ProbeOptions{Path: quick, Timeout: 5 * time.Second}); r.Reason == v1alpha1.ReasonProbeTimedOut {
		t.Fatalf("control: a bwrap that answers timed out: %+v", r)
	}
}

func TestProbeTooOld(t *testing.T) {
	real := requireWall(t)
	l := newCrow(t)
	old := script(t, l.root, "bwrap", `case "$1" in
--help) `+real+` --help | grep -v -e '--bind-fd' -e '--disable-userns';;
*) exec `+real+` "$@";;
esac
`)
	r := Probe(context.Background(), ProbeOptions{Path: old})
	if r.Usable || r.Reason != v1alpha1.ReasonBubblewrapTooOld {
		t.Fatalf("probe of an old bwrap: %+v", r)
	}
	for _, opt := range []string{"--bind-fd", "--disable-userns"} {
		if !strings.Contains(r.Message, opt) {
			t.Errorf("message does not name %s: %s", opt, r.Message)
		}
	}
	st := r.Status()
	if st.Reason != v1alpha1.ReasonBubblewrapTooOld || !st.Installed || st.Usable || st.Version == "" {
		t.Errorf("status %+v", st)
	}
}

func TestProbeOtherFailure(t *testing.T) {
	real := requireWall(t)
	l := newCrow(t)
	broken := script(t, l.root, "bwrap", `case "$1" in --version|--help) exec `+real+` "$@";; esac
echo "bwrap: Can't mount proc on /newroot/proc: Operation not permitted" >&2
exit 1
`)
	r := Probe(context.Background(), ProbeOptions{Path: broken})
	if r.Usable || r.Reason != v1alpha1.ReasonProbeFailed || !strings.Contains(r.Message, "Can't mount proc") {
		t.Fatalf("probe: %+v", r)
	}
}

func TestBindFdRefusesASymlinkSwappedIn(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	p := l.planFor(t, "/bin/sh", markerCmd, nil)
	// Between the plan and the spawn the data folder becomes a symlink to a
	// folder the add-on must not write.
	elsewhere := l.root + "/elsewhere"
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(l.folder, l.folder+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, l.folder); err != nil {
		t.Fatal(err)
	}
	_, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath))
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Start through a swapped-in symlink: %v", err)
	}
	if exists(elsewhere+"/marker") || exists(l.folder+".moved/marker") {
		t.Fatal("a child ran through the swapped-in symlink")
	}

	// A real folder swapped in (another inode) is refused as stale.
	os.Remove(l.folder)
	if err := os.Mkdir(l.folder, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath))
	if err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("Start with a folder swapped in: %v", err)
	}
	if exists(l.folder + "/marker") {
		t.Fatal("a child ran with a stale plan")
	}

	// Positive control: a fresh plan of the same layout runs.
	p = l.planFor(t, "/bin/sh", markerCmd, nil)
	c, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath))
	if err != nil {
		t.Fatal(err)
	}
	if exit := runToEnd(t, c); exit.Code != 0 || !exists(l.folder+"/marker") {
		t.Fatalf("positive control did not run: %+v", exit)
	}
}

func TestInvalidSeccompProgram(t *testing.T) {
	bwrapPath := requireWall(t)
	cases := map[string][]byte{
		"empty":              nil,
		"not whole insns":    allowAll()[:7],
		"unknown opcode":     append(insn(0xff, 0, 0, 0), allowAll()...),
		"jump past the end":  append(insn(0x15, 5, 0, 1), allowAll()...),
		"load out of bounds": append(insn(0x20, 0, 0, 64), allowAll()...),
		"no return at end":   insn(0x20, 0, 0, 0),
	}
	for name, prog := range cases {
		t.Run(name, func(t *testing.T) {
			l := newCrow(t)
			p := l.planFor(t, "/bin/sh", markerCmd, nil)
			if _, err := Start(ctxT(t), p, prog, Stdio{}, WithBwrapPath(bwrapPath)); err == nil {
				t.Fatal("Start accepted an invalid seccomp program")
			}
			if exists(l.folder + "/marker") {
				t.Fatal("a child ran with an invalid seccomp program")
			}
		})
	}
	t.Run("kernel-rejected program fails the setup, the command never runs", func(t *testing.T) {
		// Reading scratch memory never written passes the shape checks and
		// is refused by the kernel's own check; bwrap exits before exec.
		prog := append(insn(0x60, 0, 0, 0), insn(0x16, 0, 0, 0)...)
		if err := CheckSeccompProgram(prog); err != nil {
			t.Fatalf("the shape check refused it already: %v", err)
		}
		l := newCrow(t)
		p := l.planFor(t, "/bin/sh", markerCmd, nil)
		c, err := Start(ctxT(t), p, prog, Stdio{}, WithBwrapPath(bwrapPath))
		if err == nil {
			exit := runToEnd(t, c)
			if !exit.SetupFailed || !strings.Contains(exit.Message, "PR_SET_SECCOMP") {
				t.Fatalf("exit %+v", exit)
			}
		}
		if exists(l.folder + "/marker") {
			t.Fatal("the command ran although the filter was refused")
		}
	})
	t.Run("positive control: a valid program runs", func(t *testing.T) {
		l := newCrow(t)
		p := l.planFor(t, "/bin/sh", markerCmd, nil)
		c, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath))
		if err != nil {
			t.Fatal(err)
		}
		if exit := runToEnd(t, c); exit.Code != 0 || !exists(l.folder+"/marker") {
			t.Fatalf("exit %+v", exit)
		}
	})
	t.Run("a plan without seccomp refuses a program, one with it refuses none", func(t *testing.T) {
		l := newCrow(t)
		p := l.planFor(t, "/bin/sh", markerCmd, func(r *planfacts.Request) { r.Seccomp = false })
		if _, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath)); err == nil {
			t.Fatal("a program was accepted for a plan without seccomp")
		}
		if exists(l.folder + "/marker") {
			t.Fatal("a child ran")
		}
	})
}

func TestSetupFailureInsideTheWall(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	mkfile(t, l.checkout+"/x/.env", "S=1")
	p := l.planFor(t, "/bin/sh", markerCmd, nil)
	// The masked .env becomes a folder after the plan: bubblewrap cannot
	// place the mask, exits before exec, and the exit says so.
	os.Remove(l.checkout + "/x/.env")
	if err := os.Mkdir(l.checkout+"/x/.env", 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c, err := Start(ctxT(t), p, allowAll(), Stdio{Stderr: &stderr}, WithBwrapPath(bwrapPath))
	if err == nil {
		exit := runToEnd(t, c)
		if !exit.SetupFailed || exit.Message == "" {
			t.Fatalf("exit %+v", exit)
		}
	}
	if exists(l.folder + "/marker") {
		t.Fatal("the command ran although the wall could not be set up")
	}
}

func TestDoorTokenSlot(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	p := l.planFor(t, "/bin/sh", []string{"-c", `stat -c %a "$CROW_ADDON_DOOR_TOKEN_FILE"; cat "$CROW_ADDON_DOOR_TOKEN_FILE"`}, func(r *planfacts.Request) { r.Doors = true })
	if _, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath)); err == nil || !strings.Contains(err.Error(), "door-token") {
		t.Fatalf("Start without the token: %v", err)
	}
	var out bytes.Buffer
	c, err := Start(ctxT(t), p, allowAll(), Stdio{Stdout: &out}, WithBwrapPath(bwrapPath), WithData("door-token", []byte("tok123")))
	if err != nil {
		t.Fatal(err)
	}
	runToEnd(t, c)
	if got := out.String(); got != "400\ntok123" {
		t.Fatalf("token file inside the wall: %q", got)
	}
}

func TestKillEndsTheWholeWall(t *testing.T) {
	bwrapPath := requireWall(t)
	l := newCrow(t)
	// The add-on double-forks a sleeper into a new session, then waits.
	p := l.planFor(t, "/bin/sh", []string{"-c", "setsid sleep 60 & exec sleep 60"}, nil)
	c, err := Start(ctxT(t), p, allowAll(), Stdio{}, WithBwrapPath(bwrapPath))
	if err != nil {
		t.Fatal(err)
	}
	pid := waitForExec(t, c, "/usr/bin/sleep")
	initPid := c.Pid()
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	exit := runToEnd(t, c)
	if exit.Signal == "" {
		t.Errorf("exit %+v, want killed", exit)
	}
	deadline := time.Now().Add(10 * time.Second)
	for exists("/proc/"+itoa(pid)) || exists("/proc/"+itoa(initPid)) {
		if time.Now().After(deadline) {
			t.Fatal("processes of the wall outlived its kill")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartUnwalled(t *testing.T) {
	t.Setenv("CROW_TEST_CANARY", "canary-controller")
	var out bytes.Buffer
	c, err := StartUnwalled(ctxT(t), "/bin/sh", []string{"-c", "grep NoNewPrivs /proc/self/status; env"},
		map[string]string{"OWN": "own-value"}, "/", Stdio{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if exit := runToEnd(t, c); exit.Code != 0 {
		t.Fatalf("exit %+v", exit)
	}
	got := out.String()
	if !strings.Contains(got, "OWN=own-value") {
		t.Fatalf("positive control: own value missing:\n%s", got)
	}
	if strings.Contains(got, "canary-controller") {
		t.Fatal("the controller's environment reached an unwalled child")
	}
	if FindSetpriv() != "" && !strings.Contains(got, "NoNewPrivs:\t1") {
		t.Fatalf("setpriv exists but the child lacks no_new_privs:\n%s", got)
	}
}
