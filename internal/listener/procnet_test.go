package listener

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const tcpHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

// line builds a /proc/net/tcp line the way the kernel prints it.
func line(local, state string, uid, inode int) string {
	return "   0: " + local + " 00000000:0000 " + state + " 00000000:00000000 00:00000000 00000000 " +
		strconv.Itoa(uid) + "        0 " + strconv.Itoa(inode) + " 1 0000000000000000 100 0 0 10 0\n"
}

func TestParseHexAddrPort(t *testing.T) {
	cases := []struct {
		in   string
		v6   bool
		want string
	}{
		{"0100007F:1F90", false, "127.0.0.1:8080"},
		{"00000000:0050", false, "0.0.0.0:80"},
		{"0101A8C0:01BB", false, "192.168.1.1:443"},
		{"00000000000000000000000001000000:1F90", true, "[::1]:8080"},
		{"00000000000000000000000000000000:0016", true, "[::]:22"},
		{"0000000000000000FFFF00000100007F:0BB8", true, "[::ffff:127.0.0.1]:3000"},
		{"B80D0120000000000000000001000000:0001", true, "[2001:db8::1]:1"},
	}
	for _, tc := range cases {
		got, err := parseHexAddrPort(tc.in, tc.v6)
		if err != nil || got.String() != tc.want {
			t.Errorf("parseHexAddrPort(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		in string
		v6 bool
	}{
		{"0100007F1F90", false}, {"0100007F:1F9", false}, {"0100007G:1F90", false},
		{"0100007F:1F90", true}, {"00000000000000000000000001000000:1F90", false}, {":", false},
		{"0100007F:+F90", false},
	} {
		if _, err := parseHexAddrPort(bad.in, bad.v6); err == nil {
			t.Errorf("parseHexAddrPort(%q, v6=%v) accepted", bad.in, bad.v6)
		}
	}
}

func TestParseProcNet(t *testing.T) {
	good := tcpHeader + line("0100007F:1F90", "0A", 1000, 555) + line("0100007F:1F90", "01", 1000, 556)
	socks, err := parseProcNet([]byte(good), false)
	if err != nil || len(socks) != 1 || socks[0] != (Socket{netip.MustParseAddrPort("127.0.0.1:8080"), 1000, 555}) {
		t.Fatalf("positive control: %+v, %v", socks, err)
	}
	if socks, err := parseProcNet([]byte(tcpHeader), false); err != nil || len(socks) != 0 {
		t.Fatalf("an empty table: %v, %v", socks, err)
	}
	// LO-16: malformed tables are errors, never "no listener".
	bad := map[string]string{
		"empty":              "",
		"no header":          line("0100007F:1F90", "0A", 1000, 555),
		"truncated":          strings.TrimSuffix(good, "\n"),
		"short line":         tcpHeader + "   0: 0100007F:1F90 00000000:0000 0A\n",
		"bad uid":            tcpHeader + strings.Replace(line("0100007F:1F90", "0A", 1000, 555), " 1000 ", " -1 ", 1),
		"bad inode":          tcpHeader + strings.Replace(line("0100007F:1F90", "0A", 1000, 555), " 555 ", " 5x5 ", 1),
		"bad state":          tcpHeader + line("0100007F:1F90", "A", 1000, 555),
		"v6 address in v4":   tcpHeader + line("00000000000000000000000001000000:1F90", "0A", 1000, 555),
		"bad line after ok":  good + "garbage\n",
		"slot without colon": tcpHeader + strings.Replace(line("0100007F:1F90", "0A", 1000, 555), "0:", "0", 1),
	}
	for name, data := range bad {
		if _, err := parseProcNet([]byte(data), false); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAnswers(t *testing.T) {
	cases := []struct {
		local, target string
		want          bool
	}{
		{"127.0.0.1:80", "127.0.0.1:80", true},
		{"127.0.0.1:80", "127.0.0.1:81", false},
		{"127.0.0.1:80", "127.0.0.2:80", false},
		{"0.0.0.0:80", "127.0.0.1:80", true},
		{"0.0.0.0:80", "192.168.1.5:80", true},
		{"0.0.0.0:80", "[::1]:80", false},
		{"[::]:80", "127.0.0.1:80", true},
		{"[::]:80", "[::1]:80", true},
		{"[::1]:80", "[::1]:80", true},
		{"[::1]:80", "127.0.0.1:80", false},
		{"[::ffff:127.0.0.1]:80", "127.0.0.1:80", true},
		{"[::ffff:127.0.0.1]:80", "127.0.0.2:80", false},
		{"127.0.0.1:80", "[::ffff:127.0.0.1]:80", true},
		{"[2001:db8::1]:80", "[2001:db8::1]:80", true},
		{"[2001:db8::1]:80", "[2001:db8::2]:80", false},
	}
	for _, tc := range cases {
		if got := answers(netip.MustParseAddrPort(tc.local), netip.MustParseAddrPort(tc.target)); got != tc.want {
			t.Errorf("answers(%s, %s) = %v, want %v", tc.local, tc.target, got, tc.want)
		}
	}
}

// The real kernel: a listener the test opens is found by sock_diag and
// in /proc/net/tcp{,6} alike, with its owner and inode, and its holder
// (this process, read by fstat) is found by the walk.
func TestReadListenersReal(t *testing.T) {
	addrs := []string{"127.0.0.1:0"}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		addrs = append(addrs, "[::1]:0", "[::ffff:127.0.0.1]:0")
	}
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addr := netip.MustParseAddrPort(l.Addr().String())
		fromProc, err := readListeners("/proc")
		if err != nil {
			t.Fatal(err)
		}
		fromDiag, err := readListenersDiag()
		if err != nil {
			t.Fatal(err)
		}
		m := matching(fromProc, addr)
		if len(m) != 1 || m[0].UID != uint32(os.Geteuid()) || m[0].Inode == 0 {
			t.Fatalf("%s: /proc/net has %+v", addr, m)
		}
		if d := matching(fromDiag, addr); len(d) != 1 || d[0] != m[0] {
			t.Fatalf("%s: sock_diag has %+v, /proc/net has %+v", addr, d, m)
		}
		held, blind, err := holders(context.Background(), scan{procRoot: "/proc", uid: m[0].UID, want: map[uint64]bool{m[0].Inode: true}, narrow: true, self: os.Getpid()})
		if err != nil || !slices.Equal(held[m[0].Inode], []int{os.Getpid()}) {
			t.Fatalf("holders = %v (blind %v), %v; want this process (%d)", held, blind, err, os.Getpid())
		}
		// The same walk through /proc/self/fd links, not fstat.
		held, _, err = holders(context.Background(), scan{procRoot: "/proc", uid: m[0].UID, want: map[uint64]bool{m[0].Inode: true}})
		if err != nil || !slices.Equal(held[m[0].Inode], []int{os.Getpid()}) {
			t.Fatalf("holders through links = %v, %v; want this process (%d)", held, err, os.Getpid())
		}
	}
}

// fakeProc is a folder standing in for /proc, for faults the real /proc
// never shows. tcp and tcp6 are the two tables ("-" for missing, "/" for
// a folder in place of the file).
func fakeProc(t *testing.T, tcp, tcp6 string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"tcp": tcp, "tcp6": tcp6} {
		p := filepath.Join(root, "net", name)
		switch data {
		case "-":
		case "/":
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// LO-16: errors while reading the facts are refusals.
func TestFaultsAreRefusals(t *testing.T) {
	c := crow{checkout: "/srv/crow", home: "/srv/home"}
	addr := netip.MustParseAddrPort("127.0.0.1:8080")
	lis := tcpHeader + line("0100007F:1F90", "0A", 1000, 777)
	cases := []struct {
		name      string
		tcp, tcp6 string
		pid       func(t *testing.T, root string)
		want      Reason
	}{
		{"positive control: a listener that no process holds", lis, tcpHeader, nil, ReasonOrphanSocket},
		{"positive control: no tcp6 table (no IPv6)", lis, "-", nil, ReasonOrphanSocket},
		{"no listener", tcpHeader, tcpHeader, nil, ReasonNoListener},
		{"malformed tcp", lis + "junk\n", tcpHeader, nil, ReasonCheckFailed},
		{"malformed tcp6", lis, tcpHeader + "junk\n", nil, ReasonCheckFailed},
		{"tcp missing", "-", tcpHeader, nil, ReasonCheckFailed},
		{"tcp6 unreadable", lis, "/", nil, ReasonCheckFailed},
		{"fd folder unreadable", lis, tcpHeader, func(t *testing.T, root string) {
			// /proc/<pid> of the right owner whose fd entry cannot be
			// listed: the process might hold the socket.
			if err := os.MkdirAll(filepath.Join(root, "4321"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(filepath.Join(root, "4321"), 1000, 1000); err != nil {
				t.Skipf("cannot chown (not root): %v", err)
			}
			if err := os.WriteFile(filepath.Join(root, "4321", "fd"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, ReasonCheckFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeProc(t, tc.tcp, tc.tcp6)
			if tc.pid != nil {
				tc.pid(t, root)
			}
			ch := c.checker(t, func(cfg *Config) { cfg.ProcRoot = root; cfg.UID = uidp(1000) })
			expect(t, ch, addr, true, tc.want)
		})
	}
}
