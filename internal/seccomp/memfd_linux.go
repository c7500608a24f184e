package seccomp

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MemFD writes the program into a sealed, close-on-exec memfd positioned at
// its start, for bubblewrap's --seccomp FD (bubblewrap reads the fd to its
// end). The seals make the bytes bubblewrap reads the bytes built here: no
// holder of the fd can change them afterwards. The caller hands the file to
// the child (ExtraFiles clears close-on-exec on the child's copy only) and
// closes it once bubblewrap has started.
func (p *Program) MemFD() (*os.File, error) {
	fd, err := unix.MemfdCreate("addonwall-seccomp", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd_create for the filter failed, so the wall cannot start: %w", err)
	}
	f := os.NewFile(uintptr(fd), "addonwall-seccomp")
	if err := fill(f, p.Bytes()); err != nil {
		f.Close()
		return nil, fmt.Errorf("seccomp: writing the filter into its memfd failed, so the wall cannot start: %w", err)
	}
	return f, nil
}

func fill(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		return err
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("sealing: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return fmt.Errorf("rewinding: %w", err)
	}
	return nil
}
