package cloexec

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestAboveStdio(t *testing.T) {
	var p [2]int
	// A pipe opened without O_CLOEXEC: the leak the sweep is for.
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	flags, _ := unix.FcntlInt(uintptr(p[0]), unix.F_GETFD, 0)
	if flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("control: the pipe must start without close-on-exec")
	}
	if err := AboveStdio(); err != nil {
		t.Fatal(err)
	}
	for _, fd := range p {
		if f, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); f&unix.FD_CLOEXEC == 0 {
			t.Fatalf("descriptor %d is still inherited", fd)
		}
	}
}
