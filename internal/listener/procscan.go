package listener

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// errWideInodes: a socket's inode does not fit the 32 bits sock_diag
// reports, so listeners read from it cannot be matched to holders.
var errWideInodes = errors.New("a socket inode exceeds the 32 bits sock_diag reports")

// scan says whose descriptors holders reads and what it looks for.
type scan struct {
	procRoot string
	uid      uint32
	want     map[uint64]bool
	// narrow: want holds sock_diag's 32-bit inodes. A socket whose inode
	// is wider fails the walk (errWideInodes) rather than be matched on
	// its low bits.
	narrow bool
	// self is the controller's own pid when procRoot is the real /proc
	// (else 0): its descriptors are read with fstat, one cheap call
	// each, instead of a /proc lookup each.
	self int
}

const (
	// pidBatch is how many pids a walker takes at a time.
	pidBatch = 16
	// direntBuf is one getdents buffer.
	direntBuf = 16 << 10
	// linkBuf holds "socket:[N]" for any 64-bit N; a longer link (a
	// path) is cut short, and no cut path reads as a socket.
	linkBuf = 64
)

// holders maps each inode in s.want to the pids of every process of
// s.uid (by effective uid, which /proc/<pid> shows even for a
// non-dumpable process) that holds it. Only those processes' descriptors
// are read (one stat each for the rest), by GOMAXPROCS walkers. blind
// lists the processes of s.uid whose descriptors could not be read: any
// of them might hold a socket, so the caller must not pass a socket while
// blind is not empty (but see judgeRootController). Only a permission
// error makes a process blind; any other error fails the walk, and a
// process that exits meanwhile holds nothing.
func holders(ctx context.Context, s scan) (held map[uint64][]int, blind []int, err error) {
	dir, err := unix.Open(s.procRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", s.procRoot, err)
	}
	defer unix.Close(dir)
	pids, err := listPIDs(dir, make([]byte, direntBuf))
	if err != nil {
		return nil, nil, fmt.Errorf("listing %s: %w", s.procRoot, err)
	}
	n := max(1, min(runtime.GOMAXPROCS(0), (len(pids)+pidBatch-1)/pidBatch))
	walkers := make([]walker, n)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for i := range walkers {
		w := &walkers[i]
		*w = walker{s: &s, dir: dir, dents: make([]byte, direntBuf), link: make([]byte, linkBuf)}
		wg.Go(func() {
			for !failed.Load() {
				if err := ctx.Err(); err != nil {
					w.err = err
					failed.Store(true)
					return
				}
				lo := int(next.Add(pidBatch)) - pidBatch
				if lo >= len(pids) {
					return
				}
				for _, pid := range pids[lo:min(lo+pidBatch, len(pids))] {
					if err := w.process(pid); err != nil {
						w.err = err
						failed.Store(true)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	held = make(map[uint64][]int)
	for i := range walkers {
		w := &walkers[i]
		if w.err != nil {
			return nil, nil, w.err
		}
		for _, h := range w.found {
			held[h.ino] = append(held[h.ino], h.pid)
		}
		blind = append(blind, w.blind...)
	}
	for ino, p := range held {
		slices.Sort(p)
		held[ino] = slices.Compact(p)
	}
	slices.Sort(blind)
	return held, blind, nil
}

type holding struct {
	ino uint64
	pid int
}

// walker reads the descriptors of the pids it takes, with its own
// buffers, so a process costs its system calls and no allocation but
// the path strings.
type walker struct {
	s     *scan
	dir   int // procRoot
	dents []byte
	link  []byte
	name  []byte
	found []holding
	blind []int
	err   error
}

func (w *walker) process(pid int) error {
	w.name = strconv.AppendInt(w.name[:0], int64(pid), 10)
	var st unix.Stat_t
	if err := unix.Fstatat(w.dir, string(w.name), &st, 0); err != nil {
		if gone(err) {
			return nil
		}
		return fmt.Errorf("stat %s/%d: %w", w.s.procRoot, pid, err)
	}
	if st.Uid != w.s.uid {
		return nil
	}
	w.name = append(w.name, "/fd"...)
	fd, err := unix.Openat(w.dir, string(w.name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		if pid == w.s.self {
			err = w.ownFDs(fd, pid)
		} else {
			err = w.fds(fd, pid)
		}
		unix.Close(fd)
	}
	switch {
	case err == nil || gone(err):
		return nil
	case denied(err):
		w.blind = append(w.blind, pid)
		return nil
	default:
		return fmt.Errorf("reading the descriptors of pid %d: %w", pid, err)
	}
}

// fds reads every descriptor of pid through its open fd folder. A link
// is read, not followed: stat through it would ask the file's own file
// system (a stalled FUSE or NFS server could hold the check forever),
// where readlink only names it.
func (w *walker) fds(fd, pid int) error {
	return w.eachEntry(fd, func(name []byte) error {
		n, err := unix.Readlinkat(fd, string(name), w.link)
		if err != nil {
			if gone(err) {
				return nil // closed meanwhile
			}
			return err
		}
		if ino, ok := socketInode(w.link[:n]); ok {
			return w.saw(ino, pid)
		}
		return nil
	})
}

// ownFDs reads the controller's own descriptors, listed in its fd folder,
// with fstat: the same socket inode a /proc link names, for a fraction
// of the cost, on a process that may hold many.
func (w *walker) ownFDs(fd, pid int) error {
	dev, err := sockfsDev()
	if err != nil {
		return err
	}
	return w.eachEntry(fd, func(name []byte) error {
		n, err := strconv.Atoi(string(name))
		if err != nil {
			return fmt.Errorf("descriptor %q is not a number", name)
		}
		var st unix.Stat_t
		if err := unix.Fstat(n, &st); err != nil {
			if errors.Is(err, syscall.EBADF) {
				return nil // closed meanwhile
			}
			return err
		}
		// A socket file on a disk (an O_PATH descriptor of one) is no
		// socket: only sockfs numbers sockets.
		if st.Mode&unix.S_IFMT == unix.S_IFSOCK && uint64(st.Dev) == dev {
			return w.saw(st.Ino, pid)
		}
		return nil
	})
}

func (w *walker) saw(ino uint64, pid int) error {
	if w.s.narrow && ino > math.MaxUint32 {
		return fmt.Errorf("socket inode %d of pid %d: %w", ino, pid, errWideInodes)
	}
	if w.s.want[ino] {
		w.found = append(w.found, holding{ino, pid})
	}
	return nil
}

// eachEntry calls f with the name of every entry of the open folder fd
// but . and .., reading until the kernel says the folder has no more.
func (w *walker) eachEntry(fd int, f func(name []byte) error) error {
	for {
		n, err := unix.Getdents(fd, w.dents)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for b := w.dents[:n]; len(b) > 0; {
			name, rest, err := nextDirent(b)
			if err != nil {
				return err
			}
			b = rest
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if err := f(name); err != nil {
				return err
			}
		}
	}
}

// nextDirent reads one struct linux_dirent64 from b.
func nextDirent(b []byte) (name, rest []byte, err error) {
	const nameOff = 19 // d_ino 8, d_off 8, d_reclen 2, d_type 1
	if len(b) < nameOff+1 {
		return nil, nil, fmt.Errorf("a directory entry of %d bytes", len(b))
	}
	reclen := int(binary.NativeEndian.Uint16(b[16:]))
	if reclen < nameOff+1 || reclen > len(b) {
		return nil, nil, fmt.Errorf("a directory entry of length %d in %d bytes", reclen, len(b))
	}
	name = b[nameOff:reclen]
	end := bytes.IndexByte(name, 0)
	if end <= 0 {
		return nil, nil, errors.New("a directory entry without a name")
	}
	return name[:end], b[reclen:], nil
}

// listPIDs lists the numeric entries of the open /proc folder dir.
func listPIDs(dir int, buf []byte) ([]int, error) {
	var pids []int
	for {
		n, err := unix.Getdents(dir, buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return pids, nil
		}
		for b := buf[:n]; len(b) > 0; {
			name, rest, err := nextDirent(b)
			if err != nil {
				return nil, err
			}
			b = rest
			if pid, ok := parsePID(name); ok {
				pids = append(pids, pid)
			}
		}
	}
}

// parsePID reads a /proc entry named by a pid: decimal digits, no
// leading zero.
func parsePID(name []byte) (int, bool) {
	if len(name) == 0 || len(name) > 9 || name[0] == '0' {
		return 0, false
	}
	pid := 0
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	return pid, true
}

// sockfsDev is the device number of the kernel's socket file system.
var sockfsDev = sync.OnceValues(func() (uint64, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("opening a socket to learn sockfs's device: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("stat of a socket: %w", err)
	}
	return uint64(st.Dev), nil
})

// socketInode reads "socket:[12345]".
func socketInode(link []byte) (uint64, bool) {
	const pre = "socket:["
	if len(link) < len(pre)+2 || string(link[:len(pre)]) != pre || link[len(link)-1] != ']' {
		return 0, false
	}
	var ino uint64
	for _, c := range link[len(pre) : len(link)-1] {
		d := uint64(c - '0')
		if c < '0' || c > '9' || ino > (math.MaxUint64-d)/10 {
			return 0, false
		}
		ino = ino*10 + d
	}
	return ino, true
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
