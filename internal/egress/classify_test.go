package egress

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// notPublic is Crow's ip-classify NOT_PUBLIC table (CROW-NOTES §5.2) in
// address form, with SECURITY-CASES NET-05/NET-06 folded in, and the class
// each must get. The URL-ish spellings of that table ("2130706433",
// "0x7f.1", …) are not addresses at all; they are hostnames a resolver
// might read as numbers, and TestNumericLookingHostsAreRefused covers them.
var notPublic = []struct {
	ip    string
	class Class
}{
	// Embedded IPv4 loopback and metadata in every IPv6 spelling.
	{"::ffff:127.0.0.1", ClassLoopback},
	{"::ffff:7f00:1", ClassLoopback},
	{"::ffff:169.254.169.254", ClassMetadata},
	{"::ffff:10.0.0.1", ClassPrivate},
	{"::ffff:0:127.0.0.1", ClassLoopback}, // SIIT
	{"::ffff:0:a9fe:a9fe", ClassMetadata}, // SIIT
	{"::127.0.0.1", ClassLoopback},        // v4-compatible
	{"::7f00:1", ClassLoopback},           // v4-compatible
	{"::169.254.169.254", ClassMetadata},  // v4-compatible
	{"64:ff9b::7f00:1", ClassLoopback},    // NAT64
	{"64:ff9b::127.0.0.1", ClassLoopback}, // NAT64
	{"64:ff9b::a9fe:a9fe", ClassMetadata}, // NAT64
	{"64:ff9b::a00:1", ClassPrivate},      // NAT64 of 10.0.0.1
	{"64:ff9b:1::1", ClassReserved},       // local-use NAT64
	{"64:ff9b:1::808:808", ClassReserved}, // local-use NAT64, even of a public address
	{"2002:7f00:1::", ClassLoopback},      // 6to4
	{"2002:7f00:1::1", ClassLoopback},
	{"2002:a9fe:a9fe::1", ClassMetadata},
	{"2002:c0a8:101::1", ClassPrivate},                      // 6to4 of 192.168.1.1
	{"2001:0:4136:e378:8000:63bf:80ff:fffe", ClassLoopback}, // Teredo, client 127.0.0.1 inverted
	{"2001:0:4136:e378:8000:63bf:5601:5601", ClassMetadata}, // Teredo, client 169.254.169.254
	{"2001:0:4136:e378:8000:63bf:f5ff:fffe", ClassPrivate},  // Teredo, client 10.0.0.1
	{"::ffff:0:808:808", ClassReserved},                     // SIIT of a public address: nothing routes it
	{"::8.8.8.8", ClassReserved},                            // v4-compatible of a public address

	// IPv6 special purpose.
	{"::", ClassUnspecified},
	{"::1", ClassLoopback},
	{"fe80::1", ClassLinkLocal},
	{"fe90::1", ClassLinkLocal},
	{"febf::1", ClassLinkLocal},
	{"fec0::1", ClassReserved}, // deprecated site-local, outside 2000::/3
	{"fc00::1", ClassULA},
	{"fd7a:115c:a1e0::1", ClassULA}, // Tailscale
	{"fd00:ec2::254", ClassMetadata},
	{"fd20:ce::254", ClassMetadata},
	{"ff02::1", ClassMulticast},
	{"ff0e::1", ClassMulticast},
	{"2001:db8::1", ClassDocumentation},
	{"3fff::1", ClassDocumentation},
	{"2001:2::1", ClassBenchmarking},
	{"2001:10::1", ClassReserved}, // inside 2001::/23
	{"100::1", ClassReserved},     // discard-only
	{"fc::1", ClassReserved},      // outside 2000::/3
	{"5f00::1", ClassReserved},    // outside 2000::/3
	{"4000::1", ClassReserved},    // outside 2000::/3

	// IPv4 special purpose.
	{"0.0.0.0", ClassUnspecified},
	{"0.1.2.3", ClassReserved},
	{"10.0.0.1", ClassPrivate},
	{"10.255.255.255", ClassPrivate},
	{"172.16.0.1", ClassPrivate},
	{"172.31.255.255", ClassPrivate},
	{"192.168.0.1", ClassPrivate},
	{"192.168.255.255", ClassPrivate},
	{"127.0.0.1", ClassLoopback},
	{"127.0.0.2", ClassLoopback},
	{"127.255.255.255", ClassLoopback},
	{"169.254.169.254", ClassMetadata},
	{"169.254.170.2", ClassMetadata},
	{"169.254.0.1", ClassLinkLocal},
	{"100.64.0.1", ClassCGNAT},
	{"100.100.100.100", ClassCGNAT}, // Tailscale DNS
	{"100.100.100.200", ClassMetadata},
	{"100.127.255.255", ClassCGNAT},
	{"192.0.0.8", ClassReserved},
	{"192.0.0.192", ClassMetadata},
	{"192.0.2.1", ClassDocumentation},
	{"198.51.100.1", ClassDocumentation},
	{"203.0.113.1", ClassDocumentation},
	{"192.88.99.1", ClassReserved},
	{"198.18.0.1", ClassBenchmarking},
	{"198.19.255.255", ClassBenchmarking},
	{"224.0.0.1", ClassMulticast},
	{"239.255.255.250", ClassMulticast},
	{"240.0.0.1", ClassReserved},
	{"255.255.255.255", ClassReserved},
}

