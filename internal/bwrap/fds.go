package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/addonwall/addonwall/internal/plan"
)

// resolveStrict refuses every symlink on the way, and any escape from the
// folder the path is opened beneath.
const resolveStrict = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH

// OpenBind opens the source of one fd mount: first its trusted anchor folder
// from "/", then the source beneath it, with openat2 refusing every symlink,
// as an O_PATH descriptor (so a FIFO is never opened for reading). It then
// checks the object is the kind and the inode the plan was built from, so a
// folder swapped in since the scan is refused rather than bound.
func OpenBind(m plan.Mount) (*os.File, error) {
	if !m.IsFd() {
		return nil, fmt.Errorf("mount %s is not an fd bind", m.Dest)
	}
	rel, err := filepath.Rel(m.Anchor, m.Source)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("open %s: not beneath its anchor %s", m.Source, m.Anchor)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /: %w", err)
	}
	defer unix.Close(root)
	anchor := root
	if m.Anchor != "/" {
		anchor, err = unix.Openat2(root, strings.TrimPrefix(m.Anchor, "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: resolveStrict,
		})
		if err != nil {
			return nil, fmt.Errorf("open %s (the folder %s is bound beneath) without following symlinks: %w", m.Anchor, m.Source, err)
		}
		defer unix.Close(anchor)
	}
	fd, err := unix.Openat2(anchor, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: resolveStrict,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s beneath %s without following symlinks: %w", m.Source, m.Anchor, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat %s: %w", m.Source, err)
	}
	kind := plan.KindOther
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		kind = plan.KindDir
	case unix.S_IFREG:
		kind = plan.KindFile
	case unix.S_IFLNK:
		// O_PATH|O_NOFOLLOW hands back the link itself rather than ELOOP.
		unix.Close(fd)
		return nil, fmt.Errorf("%s is a symlink now; the wall never binds through one", m.Source)
	}
	if kind != m.ExpectKind {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is no longer a %s; the plan is stale", m.Source, m.ExpectKind)
	}
	if got := (plan.FileID{Dev: uint64(st.Dev), Ino: st.Ino}); got != m.Expect {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not the file the plan was built from (inode %d:%d, want %d:%d); the plan is stale", m.Source, got.Dev, got.Ino, m.Expect.Dev, m.Expect.Ino)
	}
	return os.NewFile(uintptr(fd), m.Source), nil
}

// memfdWith returns a sealed, close-on-exec memory file holding data, read
// from the start.
func memfdWith(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd for %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("write memfd for %s: %w", name, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal memfd for %s: %w", name, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("rewind memfd for %s: %w", name, err)
	}
	return f, nil
}
