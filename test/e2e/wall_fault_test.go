package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/runner"
)

// Fault injection through the real controller: each fault leaves the
// add-on off with a Fix-it card, and nothing of the add-on runs outside a
// wall. The add-on's command leaves a marker in a folder no wall binds:
// that marker appears only if the command ran unwalled. Its positive
// control is the same command, unwalled by the owner's choice, in the same
// controller: its marker does appear.
//
// SECURITY-CASES: FAULT-01 (no bwrap at all: setpriv, no card), FAULT-02
// (a bwrap that cannot make a namespace), FAULT-03 (a probe that hangs; a
// bwrap that lies about its wall), FAULT-05 (a filter the kernel refuses),
// FAULT-08 and FS-06 (bind sources swapped for symlinks after admission,
// and a swap race), FAULT-13 (no unwalled retry: the marker never appears,
// across repeated connects).

// faultAddon installs add-on id whose command marks unwalled runs in
// markers/<id> and walled runs in its own data folder (data/<id>/ran),
// then serves stdin back as cat does (or exits, with exit).
func (h *home) faultAddon(id string, manifest map[string]any, exit bool) map[string]any {
	h.t.Helper()
	h.addon(id, manifest)
	markers := filepath.Join(h.root, "markers")
	if err := os.MkdirAll(markers, 0o700); err != nil {
		h.t.Fatal(err)
	}
	tail := "exec cat"
	if exit {
		tail = "exit 0"
	}
	script := fmt.Sprintf("{ echo ran > %s; } 2>/dev/null; { echo ran > %s; } 2>/dev/null; %s",
		filepath.Join(markers, id), filepath.Join(h.paths.DataDir, id, "ran"), tail)
	return map[string]any{"command": "/bin/sh", "args": []string{"-c", script}}
}

func (h *home) ranUnwalled(id string) bool {
	_, err := os.Stat(filepath.Join(h.root, "markers", id))
	return err == nil
}

// connectOnce runs `addonwall connect ID` with stdin closed and returns its
// stderr and whether it succeeded.
func (h *home) connectOnce(id string) (string, error) {
	h.t.Helper()
	var stderr lockedBuffer
	cmd := h.connectCmd(id, &stderr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.root}
	cmd.Stderr = &stderr
	cmd.Stdin = nil // /dev/null: a cat ends at once
	err := cmd.Run()
	return stderr.String(), err
}