// public is Crow's PUBLIC table plus the first address past each
// special range's edge, so an off-by-one in a mask shows.
var public = []string{
	"8.8.8.8", "1.1.1.1", "172.32.0.1", "172.15.255.255", "100.128.0.1",
	"100.63.255.255", "198.20.0.1", "198.17.255.255", "223.255.255.255",
	"11.0.0.1", "9.255.255.255", "126.255.255.255", "128.0.0.1",
	"169.253.255.255", "169.255.0.1", "192.0.1.255", "192.0.3.1",
	"2606:4700::1111", "2a00:1450:4001::1", "2001:4860:4860::8888",
	"::ffff:8.8.8.8",
	"64:ff9b::808:808",
	"2002:808:808::1",
	"2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo, client 8.8.8.8
	"2001:200::1",                          // just past 2001::/23
	"2001:dc8::1",                          // just below 2001:db8::/32
}

func TestClassifyNotPublic(t *testing.T) {
	for _, tc := range notPublic {
		ip := netip.MustParseAddr(tc.ip)
		if got := Classify(ip); got != tc.class {
			t.Errorf("Classify(%s) = %s, want %s", tc.ip, got, tc.class)
		}
		if ok, reason := IsEgressPublic(ip, OwnNetwork{}, nil); ok || reason == "" {
			t.Errorf("IsEgressPublic(%s) = %v %q, want refused with a reason", tc.ip, ok, reason)
		}
	}
}

func TestClassifyPublic(t *testing.T) {
	for _, s := range public {
		ip := netip.MustParseAddr(s)
		if got := Classify(ip); got != ClassPublic {
			t.Errorf("Classify(%s) = %s, want public", s, got)
		}
		if ok, reason := IsEgressPublic(ip, OwnNetwork{}, nil); !ok {
			t.Errorf("IsEgressPublic(%s) refused: %s", s, reason)
		}
	}
}

// The standard library calls many of these global unicast (SECURITY-CASES
// L14); this is why the table exists. Each row shows the stdlib saying
// yes and the table saying no, so the table is doing the work.
func TestStdlibGlobalUnicastIsNotEnough(t *testing.T) {
	for _, s := range []string{"10.0.0.1", "100.64.0.1", "100.100.100.100", "fd00:ec2::254", "64:ff9b::7f00:1", "2002:7f00:1::", "2001:0:4136:e378:8000:63bf:80ff:fffe", "::127.0.0.1", "fec0::1", "0.1.2.3", "192.0.0.192", "198.18.0.1", "240.0.0.1", "100::1"} {
		ip := netip.MustParseAddr(s)
		if !ip.IsGlobalUnicast() {
			t.Errorf("stdlib no longer calls %s global unicast; this row proves nothing now", s)
		}
		if Classify(ip) == ClassPublic {
			t.Errorf("Classify(%s) = public", s)
		}
	}
}

