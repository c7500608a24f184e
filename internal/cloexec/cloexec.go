// Package cloexec marks every descriptor of this process above stdio
// close-on-exec, so a descriptor someone opened without O_CLOEXEC cannot
// reach a child: both the controller (before it starts bubblewrap, which
// passes unknown descriptors on) and the in-wall entry (before it starts
// the add-on) need exactly fds 0, 1 and 2 to go through.
package cloexec

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// AboveStdio marks every descriptor above 2 close-on-exec. os/exec clears
// the flag only on the ExtraFiles it dup2s into place. Holding
// syscall.ForkLock for reading keeps a concurrent fork from running
// between two flag changes.
func AboveStdio() error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing this process's descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			continue // the descriptor ReadDir itself used, closed by now
		}
		if flags&unix.FD_CLOEXEC == 0 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
				return fmt.Errorf("marking descriptor %d close-on-exec: %w", fd, err)
			}
		}
	}
	return nil
}
