package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// addonPid must pass over a child of the entry that still runs the entry's
// image (a fork before its exec, or the Go runtime's CLONE_PIDFD check
// child in the real entry) and take the child that runs a program of its
// own. Here /bin/sh stands for the entry: its first child is another sh
// (the same image), its second a sleep.
func TestAddonPidSkipsChildrenOfTheEntrysImage(t *testing.T) {
	entry := exec.Command("/bin/sh", "-c", `sh -c 'sleep 30; true' & sleep 30 & wait`)
	if err := entry.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// End the two children, then the shell.
		for _, c := range childPids(entry.Process.Pid) {
			if p, err := os.FindProcess(c); err == nil {
				_ = p.Kill()
			}
		}
		_ = entry.Process.Kill()
		_ = entry.Wait()
	})
	var kids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(kids) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		kids = childPids(entry.Process.Pid)
	}
	if len(kids) < 2 {
		t.Fatalf("the stand-in entry has children %v, want two", kids)
	}
	shExe, _ := os.Readlink("/proc/" + strconv.Itoa(entry.Process.Pid) + "/exe")
	var sleep int
	eventually := time.Now().Add(10 * time.Second)
	for sleep == 0 && time.Now().Before(eventually) {
		for _, k := range childPids(entry.Process.Pid) {
			if exe, err := os.Readlink("/proc/" + strconv.Itoa(k) + "/exe"); err == nil && exe != shExe && filepath.Base(exe) == "sleep" {
				sleep = k
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if sleep == 0 {
		t.Fatal("no sleep among the stand-in entry's children")
	}
	got, err := addonPid(func() (int, error) { return entry.Process.Pid, nil })
	if err != nil || got != sleep {
		t.Fatalf("addonPid = %d, %v; want the sleep (%d), not the sh child (children %v)", got, err, sleep, childPids(entry.Process.Pid))
	}
}

func childPids(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
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
