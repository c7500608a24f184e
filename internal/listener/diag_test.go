package listener

import (
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The kernel's replies cannot be made malformed for real, so these
// tests build them byte by byte, the way the kernel lays them out.

func nlmsg(typ, flags uint16, seq uint32, body []byte) []byte {
	b := make([]byte, nlmsgHdrLen+len(body), nlmsgHdrLen+len(body)+3)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	copy(b[nlmsgHdrLen:], body)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func diagMsg(family, state uint8, a netip.AddrPort, uid, inode uint32) []byte {
	m := make([]byte, diagMsgLen+8) // and an attribute the parser skips
	m[0], m[1] = family, state
	binary.BigEndian.PutUint16(m[4:], a.Port())
	if family == unix.AF_INET {
		v4 := a.Addr().As4()
		copy(m[8:], v4[:])
	} else {
		v6 := a.Addr().As16()
		copy(m[8:], v6[:])
	}
	binary.NativeEndian.PutUint32(m[64:], uid)
	binary.NativeEndian.PutUint32(m[68:], inode)
	return m
}

func errBody(e syscall.Errno) []byte {
	b := make([]byte, 4+nlmsgHdrLen)
	binary.NativeEndian.PutUint32(b, uint32(-int32(e)))
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestParseDiag(t *testing.T) {
	v4 := netip.MustParseAddrPort("127.0.0.1:8080")
	v6 := netip.MustParseAddrPort("[::ffff:127.0.0.1]:3000")
	sock4 := nlmsg(unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_MULTI, 1, diagMsg(unix.AF_INET, tcpListen, v4, 1000, 555))
	sock6 := nlmsg(unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_MULTI, 2, diagMsg(unix.AF_INET6, tcpListen, v6, 0, 777))
	done := func(seq uint32) []byte { return nlmsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, seq, make([]byte, 4)) }

	// Positive controls.
	got, end, err := parseDiag(cat(sock4, sock4, done(1)), unix.AF_INET, 1, nil)
	if err != nil || !end || len(got) != 2 || got[0] != (Socket{v4, 1000, 555}) {
		t.Fatalf("two sockets and the end: %+v, %v, %v", got, end, err)
	}
	got, end, err = parseDiag(sock6, unix.AF_INET6, 2, nil)
	if err != nil || end || len(got) != 1 || got[0] != (Socket{v6, 0, 777}) {
		t.Fatalf("a v4-mapped tcp6 socket, more to come: %+v, %v, %v", got, end, err)
	}
	if got, end, err := parseDiag(done(1), unix.AF_INET, 1, nil); err != nil || !end || len(got) != 0 {
		t.Fatalf("no listeners: %+v, %v, %v", got, end, err)
	}

	bad := map[string]struct {
		b      []byte
		family uint8
	}{
		"empty":                  {nil, unix.AF_INET},
		"short header":           {sock4[:10], unix.AF_INET},
		"length past the end":    {sock4[:nlmsgHdrLen+20], unix.AF_INET},
		"length under a header":  {func() []byte { b := cat(sock4); binary.NativeEndian.PutUint32(b, 8); return b }(), unix.AF_INET},
		"short socket message":   {nlmsg(unix.SOCK_DIAG_BY_FAMILY, 0, 1, make([]byte, 40)), unix.AF_INET},
		"another request":        {nlmsg(unix.SOCK_DIAG_BY_FAMILY, 0, 9, diagMsg(unix.AF_INET, tcpListen, v4, 1, 1)), unix.AF_INET},
		"another family":         {sock6, unix.AF_INET},
		"not listening":          {nlmsg(unix.SOCK_DIAG_BY_FAMILY, 0, 1, diagMsg(unix.AF_INET, 1, v4, 1, 1)), unix.AF_INET},
		"interrupted dump":       {nlmsg(unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_DUMP_INTR, 1, diagMsg(unix.AF_INET, tcpListen, v4, 1, 1)), unix.AF_INET},
		"error":                  {nlmsg(unix.NLMSG_ERROR, 0, 1, errBody(syscall.EPERM)), unix.AF_INET},
		"an ack in a dump":       {nlmsg(unix.NLMSG_ERROR, 0, 1, errBody(0)), unix.AF_INET},
		"short error":            {nlmsg(unix.NLMSG_ERROR, 0, 1, []byte{1}), unix.AF_INET},
		"dump ends with error":   {nlmsg(unix.NLMSG_DONE, 0, 1, errBody(syscall.ENOMEM)[:4]), unix.AF_INET},
		"messages after the end": {cat(done(1), sock4), unix.AF_INET},
		"unknown type":           {nlmsg(unix.NLMSG_NOOP, 0, 1, nil), unix.AF_INET},
	}
	for name, tc := range bad {
		if got, _, err := parseDiag(tc.b, tc.family, 1, nil); err == nil {
			t.Errorf("%s: accepted, %+v", name, got)
		}
	}

	// No handler for TCP: read /proc/net instead (the same facts).
	_, _, err = parseDiag(nlmsg(unix.NLMSG_ERROR, 0, 1, errBody(syscall.ENOENT)), unix.AF_INET, 1, nil)
	if !errors.Is(err, errNoDiag) {
		t.Fatalf("ENOENT = %v, want errNoDiag", err)
	}
	_, _, err = parseDiag(nlmsg(unix.NLMSG_ERROR, 0, 1, errBody(syscall.EPERM)), unix.AF_INET, 1, nil)
	if errors.Is(err, errNoDiag) {
		t.Fatalf("EPERM = %v, taken for a kernel without sock_diag", err)
	}
}

func FuzzParseDiag(f *testing.F) {
	v4 := netip.MustParseAddrPort("127.0.0.1:8080")
	f.Add(cat(nlmsg(unix.SOCK_DIAG_BY_FAMILY, 0, 1, diagMsg(unix.AF_INET, tcpListen, v4, 1, 2)), nlmsg(unix.NLMSG_DONE, 0, 1, make([]byte, 4))), uint8(unix.AF_INET))
	f.Add(nlmsg(unix.NLMSG_ERROR, 0, 1, errBody(syscall.ENOENT)), uint8(unix.AF_INET6))
	f.Fuzz(func(t *testing.T, b []byte, family uint8) {
		socks, _, err := parseDiag(b, family, 1, nil)
		if err != nil {
			return
		}
		for _, s := range socks {
			if !s.Local.IsValid() || (family == unix.AF_INET) != s.Local.Addr().Is4() {
				t.Fatalf("accepted %+v from a dump of family %d", s, family)
			}
		}
	})
}

func TestWalkHelpers(t *testing.T) {
	for in, want := range map[string]uint64{"socket:[1]": 1, "socket:[4026531993]": 4026531993, "socket:[18446744073709551615]": math.MaxUint64} {
		if got, ok := socketInode([]byte(in)); !ok || got != want {
			t.Errorf("socketInode(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"socket:[]", "socket:[1", "socket:1]", "pipe:[1]", "/tmp/socket:[1]", "socket:[+1]", "socket:[18446744073709551616]", "socket:[1 ]"} {
		if got, ok := socketInode([]byte(in)); ok {
			t.Errorf("socketInode(%q) = %d, accepted", in, got)
		}
	}
	for in, want := range map[string]int{"1": 1, "4242": 4242, "999999999": 999999999} {
		if got, ok := parsePID([]byte(in)); !ok || got != want {
			t.Errorf("parsePID(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "0", "01", "self", "12a", "1234567890"} {
		if got, ok := parsePID([]byte(in)); ok {
			t.Errorf("parsePID(%q) = %d, accepted", in, got)
		}
	}

	// A dirent: d_ino, d_off, d_reclen, d_type, name, NUL, padding.
	dirent := func(name string) []byte {
		reclen := (19 + len(name) + 1 + 7) &^ 7
		b := make([]byte, reclen)
		binary.NativeEndian.PutUint16(b[16:], uint16(reclen))
		copy(b[19:], name)
		return b
	}
	b := cat(dirent("."), dirent("12"))
	name, rest, err := nextDirent(b)
	if err != nil || string(name) != "." {
		t.Fatalf("nextDirent: %q, %v", name, err)
	}
	if name, rest, err = nextDirent(rest); err != nil || string(name) != "12" || len(rest) != 0 {
		t.Fatalf("nextDirent: %q, %d left, %v", name, len(rest), err)
	}
	long := dirent("12")
	binary.NativeEndian.PutUint16(long[16:], 200)
	noName := dirent("")
	for what, b := range map[string][]byte{"short": dirent("1")[:10], "reclen past the end": long, "no name": noName} {
		if _, _, err := nextDirent(b); err == nil {
			t.Errorf("nextDirent(%s) accepted", what)
		}
	}

	// sock_diag's inodes are 32 bits: a wider socket inode fails the
	// walk instead of being matched on its low bits.
	w := walker{s: &scan{want: map[uint64]bool{5: true}, narrow: true}}
	if err := w.saw(5, 10); err != nil || len(w.found) != 1 {
		t.Fatalf("positive control: %v, %v", err, w.found)
	}
	if err := w.saw(1<<32|5, 11); !errors.Is(err, errWideInodes) {
		t.Fatalf("a 33-bit inode = %v, want errWideInodes", err)
	}
	w.s.narrow = false
	if err := w.saw(1<<32|5, 12); err != nil || len(w.found) != 1 {
		t.Fatalf("whole inodes from /proc/net: %v, %v", err, w.found)
	}
}
