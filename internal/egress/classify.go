// Package egress is the way out of a wall: the host-side relay that every
// connection from inside a wall's network namespace crosses, the explicit
// table of address classes it judges resolved addresses by, and the policy
// that decides each request from scratch.
//
// The pure parts (classify.go, request.go, policy.go) never touch the
// world, so the security rules are tested as tables; relay.go is the only
// file with side effects.
package egress

import (
	"fmt"
	"net/netip"
)

// Class is what kind of address an IP is, judged by an explicit table of
// IANA's special-purpose ranges. net.IP.IsGlobalUnicast is not used: it
// calls 10/8, CGNAT, NAT64 and 6to4 "global".
type Class uint8

// The classes. Only ClassPublic may be reached through the internet shape.
const (
	ClassInvalid       Class = iota // not an address (the zero netip.Addr)
	ClassPublic                     // globally reachable unicast
	ClassUnspecified                // 0.0.0.0, :: — Go dials these to the local host
	ClassLoopback                   // 127/8, ::1
	ClassPrivate                    // RFC 1918
	ClassCGNAT                      // 100.64/10: carrier NAT and tailnets
	ClassLinkLocal                  // 169.254/16, fe80::/10
	ClassULA                        // fc00::/7
	ClassMulticast                  // 224/4, ff00::/8
	ClassReserved                   // everything special that is none of the others
	ClassDocumentation              // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
	ClassBenchmarking               // 198.18/15, 2001:2::/48
	ClassMetadata                   // cloud instance metadata services
)

var classNames = [...]string{
	ClassInvalid:       "invalid",
	ClassPublic:        "public",
	ClassUnspecified:   "unspecified",
	ClassLoopback:      "loopback",
	ClassPrivate:       "private",
	ClassCGNAT:         "cgnat",
	ClassLinkLocal:     "linklocal",
	ClassULA:           "ula",
	ClassMulticast:     "multicast",
	ClassReserved:      "reserved",
	ClassDocumentation: "documentation",
	ClassBenchmarking:  "benchmarking",
	ClassMetadata:      "metadata",
}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", c)
}

type classRange struct {
	prefix netip.Prefix
	class  Class
}

// The tables are searched in order and the first match wins, so a more
// specific range (a metadata address) comes before the range holding it.
var v4Table = []classRange{
	// Cloud metadata: AWS/GCP/Azure/Oracle IMDS, ECS task metadata, EKS
	// pod identity, Alibaba, Oracle's 192.0.0.192.
	{mustPrefix("169.254.169.254/32"), ClassMetadata},
	{mustPrefix("169.254.170.2/32"), ClassMetadata},
	{mustPrefix("169.254.170.23/32"), ClassMetadata},
	{mustPrefix("100.100.100.200/32"), ClassMetadata},
	{mustPrefix("192.0.0.192/32"), ClassMetadata},

	{mustPrefix("0.0.0.0/32"), ClassUnspecified},
	{mustPrefix("0.0.0.0/8"), ClassReserved}, // "this network"
	{mustPrefix("10.0.0.0/8"), ClassPrivate},
	{mustPrefix("100.64.0.0/10"), ClassCGNAT},
	{mustPrefix("127.0.0.0/8"), ClassLoopback},
	{mustPrefix("169.254.0.0/16"), ClassLinkLocal},
	{mustPrefix("172.16.0.0/12"), ClassPrivate},
	{mustPrefix("192.0.0.0/24"), ClassReserved}, // IETF protocol assignments
	{mustPrefix("192.0.2.0/24"), ClassDocumentation},
	{mustPrefix("192.88.99.0/24"), ClassReserved}, // deprecated 6to4 relay anycast
	{mustPrefix("192.168.0.0/16"), ClassPrivate},
	{mustPrefix("198.18.0.0/15"), ClassBenchmarking},
	{mustPrefix("198.51.100.0/24"), ClassDocumentation},
	{mustPrefix("203.0.113.0/24"), ClassDocumentation},
	{mustPrefix("224.0.0.0/4"), ClassMulticast},
	{mustPrefix("240.0.0.0/4"), ClassReserved}, // includes 255.255.255.255
}

