package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/addonwall/addonwall/test/probe/report"
	"golang.org/x/sys/unix"
)

// errName names an error by its errno when it has one (what tests compare),
// and by its text otherwise.
func errName(err error) string {
	if err == nil {
		return ""
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
	}
	return err.Error()
}

func access(err error) report.Access {
	return report.Access{OK: err == nil, Errno: errName(err)}
}

// readStatus reads the lines of /proc/<pid>/status the wall is judged by.
func readStatus(path string) (report.Status, string, int, error) {
	var st report.Status
	var name string
	ppid := -1
	b, err := os.ReadFile(path)
	if err != nil {
		return st, name, ppid, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "Name":
			name = val
		case "PPid":
			ppid, _ = strconv.Atoi(val)
		case "Uid":
			st.Uid = val
		case "Gid":
			st.Gid = val
		case "CapInh":
			st.CapInh = val
		case "CapPrm":
			st.CapPrm = val
		case "CapEff":
			st.CapEff = val
		case "CapBnd":
			st.CapBnd = val
		case "CapAmb":
			st.CapAmb = val
		case "NoNewPrivs":
			st.NoNewPrivs = val
		case "Seccomp":
			st.Seccomp = val
		case "Seccomp_filters":
			st.SeccompFilters = val
		}
	}
	return st, name, ppid, sc.Err()
}

// scanProcesses walks /proc. Needles are looked for in every environ and
// cmdline the probe can read; its own hits are marked as the control.
func scanProcesses(needles []string) ([]report.Process, []report.NeedleHit, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, fmt.Errorf("listing /proc: %w", err)
	}
	self := os.Getpid()
	var procs []report.Process
	var hits []report.NeedleHit
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		p := report.Process{PID: pid, IsSelf: pid == self}
		st, comm, ppid, err := readStatus(filepath.Join(dir, "status"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // it exited while we looked
		}
		p.Status, p.Comm, p.PPID = st, comm, ppid

		exe, err := os.Readlink(filepath.Join(dir, "exe"))
		p.Exe, p.ExeRead = exe, access(err)

		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		p.Cmdline.Access = access(err)
		if err == nil {
			p.Cmdline.Argc, p.Cmdline.Argv0, p.Cmdline.Options = describeArgs(cmdline)
			hits = append(hits, findNeedles(needles, cmdline, pid, "cmdline", p.IsSelf)...)
		}

		environ, err := os.ReadFile(filepath.Join(dir, "environ"))
		p.Environ.Access = access(err)
		if err == nil {
			p.Environ.Names = envNames(strings.Split(string(environ), "\x00"))
			hits = append(hits, findNeedles(needles, environ, pid, "environ", p.IsSelf)...)
		}

		p.FDs = listFDs(filepath.Join(dir, "fd"))

		// Opening is enough to show whether the memory is writable; nothing
		// is written (PROC-05).
		fd, err := unix.Open(filepath.Join(dir, "mem"), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		p.MemOpenRW = access(err)
		procs = append(procs, p)
	}
	return procs, hits, nil
}

func listFDs(dir string) report.FDs {
	entries, err := os.ReadDir(dir)
	out := report.FDs{Access: access(err)}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // closed since the listing (the listing's own fd, for one)
		}
		if err != nil {
			target = "?" + errName(err)
		}
		fd := report.FD{Num: n, Target: target}
		fd.CloseOnExec, fd.FlagsKnown = closeOnExec(filepath.Join(dir, "..", "fdinfo", e.Name()))
		out.Open = append(out.Open, fd)
	}
	sort.Slice(out.Open, func(i, j int) bool { return out.Open[i].Num < out.Open[j].Num })
	return out
}

// closeOnExec reads the flags line of /proc/<pid>/fdinfo/<n> (octal open
// flags; O_CLOEXEC is 02000000).
func closeOnExec(fdinfo string) (cloexec, known bool) {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return false, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				return false, false
			}
			return flags&unix.O_CLOEXEC != 0, true
		}
	}
	return false, false
}

// describeArgs keeps the shape of a command line without its values.
func describeArgs(cmdline []byte) (argc int, argv0 string, options []string) {
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(cmdline) == 0 {
		return 0, "", nil
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			name, _, _ := strings.Cut(a, "=")
			options = append(options, name)
		}
	}
	return len(args), args[0], options
}

// envNames returns the sorted names of NAME=value entries, never values.
func envNames(env []string) []string {
	names := []string{}
	for _, kv := range env {
		if kv == "" {
			continue
		}
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func findNeedles(needles []string, hay []byte, pid int, where string, self bool) []report.NeedleHit {
	var hits []report.NeedleHit
	for i, n := range needles {
		if bytes.Contains(hay, []byte(n)) {
			hits = append(hits, report.NeedleHit{Index: i, PID: pid, Where: where, Self: self})
		}
	}
	return hits
}

// parseNeedles splits PROBE_NEEDLES on commas, dropping empty pieces (an
// empty needle would match everywhere).
func parseNeedles(v string) []string {
	var out []string
	for _, n := range strings.Split(v, ",") {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// procInterfaces lists interface names from /proc/net/dev, which shows the
// probe's network namespace and needs no socket.
func procInterfaces() ([]string, error) {
	b, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		return nil, err
	}
	var names []string
	for i, line := range strings.Split(string(b), "\n") {
		if i < 2 {
			continue // two header lines
		}
		name, _, ok := strings.Cut(line, ":")
		if ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	sort.Strings(names)
	return names, nil
}

func namespaces() (map[string]string, error) {
	entries, err := os.ReadDir("/proc/self/ns")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join("/proc/self/ns", e.Name())); err == nil {
			out[e.Name()] = l
		}
	}
	return out, nil
}