func TestEmbeddedIPv4(t *testing.T) {
	for _, tc := range []struct {
		ip, v4 string
		how    Embedding
	}{
		{"::ffff:1.2.3.4", "1.2.3.4", EmbedMapped},
		{"::ffff:0:1.2.3.4", "1.2.3.4", EmbedSIIT},
		{"::1.2.3.4", "1.2.3.4", EmbedCompatible},
		{"64:ff9b::102:304", "1.2.3.4", EmbedNAT64},
		{"2002:102:304:5::6", "1.2.3.4", Embed6to4},
		{"2001:0:4136:e378:8000:63bf:fefd:fcfb", "1.2.3.4", EmbedTeredo},
	} {
		v4, how, ok := EmbeddedIPv4(netip.MustParseAddr(tc.ip))
		if !ok || v4.String() != tc.v4 || how != tc.how {
			t.Errorf("EmbeddedIPv4(%s) = %s %s %v, want %s %s", tc.ip, v4, how, ok, tc.v4, tc.how)
		}
	}
	for _, s := range []string{"::", "::1", "1.2.3.4", "2606:4700::1111", "64:ff9b:1::102:304", "2001:db8::1"} {
		if v4, how, ok := EmbeddedIPv4(netip.MustParseAddr(s)); ok {
			t.Errorf("EmbeddedIPv4(%s) = %s %s, want none", s, v4, how)
		}
	}
}

// A zone names one of this host's interfaces: refused even around an
// otherwise public address (the same address without a zone passes).
func TestZonedAddressesAreRefused(t *testing.T) {
	if ok, _ := IsEgressPublic(netip.MustParseAddr("2606:4700::1111"), OwnNetwork{}, nil); !ok {
		t.Fatal("control: the unzoned address should pass")
	}
	for _, s := range []string{"2606:4700::1111%eth0", "fe80::1%eth0", "fe80::1%25eth0"} {
		if ok, _ := IsEgressPublic(netip.MustParseAddr(s), OwnNetwork{}, nil); ok {
			t.Errorf("IsEgressPublic(%s) passed", s)
		}
	}
	if ok, _ := IsEgressPublic(netip.Addr{}, OwnNetwork{}, nil); ok {
		t.Error("the zero address (\"not-an-ip\") passed")
	}
}

func ipnet(cidr string) *net.IPNet {
	ip, n, err := net.ParseCIDR(cidr)
	if err != nil {
		panic(err)
	}
	n.IP = ip // keep the interface's own address, as net.Interface.Addrs does
	return n
}

// ownHost is a host as net.InterfaceAddrs reports it.
func ownHost() OwnNetwork {
	return OwnNetworkFrom([]net.Addr{
		ipnet("127.0.0.1/8"),
		ipnet("::1/128"),
		ipnet("2001:470:1f0b:123::10/64"), // own global IPv6
		ipnet("fe80::1234/64"),
		ipnet("45.33.10.20/24"), // own public IPv4
		ipnet("172.17.0.1/16"),  // docker0
		// Netmask only, 16 bytes wide, over an IPv4 address.
		&net.IPNet{IP: net.ParseIP("81.2.69.142"), Mask: net.CIDRMask(120, 128)},
		// No mask at all: the address counts, nothing else.
		&net.IPAddr{IP: net.ParseIP("5.9.10.11")},
		ipnet("94.130.10.5/32"),    // point-to-point tunnel
		ipnet("185.199.108.10/0"),  // the /0 quirk
		ipnet("2a01:4f8:1:2::5/0"), // the /0 quirk, IPv6
		ipnet("77.1.2.3/4"),        // a mask too short to be a link
	})
}

