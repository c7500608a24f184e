package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/e2eenv"
)

// SIGKILL of the controller leaves nothing of a wall alive. The controller
// is the real `addonwall run` binary in a process of its own; the add-on
// double-forks, and one of its children leaves for a session of its own
// (setsid), the way a daemonizing add-on would. SIGKILL runs no handler, so
// only the kernel's parent-death signal (bubblewrap's --die-with-parent and
// the spawner's Pdeathsig, on an OS thread that lives as long as the wall)
// and the wall's pid namespace can end them.
//
// SECURITY-CASES: PROC-18 (die with the gateway), PROC-19 (the Pdeathsig
// thread trap: the wall must not outlive the controller because the thread
// that forked it went away first), FAULT-14 in part (a killed controller
// leaves no wall, and the next controller sweeps its relay folder).
func TestControllerSIGKILLLeavesNoWall(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	// Unique arguments, so the scan of /proc finds this test's processes
	// and no one else's.
	tag := fmt.Sprintf("8%05d.%d", os.Getpid()%100000, time.Now().UnixNano()%1000)
	daemon, child := tag+"1", tag+"2"
	started := filepath.Join(h.paths.DataDir, "sk", "started")
	h.addon("sk", nil)
	h.write("mcp-addons.json", map[string]any{"sk": map[string]any{
		"command": "/bin/sh",
		"args": []string{"-c", fmt.Sprintf(
			`setsid sleep %s </dev/null >/dev/null 2>&1 & sleep %s </dev/null >/dev/null 2>&1 & echo started > %s; exec cat`,
			daemon, child, started)},
	}})

	var logs lockedBuffer
	ctl := exec.Command(built(t, "addonwall"), append([]string{"run",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, h.globalFlags()...)...)
	ctl.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.root, "CROW_ADDON_WALLS_DEFAULT=walled"}
	ctl.Stdout, ctl.Stderr = &logs, &logs
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	ctlDone := make(chan struct{})
	go func() { _ = ctl.Wait(); close(ctlDone) }()
	t.Cleanup(func() {
		select {
		case <-ctlDone:
		default:
			_ = ctl.Process.Kill()
			<-ctlDone
		}
		if t.Failed() {
			t.Logf("the controller's log:\n%s", logs.String())
		}
	})
	h.waitWord("sk", "walled", 60*time.Second)

	connDone, _ := h.openSession("sk")
	waitFile(t, started, 60*time.Second)
	var pids []int
	eventually(t, 20*time.Second, "the add-on's two sleeps run", func() (bool, string) {
		pids = append(pidsWithArg(daemon), pidsWithArg(child)...)
		return len(pids) == 2, fmt.Sprintf("found %v", pids)
	})
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	wall := inPidNamespace(ns)
	// bwrap as the controller started it, in the host's pid namespace.
	outer := childrenOf(ctl.Process.Pid)
	if len(wall) < 4 || len(outer) == 0 {
		t.Fatalf("the wall's processes: %v in its namespace, %v started by the controller; expected bwrap, the entry, the shell's cat and two sleeps", wall, outer)
	}

	// Positive control: with the controller alive, the wall stays up.
	time.Sleep(time.Second)
	if alive := living(append(wall, outer...)); len(alive) != len(wall)+len(outer) {
		t.Fatalf("the wall lost processes with the controller alive: %v of %v", alive, append(wall, outer...))
	}

	if err := ctl.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ctlDone
	var left []int
	eventually(t, 5*time.Second, "nothing of the wall survives the controller", func() (bool, string) {
		left = append(living(append(wall, outer...)), inPidNamespace(ns)...)
		return len(left) == 0, fmt.Sprintf("alive: %v", describe(left))
	})
	select {
	case <-connDone:
	case <-time.After(10 * time.Second):
		t.Error("connect did not end when its controller died")
	}

	// SIGKILL ran no cleanup, so the spawn's relay folder is still there;
	// the next controller sweeps it before it starts any wall.
	relays := filepath.Join(h.paths.StateDir(), "relay")
	if ents, err := os.ReadDir(relays); err != nil || len(ents) != 1 {
		t.Fatalf("relay folders after SIGKILL: %v %v; want the killed spawn's one (the check below would prove nothing)", ents, err)
	}
	var logs2 lockedBuffer
	again := exec.Command(ctl.Path, ctl.Args[1:]...)
	again.Env, again.Stdout, again.Stderr = ctl.Env, &logs2, &logs2
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = again.Process.Signal(syscall.SIGTERM)
		_ = again.Wait()
		if t.Failed() {
			t.Logf("the second controller's log:\n%s", logs2.String())
		}
	})
	eventually(t, 60*time.Second, "the next controller sweeps the left relay folder", func() (bool, string) {
		ents, err := os.ReadDir(relays)
		return err == nil && len(ents) == 0, fmt.Sprintf("%v %v", ents, err)
	})
}

// inPidNamespace lists the live processes whose pid namespace is ns.
func inPidNamespace(ns string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && l == ns && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// childrenOf lists pid's children, over all its threads.
func childrenOf(pid int) []int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// living keeps the pids that still run (a zombie has ended).
func living(pids []int) []int {
	var out []int
	for _, p := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil && !zombie(p) {
			out = append(out, p)
		}
	}
	return out
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func describe(pids []int) []string {
	var out []string
	for _, p := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		out = append(out, fmt.Sprintf("%d %s", p, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}
