package listener

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxCmdline bounds the argv read from /proc/<pid>/cmdline.
const maxCmdline = 1 << 20

// Process is what the check reads about one process holding a socket.
type Process struct {
	PID int
	// Argv is /proc/<pid>/cmdline split at NUL bytes.
	Argv []string
	// Exe and Cwd are the targets of /proc/<pid>/exe and cwd, without
	// the kernel's " (deleted)" suffix; "" when the process has none.
	Exe, Cwd string
	// ArgPaths are the path-like argv elements (and the part after the
	// first '=' of an element such as --require=x), made absolute
	// against Cwd and resolved through symlinks as far as they exist.
	ArgPaths []string
}

// gone reports an error that means the process or the fd went away while
// it was read: it no longer holds anything, so it is skipped. Any other
// error fails the check, because the process may hold the socket.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// denied reports a permission error: the process exists but its
// descriptors may not be read.
func denied(err error) bool {
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// holders maps each inode in want to the pids of every process of uid
// (by effective uid, which /proc/<pid> shows even for a non-dumpable
// process) that holds it. Only those processes' descriptors are read (one
// stat each for the rest), which keeps the walk cheap on a machine with
// thousands of processes. blind lists the processes of uid whose
// descriptors could not be read: any of them might hold a socket, so the
// caller must not pass a socket while blind is not empty (but see
// judgeRootController). Only a permission error makes a process blind;
// any other error fails the walk.
func holders(ctx context.Context, procRoot string, uid uint32, want map[uint64]bool) (held map[uint64][]int, blind []int, err error) {
	dir, err := os.Open(procRoot)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", procRoot, err)
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, nil, fmt.Errorf("listing %s: %w", procRoot, err)
	}
	dfd := int(dir.Fd())
	held = make(map[uint64][]int)
	buf := make([]byte, 64)
	for i, name := range names {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, 0); err != nil {
			if gone(err) {
				continue
			}
			return nil, nil, fmt.Errorf("stat %s/%s: %w", procRoot, name, err)
		}
		if st.Uid != uid {
			continue
		}
		if err := socketsOf(dfd, name, buf, want, func(ino uint64) { held[ino] = append(held[ino], pid) }); err != nil {
			if !denied(err) {
				// EMFILE, ENOMEM, a /proc that is not what it seems: the
				// facts could not be read, which is never a blind spot a
				// root controller may tolerate.
				return nil, nil, fmt.Errorf("reading the descriptors of pid %d: %w", pid, err)
			}
			// An LSM, or a process turning non-dumpable under a non-root
			// controller.
			blind = append(blind, pid)
		}
	}
	return held, blind, nil
}

// socketsOf calls found for every fd of process pidName that is a socket
// in want.
func socketsOf(procFD int, pidName string, buf []byte, want map[uint64]bool, found func(uint64)) error {
	fd, err := unix.Openat(procFD, pidName+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	f := os.NewFile(uintptr(fd), pidName+"/fd")
	defer f.Close()
	fds, err := f.Readdirnames(-1)
	if err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	for _, name := range fds {
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			if gone(err) {
				continue
			}
			return err
		}
		if ino, ok := socketInode(buf[:n]); ok && want[ino] {
			found(ino)
		}
	}
	return nil
}

// socketInode reads "socket:[12345]".
func socketInode(link []byte) (uint64, bool) {
	const pre = "socket:["
	if len(link) < len(pre)+2 || string(link[:len(pre)]) != pre || link[len(link)-1] != ']' {
		return 0, false
	}
	ino, err := strconv.ParseUint(string(link[len(pre):len(link)-1]), 10, 64)
	return ino, err == nil
}

// readProcess reads the facts the check judges about one process. ok is
// false when the process went away meanwhile.
func readProcess(procRoot string, pid int) (p Process, ok bool, err error) {
	base := filepath.Join(procRoot, strconv.Itoa(pid))
	cmd, err := readBounded(filepath.Join(base, "cmdline"), maxCmdline)
	if err != nil {
		if gone(err) {
			return Process{}, false, nil
		}
		return Process{}, false, fmt.Errorf("reading the argv of pid %d: %w", pid, err)
	}
	p.PID = pid
	if s := strings.TrimSuffix(string(cmd), "\x00"); s != "" {
		p.Argv = strings.Split(s, "\x00")
	}
	for _, l := range []struct {
		name string
		to   *string
	}{{"exe", &p.Exe}, {"cwd", &p.Cwd}} {
		t, err := os.Readlink(filepath.Join(base, l.name))
		switch {
		case err == nil:
			*l.to = strings.TrimSuffix(t, " (deleted)")
		case gone(err):
			// A kernel thread or a zombie has no exe or cwd; a process
			// that exited holds nothing. Either way the /proc entry
			// itself tells which.
			if _, serr := os.Stat(base); gone(serr) {
				return Process{}, false, nil
			}
		default:
			return Process{}, false, fmt.Errorf("reading the %s of pid %d: %w", l.name, pid, err)
		}
	}
	p.ArgPaths = argPaths(p.Argv, p.Cwd, resolveExisting)
	return p, true, nil
}

// argPaths returns the path-like parts of argv, absolute and resolved.
func argPaths(argv []string, cwd string, resolve func(string) string) []string {
	var out []string
	add := func(s string) {
		if !strings.Contains(s, "/") {
			return
		}
		if !filepath.IsAbs(s) {
			if cwd == "" {
				return
			}
			s = filepath.Join(cwd, s)
		}
		out = append(out, filepath.Clean(s))
		if r := resolve(s); r != filepath.Clean(s) {
			out = append(out, r)
		}
	}
	for _, a := range argv {
		add(a)
		if _, after, ok := strings.Cut(a, "="); ok {
			add(after)
		}
	}
	return out
}

// resolveExisting resolves symlinks in the longest prefix of p that
// exists and appends the rest, so a path through a symlink to the
// checkout is seen at its real place even when its last parts do not
// exist.
func resolveExisting(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