var v6Table = []classRange{
	{mustPrefix("fd00:ec2::254/128"), ClassMetadata}, // AWS IMDS over IPv6
	{mustPrefix("fd00:ec2::23/128"), ClassMetadata},  // EKS pod identity
	{mustPrefix("fd20:ce::254/128"), ClassMetadata},  // GCP metadata over IPv6

	{mustPrefix("::/128"), ClassUnspecified},
	{mustPrefix("::1/128"), ClassLoopback},
	{mustPrefix("64:ff9b:1::/48"), ClassReserved}, // local-use NAT64: translator unknown
	{mustPrefix("100::/64"), ClassReserved},       // discard-only
	{mustPrefix("2001:2::/48"), ClassBenchmarking},
	{mustPrefix("2001:db8::/32"), ClassDocumentation},
	{mustPrefix("2001::/23"), ClassReserved}, // IETF protocol assignments (Teredo is judged before this)
	{mustPrefix("3fff::/20"), ClassDocumentation},
	{mustPrefix("fc00::/7"), ClassULA},
	{mustPrefix("fe80::/10"), ClassLinkLocal},
	{mustPrefix("ff00::/8"), ClassMulticast},
}

// globalUnicastV6 is the only IPv6 space IANA hands out for global unicast;
// anything outside it that no table entry names is reserved.
var globalUnicastV6 = mustPrefix("2000::/3")

func mustPrefix(s string) netip.Prefix {
	p := netip.MustParsePrefix(s)
	if p != p.Masked() {
		panic("egress: table prefix is not masked: " + s)
	}
	return p
}

// Embedding names how an IPv6 address carries an IPv4 address.
type Embedding uint8

// The embeddings that are decoded. The IPv4 inside is judged as well as
// the IPv6 address around it.
const (
	EmbedNone       Embedding = iota
	EmbedMapped               // ::ffff:0:0/96 — the socket layer dials the IPv4 itself
	EmbedSIIT                 // ::ffff:0:0:0/96 (RFC 2765)
	EmbedCompatible           // ::/96 (deprecated RFC 4291 form)
	EmbedNAT64                // 64:ff9b::/96 (RFC 6052 well-known prefix)
	Embed6to4                 // 2002::/16
	EmbedTeredo               // 2001::/32, client address stored inverted
)

var embeddingNames = [...]string{
	EmbedNone:       "none",
	EmbedMapped:     "v4-mapped",
	EmbedSIIT:       "SIIT",
	EmbedCompatible: "v4-compatible",
	EmbedNAT64:      "NAT64",
	Embed6to4:       "6to4",
	EmbedTeredo:     "Teredo",
}

func (e Embedding) String() string {
	if int(e) < len(embeddingNames) {
		return embeddingNames[e]
	}
	return fmt.Sprintf("Embedding(%d)", e)
}

var (
	siitPrefix   = mustPrefix("::ffff:0:0:0/96")
	compatPrefix = mustPrefix("::/96")
	nat64Prefix  = mustPrefix("64:ff9b::/96")
	sixToFour    = mustPrefix("2002::/16")
	teredoPrefix = mustPrefix("2001::/32")
)

// EmbeddedIPv4 returns the IPv4 address an IPv6 address carries and how it
// carries it, or ok=false for an IPv4 address or an IPv6 address that
// carries none. :: and ::1 carry none: they are judged as themselves.
func EmbeddedIPv4(ip netip.Addr) (v4 netip.Addr, how Embedding, ok bool) {
	if !ip.Is6() {
		return netip.Addr{}, EmbedNone, false
	}
	ip = ip.WithZone("")
	b := ip.As16()
	switch {
	case ip.Is4In6():
		return ip.Unmap(), EmbedMapped, true
	case siitPrefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), EmbedSIIT, true
	case compatPrefix.Contains(ip):
		if ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback() {
			return netip.Addr{}, EmbedNone, false
		}
		return netip.AddrFrom4([4]byte(b[12:16])), EmbedCompatible, true
	case nat64Prefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), EmbedNAT64, true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), Embed6to4, true
	case teredoPrefix.Contains(ip):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), EmbedTeredo, true
	}
	return netip.Addr{}, EmbedNone, false
}

