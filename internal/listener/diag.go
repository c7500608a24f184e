package listener

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reading /proc/net/tcp{,6} makes the kernel walk its whole established
// table (every bucket, empty or not) on every read, about 2 ms here even
// with one listener. A NETLINK_SOCK_DIAG dump that asks for listening
// sockets only walks the listening table: the same facts (address, port,
// uid as the kernel records it, inode), about 50 µs. Any user may ask.

const (
	tcpListen = 10 // TCP_LISTEN

	nlmsgHdrLen  = 16 // struct nlmsghdr
	diagReqLen   = 56 // struct inet_diag_req_v2
	diagMsgLen   = 72 // struct inet_diag_msg
	diagRecvSize = 64 << 10
)

// errNoDiag marks a kernel without sock_diag for TCP (no inet_diag or
// tcp_diag): the listeners are then read from /proc/net/tcp{,6}, which
// hold the same facts.
var errNoDiag = errors.New("this kernel answers no sock_diag dump of TCP sockets")

// readListenersDiag reads every listening TCP socket of the controller's
// network namespace (the one /proc/net shows it) from the kernel. Inodes
// are the kernel's 32-bit inet_diag field (see narrowInodes).
func readListenersDiag() ([]Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		if errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.EAFNOSUPPORT) {
			return nil, fmt.Errorf("%w: %w", errNoDiag, err)
		}
		return nil, fmt.Errorf("opening a sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers at once; a read that hangs fails the check
	// rather than hold every other check of this wall behind it.
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5}); err != nil {
		return nil, fmt.Errorf("setting a read timeout on the sock_diag socket: %w", err)
	}
	buf := make([]byte, diagRecvSize)
	var out []Socket
	for i, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		seq := uint32(i + 1)
		if err := unix.Sendto(fd, diagRequest(family, seq), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return nil, fmt.Errorf("asking the kernel for listening sockets: %w", err)
		}
		for done := false; !done; {
			n, flags, from, err := recvDiag(fd, buf)
			if err != nil {
				return nil, fmt.Errorf("reading the kernel's listening sockets: %w", err)
			}
			if flags&unix.MSG_TRUNC != 0 {
				return nil, errors.New("reading the kernel's listening sockets: a reply was truncated")
			}
			if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
				return nil, fmt.Errorf("reading the kernel's listening sockets: a reply came from %v, not the kernel", from)
			}
			out, done, err = parseDiag(buf[:n], family, seq, out)
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// recvDiag reads one datagram, again after a signal: a socket with a
// read timeout is not restarted by SA_RESTART, and the Go runtime
// signals its threads to preempt them.
func recvDiag(fd int, buf []byte) (n, flags int, from unix.Sockaddr, err error) {
	for {
		n, _, flags, from, err = unix.Recvmsg(fd, buf, nil, 0)
		if !errors.Is(err, syscall.EINTR) {
			return n, flags, from, err
		}
	}
}

// diagRequest is a dump request for family's listening TCP sockets.
func diagRequest(family uint8, seq uint32) []byte {
	b := make([]byte, nlmsgHdrLen+diagReqLen)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(b[8:], seq)
	r := b[nlmsgHdrLen:]
	r[0] = family
	r[1] = unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 1<<tcpListen)
	return b
}

// parseDiag reads one datagram of a sock_diag dump and appends its
// sockets to out; done is true at the dump's end. Every message is
// checked: a reply this parser does not expect (another sequence, a
// socket of another family or state, a short or overlong message) is an
// error, never a shorter list.
func parseDiag(b []byte, family uint8, seq uint32, out []Socket) (_ []Socket, done bool, err error) {
	if len(b) == 0 {
		return nil, false, errors.New("sock_diag: an empty reply")
	}
	for len(b) > 0 {
		if len(b) < nlmsgHdrLen {
			return nil, false, fmt.Errorf("sock_diag: %d bytes left, short of a message header", len(b))
		}
		l := int(binary.NativeEndian.Uint32(b[0:]))
		typ := binary.NativeEndian.Uint16(b[4:])
		flags := binary.NativeEndian.Uint16(b[6:])
		if l < nlmsgHdrLen || l > len(b) {
			return nil, false, fmt.Errorf("sock_diag: a message of %d bytes in a reply of %d", l, len(b))
		}
		if got := binary.NativeEndian.Uint32(b[8:]); got != seq {
			return nil, false, fmt.Errorf("sock_diag: a reply to request %d, want %d", got, seq)
		}
		if flags&unix.NLM_F_DUMP_INTR != 0 {
			return nil, false, errors.New("sock_diag: the dump was interrupted (the table changed under it)")
		}
		body := b[nlmsgHdrLen:l]
		switch typ {
		case unix.NLMSG_DONE:
			if len(body) >= 4 {
				if e := int32(binary.NativeEndian.Uint32(body)); e < 0 {
					return nil, false, fmt.Errorf("sock_diag: the dump ended with %w", syscall.Errno(-e))
				}
			}
			if l != len(b) {
				return nil, false, errors.New("sock_diag: messages after the end of the dump")
			}
			return out, true, nil
		case unix.NLMSG_ERROR:
			if len(body) < 4 {
				return nil, false, errors.New("sock_diag: a short error message")
			}
			e := syscall.Errno(-int32(binary.NativeEndian.Uint32(body)))
			if e == syscall.ENOENT {
				return nil, false, fmt.Errorf("%w (address family %d): %w", errNoDiag, family, e)
			}
			return nil, false, fmt.Errorf("sock_diag: the kernel refused the dump: %w", e)
		case unix.SOCK_DIAG_BY_FAMILY:
			s, err := parseDiagMsg(body, family)
			if err != nil {
				return nil, false, err
			}
			out = append(out, s)
		default:
			return nil, false, fmt.Errorf("sock_diag: unexpected message type %d", typ)
		}
		// Messages are 4-byte aligned; the last one may end the datagram
		// unpadded.
		next := (l + 3) &^ 3
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
	}
	return out, false, nil
}

// parseDiagMsg reads struct inet_diag_msg; attributes after it are not
// asked for and not read.
func parseDiagMsg(m []byte, family uint8) (Socket, error) {
	if len(m) < diagMsgLen {
		return Socket{}, fmt.Errorf("sock_diag: a socket message of %d bytes, want at least %d", len(m), diagMsgLen)
	}
	if m[0] != family {
		return Socket{}, fmt.Errorf("sock_diag: a socket of address family %d in the dump of family %d", m[0], family)
	}
	if m[1] != tcpListen {
		return Socket{}, fmt.Errorf("sock_diag: a socket in TCP state %d in a dump of listening sockets", m[1])
	}
	port := binary.BigEndian.Uint16(m[4:])
	var a netip.Addr
	if family == unix.AF_INET {
		a = netip.AddrFrom4([4]byte(m[8:12]))
	} else {
		// A v4-mapped address keeps its ::ffff: form, as in tcp6.
		a = netip.AddrFrom16([16]byte(m[8:24]))
	}
	return Socket{
		Local: netip.AddrPortFrom(a, port),
		UID:   binary.NativeEndian.Uint32(m[64:]),
		Inode: uint64(binary.NativeEndian.Uint32(m[68:])),
	}, nil
}
