package bwrap

import (
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func itoa(n int) string { return strconv.Itoa(n) }

// openNoCloexec opens a file the way careless code would: inheritable.
func openNoCloexec(path string) (int, error) {
	return syscall.Open(path, syscall.O_RDONLY, 0)
}

func closeFd(fd int) { syscall.Close(fd) }

// fdsOfPlainChild lists the descriptors a plain os/exec child of this
// process holds, as " 0 1 2 ... ".
func fdsOfPlainChild(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", "ls /proc/$$/fd").Output()
	if err != nil {
		t.Fatal(err)
	}
	return " " + strings.Join(strings.Fields(string(out)), " ") + " "
}

// waitForExec waits until the add-on process of a wall has exec'd path and
// returns its host pid. It polls /proc with a deadline; nothing is asserted
// about how long that takes.
func waitForExec(t *testing.T, c *Child, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		pid, err := c.CommandPid()
		if err == nil && pid > 0 {
			if exe, err := os.Readlink("/proc/" + itoa(pid) + "/exe"); err == nil && exe == path {
				return pid
			}
		}
		select {
		case <-c.Done():
			t.Fatalf("the wall ended before %s ran", path)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s never ran in the wall", path)
	return 0
}

func fdTargets(t *testing.T, pid int) map[int]string {
	t.Helper()
	dir := "/proc/" + itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, _ := os.Readlink(dir + "/" + e.Name())
		out[n] = target
	}
	return out
}

func fdList(t *testing.T, pid int) string {
	t.Helper()
	var fds []int
	for fd := range fdTargets(t, pid) {
		fds = append(fds, fd)
	}
	sort.Ints(fds)
	parts := make([]string, len(fds))
	for i, fd := range fds {
		parts[i] = itoa(fd)
	}
	return strings.Join(parts, " ")
}