// Classify returns the class of an address. A zone is ignored here (the
// egress check refuses zoned addresses on its own). An IPv6 address that
// carries an IPv4 address takes the IPv4 address's class, except that the
// deprecated SIIT and v4-compatible forms are reserved even around a
// public IPv4 address: nothing routes them to it.
func Classify(ip netip.Addr) Class {
	if !ip.IsValid() {
		return ClassInvalid
	}
	ip = ip.WithZone("")
	if ip.Is4() {
		return classify4(ip)
	}
	if v4, how, ok := EmbeddedIPv4(ip); ok {
		c := classify4(v4)
		if c == ClassPublic && (how == EmbedSIIT || how == EmbedCompatible) {
			return ClassReserved
		}
		return c
	}
	for _, r := range v6Table {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	if !globalUnicastV6.Contains(ip) {
		return ClassReserved
	}
	return ClassPublic
}

func classify4(ip netip.Addr) Class {
	for _, r := range v4Table {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	return ClassPublic
}

// Shortest on-link prefixes that still make their addresses neighbours.
// Some interfaces (point-to-point links, tunnels, a few VPN clients)
// report a /0 or similarly short mask; taken literally that would make
// the whole internet "on-link" and refuse everything, or — worse, were
// the rule ever inverted — allow it. Such a prefix is ignored; the
// interface's own address still counts.
const (
	minOnLinkBits4 = 8
	minOnLinkBits6 = 32
)

// IsEgressPublic reports whether the internet shape may dial ip: its class
// is public (including every IPv4 address it carries), it is not one of
// this host's own addresses, it is not inside any interface's on-link
// prefix, and it is not in the operator's deny list. reason says why not,
// in words for logs; it is empty when ok.
func IsEgressPublic(ip netip.Addr, own OwnNetwork, deny []netip.Prefix) (ok bool, reason string) {
	r, detail := judgeEgressAddr(ip, own, deny)
	return r == "", detail
}

// judgeEgressAddr is IsEgressPublic with the stable reason the policy
// reports.
func judgeEgressAddr(ip netip.Addr, own OwnNetwork, deny []netip.Prefix) (Reason, string) {
	if r, detail := judgeClass(ip); r != "" {
		return r, detail
	}
	if r, detail := judgeOwnAndDeny(ip, own, deny); r != "" {
		return r, detail
	}
	return "", ""
}

// judgeClass refuses anything whose class, or whose carried IPv4 address's
// class, is not public. A zoned address is refused: a zone names one of
// this host's interfaces.
func judgeClass(ip netip.Addr) (Reason, string) {
	if !ip.IsValid() {
		return ReasonNotPublicAddress, "not an IP address"
	}
	if ip.Zone() != "" {
		return ReasonNotPublicAddress, fmt.Sprintf("%s carries an interface zone", ip)
	}
	c := Classify(ip)
	if c == ClassPublic {
		return "", ""
	}
	if v4, how, ok := EmbeddedIPv4(ip); ok {
		return ReasonNotPublicAddress, fmt.Sprintf("%s carries %s (%s), which is %s", ip, v4, how, Classify(v4))
	}
	return ReasonNotPublicAddress, fmt.Sprintf("%s is %s", ip, c)
}

// judgeOwnAndDeny refuses this host's own addresses, its on-link
// neighbours and the deny list, in every spelling: the address itself and
// the IPv4 address it carries.
func judgeOwnAndDeny(ip netip.Addr, own OwnNetwork, deny []netip.Prefix) (Reason, string) {
	for _, f := range addrForms(ip) {
		for _, a := range own.Addrs {
			if f == a.Unmap().WithZone("") {
				return ReasonOwnAddress, fmt.Sprintf("%s is this host's own address %s", ip, f)
			}
		}
	}
	for _, f := range addrForms(ip) {
		for _, p := range own.OnLink {
			if onLinkCounts(p) && p.Masked().Contains(f) {
				return ReasonOwnNetwork, fmt.Sprintf("%s is on this host's link %s", ip, p.Masked())
			}
		}
	}
	if p, ok := denied(ip, deny); ok {
		return ReasonDenyListed, fmt.Sprintf("%s is in the operator's deny list (%s)", ip, p)
	}
	return "", ""
}

// denied finds the deny-list prefix that holds any spelling of ip. A
// prefix written in v4-mapped form (::ffff:a.b.c.d/120) holds the IPv4
// addresses it maps.
func denied(ip netip.Addr, deny []netip.Prefix) (netip.Prefix, bool) {
	for _, f := range addrForms(ip) {
		for _, p := range deny {
			if !p.IsValid() {
				continue
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			if p.Masked().Contains(f) {
				return p.Masked(), true
			}
		}
	}
	return netip.Prefix{}, false
}

// addrForms is every spelling an address is checked under: itself
// (unmapped, without a zone) and the IPv4 address it carries, if any.
func addrForms(ip netip.Addr) []netip.Addr {
	ip = ip.Unmap().WithZone("")
	forms := []netip.Addr{ip}
	if v4, _, ok := EmbeddedIPv4(ip); ok {
		forms = append(forms, v4)
	}
	return forms
}

func onLinkCounts(p netip.Prefix) bool {
	if !p.IsValid() {
		return false
	}
	if p.Addr().Is4() {
		return p.Bits() >= minOnLinkBits4
	}
	return p.Bits() >= minOnLinkBits6
}