// fakeBwrap writes a stand-in for bubblewrap: a mock, used only for a fault
// that cannot be caused for real on a shared test machine. The stand-in
// runs the real bwrap for --version and --help, so the probe gets as far
// as the step the fault is about; every invocation is logged.
func (h *home) fakeBwrap(name, body string) string {
	h.t.Helper()
	real := e2eenv.Bwrap(h.t)
	dir := filepath.Join(h.root, "fakebin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		h.t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	log := filepath.Join(dir, name+".log")
	script := fmt.Sprintf("#!/bin/bash\necho \"$*\" >> %s\ncase \"$1\" in --version|--help) exec %s \"$@\";; esac\n%s\n", log, real, body)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// offWithCard waits for the add-on to be off with a card whose reason is
// reason, and returns the card's message.
func (h *home) offWithCard(id, reason string) string {
	h.t.Helper()
	w := h.waitWord(id, "off: it could not run inside its wall", 30*time.Second)
	if w.Status.Mode != wallsv1.ModeOff {
		h.t.Fatalf("%s: mode %s, want Off", id, w.Status.Mode)
	}
	if w.Status.Failure == nil || w.Status.Failure.Ref == "" {
		h.t.Fatalf("%s is off without a Fix-it card: %+v", id, w.Status)
	}
	if w.Status.Reason != reason && w.Status.Failure.Reason != reason {
		h.t.Fatalf("%s: reason %s (card %s), want %s; card: %s", id, w.Status.Reason, w.Status.Failure.Reason, reason, w.Status.Failure.Message)
	}
	return w.Status.Failure.Message
}

// controlRuns connects to the unwalled control add-on and checks its marker
// appeared: the marker mechanism works, so its absence elsewhere means
// something.
func (h *home) controlRuns(id string) {
	h.t.Helper()
	if out, err := h.connectOnce(id); err != nil {
		h.t.Fatalf("connecting to the unwalled control %s: %v\n%s", id, err, out)
	}
	if !h.ranUnwalled(id) {
		h.t.Fatalf("the unwalled control %s left no marker: the check for unwalled runs is blind", id)
	}
}

// refusedEveryTime connects n times to a faulted add-on: every connect is
// refused with the off word, and the command never ran unwalled.
func (h *home) refusedEveryTime(id string, n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		out, err := h.connectOnce(id)
		if err == nil {
			h.t.Fatalf("connect %d to %s succeeded:\n%s", i+1, id, out)
		}
		if !strings.Contains(out, "off: it could not run inside its wall") {
			h.t.Errorf("connect %d to %s: the refusal does not say it is off: %s", i+1, id, out)
		}
	}
	if h.ranUnwalled(id) {
		h.t.Fatalf("%s ran outside a wall after a walled attempt failed", id)
	}
}

// No bubblewrap installed at all: the seed's answer is not a card but "not
// walled on this computer; docker reachable", with the child under setpriv
// --no-new-privs where setpriv exists. The probe shows the flag from inside;
// a plain spawn (the owner's choice) beside it shows the flag is setpriv's.
//
// SECURITY-CASES: FAULT-01.
func TestFaultNoBwrapRunsUnderSetpriv(t *testing.T) {
	h := newHome(t)
	if _, err := os.Stat("/usr/bin/setpriv"); err != nil {
		if _, err := os.Stat("/bin/setpriv"); err != nil {
			e2eenv.Need(t, false, "setpriv is not installed")
		}
	}
	h.write("mcp-addons.json", map[string]any{"p": h.installProbe("p", nil), "plain": h.installProbe("plain", nil)})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{
		"plain": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.runWalls(walledEnv(nil), func(o *runner.Options) { o.BwrapPath = filepath.Join(h.root, "no-such-bwrap") })
	h.waitWord("p", "not walled on this computer; docker reachable", 15*time.Second)
	h.waitWord("plain", "not walled (your choice)", 15*time.Second)
	ctx := ctxFor(t, 2*time.Minute)
	flags := map[string]string{}
	for _, id := range []string{"p", "plain"} {
		s, err := h.mcpConnect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.probeReport(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		flags[id] = r.Self.NoNewPrivs
		h.endSession(s, id, map[string]string{"p": "not walled on this computer; docker reachable", "plain": "not walled (your choice)"}[id])
	}
	if flags["p"] != "1" || flags["plain"] != "0" {
		t.Errorf("NoNewPrivs: %q without bubblewrap (want 1, setpriv), %q for a plain spawn (want 0)", flags["p"], flags["plain"])
	}
}

func TestFaultNamespaceRefused(t *testing.T) {
	h := newHome(t)
	// Mock: this machine allows user namespaces, and turning them off
	// (sysctl user.max_user_namespaces=0) would break every other test on
	// it. The stand-in prints bubblewrap's own refusal and fails, as
	// bubblewrap does on a kernel that refuses them.
	fake := h.fakeBwrap("bwrap-nouserns", `echo "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'." >&2
exit 1`)
	h.write("mcp-addons.json", map[string]any{"f": h.faultAddon("f", nil, false), "ctl": h.faultAddon("ctl", nil, true)})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{
		"ctl": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.runWalls(walledEnv(nil), func(o *runner.Options) { o.BwrapPath = fake })

	msg := h.offWithCard("f", wallsv1.ReasonBubblewrapUnusable)
	if !strings.Contains(msg, "user namespace") || !strings.Contains(msg, "sysctl") {
		t.Errorf("the card does not say what to fix: %s", msg)
	}
	h.controlRuns("ctl")
	h.refusedEveryTime("f", 3)
	host := h.wallHost()
	if host.Status.Bubblewrap.Usable || host.Status.Bubblewrap.Reason != wallsv1.ReasonUserNamespacesRefused {
		t.Errorf("WallHost bubblewrap: %+v", host.Status.Bubblewrap)
	}
}

func TestFaultProbeHangs(t *testing.T) {
	h := newHome(t)
	// Mock: a bubblewrap that hangs (a stuck kernel, a wedged AppArmor
	// prompt) cannot be made on demand. The stand-in sleeps on the test
	// sandbox; the probe's time limit must end it and keep the add-on off.
	fake := h.fakeBwrap("bwrap-hangs", `exec sleep 86397.25`)
	h.write("mcp-addons.json", map[string]any{"f": h.faultAddon("f", nil, false), "ctl": h.faultAddon("ctl", nil, true)})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{
		"ctl": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.runWalls(walledEnv(nil), func(o *runner.Options) { o.BwrapPath = fake })

	h.offWithCard("f", wallsv1.ReasonBubblewrapUnusable)
	host := h.wallHost()
	if host.Status.Bubblewrap.Usable || host.Status.Bubblewrap.Reason != wallsv1.ReasonProbeTimedOut {
		t.Errorf("WallHost bubblewrap: %+v", host.Status.Bubblewrap)
	}
	h.controlRuns("ctl")
	h.refusedEveryTime("f", 2)
	// The hung stand-in was killed with its process group.
	eventually(t, 10*time.Second, "the hung bwrap is gone", func() (bool, string) {
		pids := pidsWithArg("86397.25")
		return len(pids) == 0, fmt.Sprintf("still running: %v", pids)
	})
}

func TestFaultFilterRefusedByTheKernel(t *testing.T) {
	h := newHome(t)
	// Mock for a filter that cannot be loaded: the controller builds a valid
	// program, and no input makes it build a bad one. The stand-in runs the
	// real bubblewrap with the wall's real arguments, except that the
	// --seccomp descriptor is swapped for 8 bytes that are no valid BPF
	// program; the kernel itself then refuses the filter
	// (prctl(PR_SET_SECCOMP): EINVAL), as it would a corrupted one.
	real := e2eenv.Bwrap(t)
	dir := filepath.Join(h.root, "fakebin")
	fake := h.fakeBwrap("bwrap-badfilter", fmt.Sprintf(`if [ "$1" = --args ] && [ "$4" != /usr/bin/true ]; then
  printf '\377\377\377\377\377\377\377\377' > %[1]s/bad.bpf
  sed -z '/^--seccomp$/{n;s/.*/91/}' < /proc/self/fd/$2 > %[1]s/args
  grep -qz '^91$' %[1]s/args || { echo "the stand-in found no --seccomp to swap" >&2; exit 99; }
  exec 91<%[1]s/bad.bpf 90<%[1]s/args
  shift 2
  exec %[2]s --args 90 "$@"
fi
exec %[2]s "$@"`, dir, real))
	h.write("mcp-addons.json", map[string]any{"f": h.faultAddon("f", nil, false), "ctl": h.faultAddon("ctl", nil, true)})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{
		"ctl": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.runWalls(walledEnv(nil), func(o *runner.Options) { o.BwrapPath = fake })
	// The probe's test sandbox has no filter: bubblewrap is usable, and the
	// add-on is admitted as walled until a spawn shows otherwise.
	h.waitWord("f", "walled", 15*time.Second)
	h.controlRuns("ctl")

	out, err := h.connectOnce("f")
	if err == nil {
		t.Fatalf("a wall whose filter the kernel refused ran:\n%s", out)
	}
	if strings.Contains(out, "found no --seccomp") {
		t.Fatalf("the stand-in did not inject the fault: %s", out)
	}
	msg := h.offWithCard("f", wallsv1.ReasonWallFailed)
	if !strings.Contains(msg, "seccomp") && !strings.Contains(msg, "PR_SET_SECCOMP") {
		t.Errorf("the card does not name the filter: %s", msg)
	}
	h.refusedEveryTime("f", 2)
	if _, err := os.Stat(filepath.Join(h.paths.DataDir, "f", "ran")); err == nil {
		t.Error("the add-on's command ran although its filter was refused")
	}
}

// A bubblewrap that lies: it reports a wall (the JSON status with a
// child-pid) but runs something else with no namespace, no filter and every
// capability. Two checks stand in its way: the wall's entry never reports
// that it started the add-on, and attestation reads the child from outside
// and finds no wall. Either ends it: the add-on is off with a card, and
// what ran is killed.
func TestFaultBwrapThatLies(t *testing.T) {
	h := newHome(t)
	tag := fmt.Sprintf("8%05d.%d", os.Getpid()%100000, time.Now().UnixNano()%1000)
	// Mock: a real bubblewrap does not lie. The stand-in passes the probe
	// through to the real one, so the host reads as usable, and for a
	// spawn writes the status bubblewrap would and runs a sleep unwalled.
	fake := h.fakeBwrap("bwrap-lies", fmt.Sprintf(`if [ "$1" = --args ] && [ "$4" != /usr/bin/true ]; then
  status=$(sed -z -n '/^--json-status-fd$/{n;p}' < /proc/self/fd/$2 | tr -d '\0')
  [ -n "$status" ] || { echo "the stand-in found no --json-status-fd" >&2; exit 99; }
  printf '{"child-pid": %%d}\n' $$ >&"$status"
  exec sleep %s
fi
exec %s "$@"`, tag, e2eenv.Bwrap(t)))
	h.write("mcp-addons.json", map[string]any{"f": h.faultAddon("f", nil, false)})
	h.runWalls(walledEnv(nil), func(o *runner.Options) { o.BwrapPath = fake })
	h.waitWord("f", "walled", 15*time.Second)

	done, stderr := h.openSession("f")
	w := h.waitWord("f", "off: it could not run inside its wall", 30*time.Second)
	if w.Status.Failure == nil || (w.Status.Reason != wallsv1.ReasonWallNotVerified && w.Status.Reason != wallsv1.ReasonWallFailed) {
		t.Fatalf("reason %s, card %+v; want WallNotVerified or WallFailed with a card", w.Status.Reason, w.Status.Failure)
	}
	if w.Status.Reason == wallsv1.ReasonWallNotVerified {
		for _, want := range []string{"Seccomp", "NoNewPrivs", "namespace"} {
			if !strings.Contains(w.Status.Failure.Message, want) {
				t.Errorf("the card does not give the evidence (%s): %s", want, w.Status.Failure.Message)
			}
		}
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, wallsv1.WallVerifiedCondition); c != nil && c.Status == "True" {
		t.Errorf("the lying wall was recorded as verified: %+v", c)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("connect did not end when the wall failed to verify: %s", stderr.String())
	}
	eventually(t, 10*time.Second, "the unwalled sleep is ended", func() (bool, string) {
		pids := pidsWithArg(tag)
		return len(pids) == 0, fmt.Sprintf("still running: %v", pids)
	})
}

// The data folder and a granted folder are swapped for symlinks after the
// add-on was admitted: the next connect must not follow them. Real
// bubblewrap, real files; no mock.
func TestFaultBindSourcesSwappedForSymlinks(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	victim := filepath.Join(h.root, "victim")
	if err := os.MkdirAll(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(h.root, "notes")
	mkfile(t, filepath.Join(notes, "n.txt"), "note")
	g := h.faultAddon("g", map[string]any{
		"env_vars": []any{map[string]any{"name": "NOTES_DIR"}},
		"sandbox":  map[string]any{"files": map[string]any{"read": []string{"NOTES_DIR"}}},
	}, true)
	g["env"] = map[string]string{"NOTES_DIR": notes}
	h.write("mcp-addons.json", map[string]any{"d": h.faultAddon("d", nil, true), "g": g})
	h.runWalls(walledEnv(nil), nil)
	h.waitWord("d", "walled", 15*time.Second)
	h.waitWord("g", "walled", 15*time.Second)

	// Positive control on the same path: before the swap each runs walled
	// and writes into its own data folder.
	for _, id := range []string{"d", "g"} {
		if out, err := h.connectOnce(id); err != nil {
			t.Fatalf("%s before the swap: %v\n%s", id, err, out)
		}
		ran := filepath.Join(h.paths.DataDir, id, "ran")
		if _, err := os.Stat(ran); err != nil {
			t.Fatalf("%s did not run in its wall before the swap: %v", id, err)
		}
		os.Remove(ran)
	}

	// The data folder becomes a symlink to the victim.
	data := filepath.Join(h.paths.DataDir, "d")
	if err := os.Rename(data, data+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, data); err != nil {
		t.Fatal(err)
	}
	// The granted folder becomes a symlink to the victim.
	if err := os.Rename(notes, notes+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, notes); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d", "g"} {
		if out, err := h.connectOnce(id); err == nil {
			t.Errorf("%s ran with a bind source swapped for a symlink:\n%s", id, out)
		}
		msg := h.offWithCard(id, wallsv1.ReasonPlanFailed)
		if !strings.Contains(msg, "symlink") && !strings.Contains(msg, "resolves to") {
			t.Errorf("%s: the card does not say a symlink was refused: %s", id, msg)
		}
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Errorf("the symlinks' target was written through: %v", ents)
	}
	for _, id := range []string{"d", "g"} {
		if h.ranUnwalled(id) {
			t.Errorf("%s ran outside its wall", id)
		}
	}

	// The owner puts the folders back: the next connect tries again with
	// fresh facts, and the add-ons run in their walls again (no Crow file
	// changed, so only the connect can notice).
	for _, p := range []string{data, notes} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".moved", p); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"d", "g"} {
		if out, err := h.connectOnce(id); err != nil {
			t.Errorf("%s after the folders were put back: %v\n%s", id, err, out)
			continue
		}
		if _, err := os.Stat(filepath.Join(h.paths.DataDir, id, "ran")); err != nil {
			t.Errorf("%s did not run in its wall after the fix: %v", id, err)
		}
		h.waitWord(id, "walled", 15*time.Second)
	}
}

// FS-06 through the controller: while connects run one after another, a
// helper keeps exchanging the data folder with a symlink to a victim folder
// (renameat2 RENAME_EXCHANGE, so the path always exists). Whatever the
// timing, each spawn binds the real folder or fails closed; the victim is
// never written. The refusal at bind time itself is covered
// deterministically by internal/bwrap's TestBindFdRefusesASymlinkSwappedIn.
func TestFaultDataFolderSwapRace(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	victim := filepath.Join(h.root, "victim")
	if err := os.MkdirAll(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	h.write("mcp-addons.json", map[string]any{"r": h.faultAddon("r", nil, true)})
	h.runWalls(walledEnv(nil), nil)
	h.waitWord("r", "walled", 15*time.Second)
	data := filepath.Join(h.paths.DataDir, "r")
	link := data + ".link"
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		for {
			select {
			case <-stop:
				// Leave the real folder in place.
				fi, err := os.Lstat(data)
				if err == nil && fi.Mode()&os.ModeSymlink != 0 {
					err = unix.Renameat2(unix.AT_FDCWD, data, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
				}
				if err != nil {
					t.Errorf("putting the real data folder back: %v", err)
				}
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, data, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err == nil {
				n++
			}
			// Irregular pauses (0-60 ms) so that some spawns fall between two
			// swaps and some across one.
			time.Sleep(time.Duration(n%5) * 15 * time.Millisecond)
		}
	}()
	ok, refused := 0, 0
	for i := 0; i < 30; i++ {
		if _, err := h.connectOnce("r"); err == nil {
			ok++
		} else {
			refused++
		}
	}
	close(stop)
	n := <-swapped
	t.Logf("30 connects while the data folder was swapped %d times: %d ran, %d refused", n, ok, refused)
	if n == 0 {
		t.Fatal("the helper never swapped the folder: the race was not run")
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("a wall wrote through the swapped-in symlink: %v", ents)
	}
	if h.ranUnwalled("r") {
		t.Fatal("the add-on ran outside its wall")
	}
	// Positive control: with the folder left alone, the same add-on runs
	// and writes where its data folder really is.
	os.Remove(filepath.Join(data, "ran"))
	if out, err := h.connectOnce("r"); err != nil {
		t.Fatalf("after the race: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "ran")); err != nil {
		t.Fatalf("after the race the add-on did not write its data folder: %v", err)
	}
}

// pidsWithArg lists the host processes with arg in their command line.
func pidsWithArg(arg string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func (h *home) wallHost() *wallsv1.WallHost {
	h.t.Helper()
	var got *wallsv1.WallHost
	eventually(h.t, 15*time.Second, "the WallHost is reconciled", func() (bool, string) {
		var wh wallsv1.WallHost
		if err := h.reader().Get(context.Background(), client.ObjectKey{Name: testNS}, &wh); err != nil {
			return false, err.Error()
		}
		got = &wh
		return wh.Status.Bubblewrap.Reason != "", "no bubblewrap status yet"
	})
	return got
}
