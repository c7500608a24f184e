package seccomp

import (
	"bytes"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMemFD(t *testing.T) {
	p := mustBuild(t, "amd64")
	f, err := p.MemFD()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// bwrap reads from the current offset to the end: that must be the
	// whole program.
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p.Bytes()) {
		t.Fatalf("memfd holds %d bytes, not the %d-byte program", len(got), len(p.Bytes()))
	}

	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("memfd is not close-on-exec (flags %#x, %v)", flags, err)
	}

	// Sealed: neither a write nor a resize gets through...
	if _, err := f.WriteAt([]byte{0}, 0); err == nil {
		t.Error("a write into the sealed memfd succeeded")
	}
	if err := f.Truncate(0); err == nil {
		t.Error("truncating the sealed memfd succeeded")
	}
	// ...while an unsealed memfd, the positive control, takes both.
	fd, err := unix.MemfdCreate("control", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.Pwrite(fd, []byte{0}, 0); err != nil {
		t.Errorf("control write: %v", err)
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		t.Errorf("control truncate: %v", err)
	}
}