func TestOwnNetwork(t *testing.T) {
	own := ownHost()
	for _, tc := range []struct {
		ip   string
		want Reason // "" = egress-public
	}{
		{"2001:470:1f0b:123::10", ReasonOwnAddress},
		{"2001:470:1f0b:123::1", ReasonOwnNetwork},                  // its /64 router
		{"2001:470:1f0b:123:ffff:ffff:ffff:ffff", ReasonOwnNetwork}, // top of its /64
		{"2001:470:1f0b:124::1", ""},                                // another /64
		{"2001:470:1f0b:122:ffff:ffff:ffff:ffff", ""},
		{"45.33.10.20", ReasonOwnAddress},
		{"::ffff:45.33.10.20", ReasonOwnAddress},
		{"64:ff9b::2d21:a14", ReasonOwnAddress}, // NAT64 spelling of 45.33.10.20
		{"2002:2d21:a14::1", ReasonOwnAddress},  // 6to4 spelling
		{"45.33.10.1", ReasonOwnNetwork},        // /24 neighbour
		{"45.33.10.255", ReasonOwnNetwork},
		{"::ffff:45.33.10.1", ReasonOwnNetwork},
		{"64:ff9b::2d21:a01", ReasonOwnNetwork},
		{"45.33.11.1", ""},
		{"45.33.9.255", ""},
		{"81.2.69.142", ReasonOwnAddress},
		{"81.2.69.1", ReasonOwnNetwork}, // netmask-only interface
		{"81.2.70.1", ""},
		{"5.9.10.11", ReasonOwnAddress},
		{"5.9.10.12", ""},
		{"94.130.10.5", ReasonOwnAddress}, // /32 tunnel: itself only
		{"94.130.10.6", ""},
		{"185.199.108.10", ReasonOwnAddress}, // /0: the address still counts
		{"185.199.108.11", ""},               // … and the internet is not its neighbour
		{"2a01:4f8:1:2::5", ReasonOwnAddress},
		{"2a01:4f8:1:2::6", ""},
		{"77.1.2.3", ReasonOwnAddress},
		{"77.1.2.4", ""},
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"172.17.0.2", ReasonNotPublicAddress},
	} {
		r, detail := judgeEgressAddr(netip.MustParseAddr(tc.ip), own, nil)
		if r != tc.want {
			t.Errorf("%s: got %q (%s), want %q", tc.ip, r, detail, tc.want)
		}
		ok, _ := IsEgressPublic(netip.MustParseAddr(tc.ip), own, nil)
		if ok != (tc.want == "") {
			t.Errorf("IsEgressPublic(%s) = %v, want %v", tc.ip, ok, tc.want == "")
		}
	}
}

func TestOwnNetworkFrom(t *testing.T) {
	own := ownHost()
	var links []string
	for _, p := range own.OnLink {
		links = append(links, p.String())
	}
	got := strings.Join(links, " ")
	want := "127.0.0.0/8 ::1/128 2001:470:1f0b:123::/64 fe80::/64 45.33.10.0/24 172.17.0.0/16 81.2.69.0/24 94.130.10.5/32 0.0.0.0/0 ::/0 64.0.0.0/4"
	if got != want {
		t.Errorf("on-link prefixes:\n got %s\nwant %s", got, want)
	}
	if len(own.Addrs) != 12 {
		t.Errorf("own addresses = %v, want 12", own.Addrs)
	}
	// A mask that is not a run of leading ones widens to its leading ones.
	odd := OwnNetworkFrom([]net.Addr{&net.IPNet{IP: net.ParseIP("45.33.10.20").To4(), Mask: net.IPv4Mask(255, 255, 0, 255)}})
	if len(odd.OnLink) != 1 || odd.OnLink[0].String() != "45.33.0.0/16" {
		t.Errorf("non-contiguous mask: %v", odd.OnLink)
	}
}

