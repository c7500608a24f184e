package egress

import (
	"fmt"
	"math/bits"
	"net"
	"net/netip"
)

// OwnNetwork is this host's side of the network: the addresses its
// interfaces hold and the prefixes those interfaces are on. The internet
// shape refuses both, so an add-on cannot reach the gateway, the LAN or
// the host's own public address by way of "the internet".
type OwnNetwork struct {
	// Addrs are the interfaces' own addresses, unmapped and without zones.
	Addrs []netip.Addr
	// OnLink are the interfaces' prefixes, masked. Prefixes shorter than
	// /8 (IPv4) or /32 (IPv6) are kept here but never make a neighbour.
	OnLink []netip.Prefix
}

// GatherOwnNetwork reads this host's interface addresses. It is called for
// every connection, so an address that arrives with DHCP or a VPN is
// refused from its first minute.
func GatherOwnNetwork() (OwnNetwork, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return OwnNetwork{}, fmt.Errorf("listing this host's interface addresses (without them no address can be judged, so the connection is refused): %w", err)
	}
	return OwnNetworkFrom(addrs), nil
}

// OwnNetworkFrom turns interface addresses as the net package reports them
// into an OwnNetwork. An address without a mask counts as an own address
// only. A mask that is not a run of leading ones is read as its leading
// ones, which can only widen the neighbourhood.
func OwnNetworkFrom(addrs []net.Addr) OwnNetwork {
	var own OwnNetwork
	for _, a := range addrs {
		var ipBytes net.IP
		var mask net.IPMask
		switch v := a.(type) {
		case *net.IPNet:
			ipBytes, mask = v.IP, v.Mask
		case *net.IPAddr:
			ipBytes = v.IP
		default:
			continue
		}
		ip, ok := netip.AddrFromSlice(ipBytes)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		own.Addrs = append(own.Addrs, ip)
		if mask == nil {
			continue
		}
		ones := leadingOnes(mask)
		switch {
		case ip.Is4() && len(mask) == net.IPv6len:
			// A 16-byte mask over an IPv4 address: its first 96 bits
			// cover the mapping prefix.
			ones -= 96
			if ones < 0 {
				ones = 0
			}
		case ip.Is6() && len(mask) == net.IPv4len:
			continue // a mask that cannot belong to this address
		}
		if ones > ip.BitLen() {
			ones = ip.BitLen()
		}
		own.OnLink = append(own.OnLink, netip.PrefixFrom(ip, ones).Masked())
	}
	return own
}

func leadingOnes(mask net.IPMask) int {
	n := 0
	for _, b := range mask {
		if b == 0xff {
			n += 8
			continue
		}
		n += bits.LeadingZeros8(^b)
		break
	}
	return n
}
