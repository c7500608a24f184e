package listener

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
)

// stateListen is TCP_LISTEN as /proc/net/tcp prints it.
const stateListen = "0A"

// maxProcNetBytes bounds one /proc/net/tcp* read. A host with more sockets
// than this is refused (CheckFailed) rather than judged on a partial list.
const maxProcNetBytes = 64 << 20

// Socket is one listening TCP socket from the kernel's table (sock_diag,
// or /proc/net/tcp and tcp6).
type Socket struct {
	// Local is the address and port it is bound to; a tcp6 socket bound
	// to a v4-mapped address keeps its ::ffff: form.
	Local netip.AddrPort
	// UID is the socket's owner as the kernel records it.
	UID uint32
	// Inode is the socket's inode (0 for a socket no file holds); from
	// sock_diag, its low 32 bits (see errWideInodes).
	Inode uint64
}

// readListeners reads every listening socket from procRoot/net/tcp and
// procRoot/net/tcp6. Both must be readable and well formed (a table that
// cannot be read is a reason to refuse, not to judge on half the sockets);
// only a tcp6 table that does not exist, on a kernel without IPv6, is read
// as empty.
func readListeners(procRoot string) ([]Socket, error) {
	var out []Socket
	for _, name := range []string{"tcp", "tcp6"} {
		p := filepath.Join(procRoot, "net", name)
		data, err := readBounded(p, maxProcNetBytes)
		if name == "tcp6" && errors.Is(err, fs.ErrNotExist) {
			// A kernel without IPv6 (ipv6.disable=1) has no tcp6 table
			// and can hold no IPv6 socket. Any other failure refuses.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		socks, err := parseProcNet(data, name == "tcp6")
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", p, err)
		}
		out = append(out, socks...)
	}
	return out, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	// /proc files report size 0, so read until EOF with a hard bound.
	n, err := buf.ReadFrom(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("more than %d bytes", limit)
	}
	return buf.Bytes(), nil
}

// parseProcNet parses one /proc/net/tcp or tcp6 table and returns its
// listening sockets. Every line is checked, listening or not: a table
// whose layout is not the one this parser knows is an error, never a
// table with no listeners.
func parseProcNet(data []byte, v6 bool) ([]Socket, error) {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) == 0 || !bytes.HasPrefix(bytes.TrimLeft(lines[0], " "), []byte("sl")) {
		return nil, fmt.Errorf("line 1: not a socket table header")
	}
	if len(lines[len(lines)-1]) != 0 {
		return nil, fmt.Errorf("the table does not end with a newline (truncated?)")
	}
	var out []Socket
	for i, line := range lines[1 : len(lines)-1] {
		s, listening, err := parseProcNetLine(line, v6)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		if listening {
			out = append(out, s)
		}
	}
	return out, nil
}

// The columns of a /proc/net/tcp line that the check reads.
const (
	colLocal = 1
	colState = 3
	colUID   = 7
	colInode = 9
	minCols  = 10
)

func parseProcNetLine(line []byte, v6 bool) (Socket, bool, error) {
	f := bytes.Fields(line)
	if len(f) < minCols {
		return Socket{}, false, fmt.Errorf("%d columns, want at least %d", len(f), minCols)
	}
	if !bytes.HasSuffix(f[0], []byte(":")) {
		return Socket{}, false, fmt.Errorf("slot %q does not end with a colon", f[0])
	}
	local, err := parseHexAddrPort(string(f[colLocal]), v6)
	if err != nil {
		return Socket{}, false, fmt.Errorf("local address: %w", err)
	}
	st := string(f[colState])
	if len(st) != 2 || !isHex(st) {
		return Socket{}, false, fmt.Errorf("state %q is not two hex digits", st)
	}
	uid, err := strconv.ParseUint(string(f[colUID]), 10, 32)
	if err != nil {
		return Socket{}, false, fmt.Errorf("uid %q: %w", f[colUID], err)
	}
	inode, err := strconv.ParseUint(string(f[colInode]), 10, 64)
	if err != nil {
		return Socket{}, false, fmt.Errorf("inode %q: %w", f[colInode], err)
	}
	return Socket{Local: local, UID: uint32(uid), Inode: inode}, st == stateListen, nil
}

// parseHexAddrPort reads "0100007F:1F90" (IPv4) or 32 hex digits and a
// port (IPv6). The kernel prints each 32-bit word of the address as a
// number in host byte order, and the port as a number.
func parseHexAddrPort(s string, v6 bool) (netip.AddrPort, error) {
	addrHex, portHex, ok := cutByte(s, ':')
	if !ok || len(portHex) != 4 || !isHex(portHex) {
		return netip.AddrPort{}, fmt.Errorf("%q is not ADDR:PORT in hex", s)
	}
	want := 8
	if v6 {
		want = 32
	}
	if len(addrHex) != want || !isHex(addrHex) {
		return netip.AddrPort{}, fmt.Errorf("address %q is not %d hex digits", addrHex, want)
	}
	raw, _ := hex.DecodeString(addrHex)
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	port, _ := strconv.ParseUint(portHex, 16, 16)
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a, uint16(port)), nil
}

func cutByte(s string, c byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// answers reports whether a connection to target can be answered by a
// listener bound to local. It errs towards yes: a listener judged needlessly
// can only add a refusal. A 0.0.0.0 listener answers every IPv4 address; a
// [::] listener answers every IPv6 address and, unless it is IPV6_V6ONLY
// (which /proc does not show), every IPv4 address too; a tcp6 listener on
// ::ffff:a.b.c.d answers a.b.c.d.
func answers(local, target netip.AddrPort) bool {
	if local.Port() != target.Port() {
		return false
	}
	l, t := local.Addr(), target.Addr().Unmap()
	switch {
	case l.Is4():
		return t.Is4() && (l.IsUnspecified() || l == t)
	case l.IsUnspecified():
		return true
	case l.Is4In6():
		return t.Is4() && l.Unmap() == t
	default:
		return t.Is6() && l.WithZone("") == t.WithZone("")
	}
}

// matching returns the listeners that answer target.
func matching(socks []Socket, target netip.AddrPort) []Socket {
	var out []Socket
	for _, s := range socks {
		if answers(s.Local, target) {
			out = append(out, s)
		}
	}
	return out
}