// The gathered network holds this host's loopback, and a loopback address
// is refused by class anyway; the check here is that gathering works on a
// real host and yields at least the loopback interface.
func TestGatherOwnNetwork(t *testing.T) {
	own, err := GatherOwnNetwork()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range own.Addrs {
		if a == netip.MustParseAddr("127.0.0.1") {
			found = true
		}
	}
	if !found {
		t.Errorf("127.0.0.1 missing from the gathered own addresses %v", own.Addrs)
	}
}

func TestDenyList(t *testing.T) {
	deny := []netip.Prefix{netip.MustParsePrefix("8.8.4.0/24"), netip.MustParsePrefix("2606:4700:10::/48"), netip.MustParsePrefix("::ffff:9.9.9.0/120")}
	for _, tc := range []struct {
		ip   string
		want Reason
	}{
		{"8.8.4.4", ReasonDenyListed},
		{"::ffff:8.8.4.4", ReasonDenyListed},
		{"64:ff9b::808:404", ReasonDenyListed},
		{"2002:808:404::1", ReasonDenyListed},
		{"2606:4700:10::1", ReasonDenyListed},
		{"9.9.9.9", ReasonDenyListed}, // a deny prefix in v4-mapped form
		{"::ffff:9.9.9.9", ReasonDenyListed},
		{"9.9.8.9", ""},
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
	} {
		if r, detail := judgeEgressAddr(netip.MustParseAddr(tc.ip), OwnNetwork{}, deny); r != tc.want {
			t.Errorf("%s: got %q (%s), want %q", tc.ip, r, detail, tc.want)
		}
	}
}

// The URL-ish entries of Crow's NOT_PUBLIC table are hostnames a resolver
// (libc inet_aton) would read as numbers. The relay never parses them as
// addresses and never hands them to a resolver: a host that is neither a
// DNS name nor a canonical IP literal is refused outright.
func TestNumericLookingHostsAreRefused(t *testing.T) {
	for _, h := range []string{
		"2130706433", "0x7f000001", "0x7f.1", "0X7F.1", "0177.0.0.1", "127.1", "127.0.1",
		"0", "0x", "1.2.3.4.", "01.2.3.4", "1.2.3.04", "127.0.0.1.", "0x7f.0x0.0x0.0x1",
		"4294967295", "example.123", "[127.0.0.1]", "[1.2.3.4]", "fe80::1", "[fe80::1%eth0]",
		"[fe80::1%25eth0]", "", "[]", "-a.com", "a-.com", "a..com", ".", "..", "a b", "ex_ample.com",
		"exämple.com", "a.com\x00", strings.Repeat("a", 64) + ".com",
	} {
		if got, err := normalizeHost(h); err == nil {
			t.Errorf("normalizeHost(%q) = %q, want refused", h, got)
		}
	}
	// Positive controls: DNS names (numbers allowed anywhere but the last
	// label, which 0x-looking words like "0xcafe.com" never are), and
	// canonical literals.
	for h, want := range map[string]string{
		"example.com":           "example.com",
		"EXAMPLE.COM.":          "example.com",
		"localhost":             "localhost",
		"123.example.com":       "123.example.com",
		"0x7f.example":          "0x7f.example",
		"xn--bcher-kva.ch":      "xn--bcher-kva.ch",
		"1.2.3.4":               "1.2.3.4",
		"[::1]":                 "::1",
		"[::FFFF:127.0.0.1]":    "::ffff:127.0.0.1",
		"[0:0:0:0:0:0:0:1]":     "::1",
		"[2606:4700:0::1111]":   "2606:4700::1111",
		"a.b-c.d":               "a.b-c.d",
		"ab.com4":               "ab.com4",
		"x.0xg":                 "x.0xg",
		strings.Repeat("a", 63): strings.Repeat("a", 63),
	} {
		got, err := normalizeHost(h)
		if err != nil || got != want {
			t.Errorf("normalizeHost(%q) = %q, %v; want %q", h, got, err, want)
		}
	}
}
