//go:build linux

package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openForWriting asks the kernel whether any process holds path open for
// writing: a read lease cannot be taken on such a file (fcntl F_SETLEASE
// fails with EAGAIN). The lease is dropped at once; a writer that opens the
// file meanwhile waits only for that. Where leases are not available (not
// the file's owner without CAP_LEASE, a file system without leases) it
// answers false and readSettled relies on its two matching reads.
func openForWriting(path string) (bool, error) {
	f, err := openRegular(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
	switch {
	case err == nil:
		_, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
		return false, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EBUSY):
		return true, nil
	default:
		return false, nil
	}
}
