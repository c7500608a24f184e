// Package planfacts gathers, from the filesystem, the facts the bind plan is
// built from: lstat, real path and owner of each path, and a bounded scan of
// every tree the wall may bind. It never follows a symlink while walking and
// decides nothing; internal/plan decides.
package planfacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/addonwall/addonwall/internal/plan"
)

// Limits bound a scan. Past either, the tree is "incomplete" and the plan
// does not bind it.
type Limits struct {
	// MaxEntries is the most entries one tree may hold.
	MaxEntries int
	// MaxDepth is the deepest folder level walked below the root.
	MaxDepth int
}

// DefaultLimits are the limits a spawn uses.
var DefaultLimits = Limits{MaxEntries: 200_000, MaxDepth: 64}

type scanner struct {
	ctx    context.Context
	lim    Limits
	out    plan.TreeScan
	failed bool
}

// Scan walks the tree at root (a real path) without following symlinks,
// opening each folder beneath its parent's descriptor with O_NOFOLLOW, and
// records every sensitive entry, socket, hard-linked file and symlink. A tree
// that is too large, too deep, unreadable or changed under the walk comes
// back with Incomplete set; an error means the root itself could not be
// opened or the context ended.
func Scan(ctx context.Context, root string, lim Limits) (plan.TreeScan, error) {
	if lim.MaxEntries <= 0 || lim.MaxDepth <= 0 {
		return plan.TreeScan{}, fmt.Errorf("scan %s: limits must be positive", root)
	}
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return plan.TreeScan{}, fmt.Errorf("scan %q: not a clean absolute path", root)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return plan.TreeScan{}, fmt.Errorf("scan %s: open the root: %w", root, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return plan.TreeScan{}, fmt.Errorf("scan %s: stat the root: %w", root, err)
	}
	s := &scanner{ctx: ctx, lim: lim, out: plan.TreeScan{Root: root, RootID: idOf(&st)}}
	shielded := plan.IsShieldedDir(root)
	if err := s.walk(fd, root, 0, shielded); err != nil {
		return plan.TreeScan{}, err
	}
	return s.out, nil
}

func (s *scanner) stop(why string) {
	if !s.failed {
		s.failed = true
		s.out.Incomplete = why
	}
}

// walk scans the folder open at fd (closing it) whose path is dir.
func (s *scanner) walk(fd int, dir string, level int, shielded bool) error {
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	for !s.failed {
		entries, err := f.ReadDir(1024)
		for _, e := range entries {
			if s.failed {
				return nil
			}
			if err := s.entry(fd, dir, e.Name(), level, shielded); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(entries) == 0) {
			return nil
		}
		if err != nil {
			s.stop(fmt.Sprintf("cannot read %s: %v", dir, err))
			return nil
		}
	}
	return nil
}

func (s *scanner) entry(dirfd int, dir, name string, level int, shielded bool) error {
	s.out.Entries++
	if s.out.Entries%1024 == 0 {
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("scan %s: %w", s.out.Root, err)
		}
	}
	if s.out.Entries > s.lim.MaxEntries {
		s.stop(fmt.Sprintf("more than %d entries", s.lim.MaxEntries))
		return nil
	}
	path := dir + "/" + name
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			s.stop(fmt.Sprintf("%s went away during the scan", path))
		} else {
			s.stop(fmt.Sprintf("cannot stat %s: %v", path, err))
		}
		return nil
	}
	n := plan.Node{Path: path, Kind: kindOf(st.Mode), ID: idOf(&st), Nlink: uint64(st.Nlink), Size: st.Size}
	sensitive := shielded || plan.IsSensitiveName(name) || (n.Kind == plan.KindDir && plan.IsShieldedDir(path))
	if n.Kind == plan.KindSymlink {
		resolveTarget(&n)
		s.out.Symlinks = append(s.out.Symlinks, n)
	}
	if sensitive {
		s.out.Sensitive = append(s.out.Sensitive, n)
	}
	switch n.Kind {
	case plan.KindSocket:
		s.out.Sockets = append(s.out.Sockets, n)
	case plan.KindFile:
		if n.Nlink > 1 && !sensitive {
			s.out.Links = append(s.out.Links, n)
		}
	case plan.KindDir:
		if level+1 > s.lim.MaxDepth {
			s.stop(fmt.Sprintf("deeper than %d levels at %s", s.lim.MaxDepth, path))
			return nil
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			s.stop(fmt.Sprintf("cannot open %s: %v", path, err))
			return nil
		}
		return s.walk(fd, path, level+1, sensitive)
	}
	return nil
}

// resolveTarget fills in where a symlink finally leads on the host.
func resolveTarget(n *plan.Node) {
	target, err := filepath.EvalSymlinks(n.Path)
	if err != nil {
		return // dangling, a loop or unreadable: it leads nowhere the wall shows
	}
	var st unix.Stat_t
	if err := unix.Lstat(target, &st); err != nil {
		return
	}
	n.Target = target
	n.TargetKind = kindOf(st.Mode)
	n.TargetID = idOf(&st)
}

func idOf(st *unix.Stat_t) plan.FileID {
	return plan.FileID{Dev: uint64(st.Dev), Ino: st.Ino}
}

func kindOf(mode uint32) plan.Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return plan.KindDir
	case unix.S_IFREG:
		return plan.KindFile
	case unix.S_IFLNK:
		return plan.KindSymlink
	case unix.S_IFSOCK:
		return plan.KindSocket
	case unix.S_IFIFO:
		return plan.KindFIFO
	case unix.S_IFCHR, unix.S_IFBLK:
		return plan.KindDevice
	}
	return plan.KindOther
}
