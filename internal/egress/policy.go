package egress

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// Reason is the stable, CamelCase word a refusal is counted and reported
// under. The words never change meaning: status, logs and the 403 body all
// carry them.
type Reason string

// The reasons a request is refused.
const (
	// ReasonNetworkNone: the wall has no way out at all.
	ReasonNetworkNone Reason = "NetworkNone"
	// ReasonPortNotAllowed: the internet shape is HTTPS on port 443 only.
	ReasonPortNotAllowed Reason = "PortNotAllowed"
	// ReasonNotPublicAddress: an address the name resolved to (or the
	// literal) is not public, or carries an IPv4 address that is not.
	ReasonNotPublicAddress Reason = "NotPublicAddress"
	// ReasonForbiddenAddress: a listed entry resolved to an address no
	// entry may reach: unspecified, multicast, cloud metadata or reserved.
	ReasonForbiddenAddress Reason = "ForbiddenAddress"
	// ReasonOwnAddress: the address is one of this host's own.
	ReasonOwnAddress Reason = "OwnAddress"
	// ReasonOwnNetwork: the address is on one of this host's links.
	ReasonOwnNetwork Reason = "OwnNetwork"
	// ReasonDenyListed: the operator's deny list holds the address.
	ReasonDenyListed Reason = "DenyListed"
	// ReasonNotListed: no listed entry names this host:port, and the
	// internet shape is off.
	ReasonNotListed Reason = "NotListed"
	// ReasonEmptyAnswer: the name resolved to no address at all.
	ReasonEmptyAnswer Reason = "EmptyAnswer"
	// ReasonPlainHTTPNotListed: a plain-HTTP request for a target that is
	// not a listed, owner-typed plain-HTTP entry.
	ReasonPlainHTTPNotListed Reason = "PlainHTTPNotListed"
	// ReasonDefaultNotLoopback: a manifest default (an entry the owner did
	// not type) resolved to something other than loopback.
	ReasonDefaultNotLoopback Reason = "DefaultNotLoopback"
	// ReasonBadRequest: the request head could not be read strictly.
	ReasonBadRequest Reason = "BadRequest"
	// ReasonResolveFailed: the name could not be resolved.
	ReasonResolveFailed Reason = "ResolveFailed"
	// ReasonHostFactsUnavailable: this host's own addresses could not be
	// read, so no address can be judged.
	ReasonHostFactsUnavailable Reason = "HostFactsUnavailable"
	// ReasonListenerRefused: the listener-owner check refused a loopback
	// (or own-address) target, or there is no such check to run.
	ReasonListenerRefused Reason = "ListenerRefused"
	// ReasonDialFailed: the target was allowed but could not be reached.
	ReasonDialFailed Reason = "DialFailed"
	// ReasonTooManyConnections: the relay's connection limit was reached.
	ReasonTooManyConnections Reason = "TooManyConnections"
)

// Listed is one exact host:port entry. The entry is the whole permission:
// no wildcard, no port range, no subdomain.
type Listed struct {
	// Host is normalized as Request.Host is, and compared as a string.
	Host string
	// Port is the one port the entry allows.
	Port uint16
	// PlainHTTP entries are reached by absolute-form plain-HTTP requests
	// only; other entries by CONNECT only.
	PlainHTTP bool
	// OwnerTyped is true when the owner typed the value. An entry the
	// owner did not type (a manifest default) may only reach loopback,
	// and never carries plain HTTP.
	OwnerTyped bool
}

// String is the entry as the owner would write it.
func (l Listed) String() string {
	hp := Request{Host: l.Host, Port: l.Port}.HostPort()
	if l.PlainHTTP {
		return "http://" + hp
	}
	return hp
}

// ParseListed reads one listed value: "host:port" for a CONNECT entry, or
// "http://host[:port][/]" for a plain-HTTP entry. The host is held to the
// same rules as a request's, so an entry can only ever match a request
// that spells the same host.
func ParseListed(value string, ownerTyped bool) (Listed, error) {
	if strings.HasPrefix(value, "http://") {
		host, port, path, err := parseAbsoluteHTTP(value)
		if err != nil {
			return Listed{}, fmt.Errorf("listed entry %q: %w", value, err)
		}
		if path != "/" {
			return Listed{}, fmt.Errorf("listed entry %q: a listed entry names a host and port, not a path", value)
		}
		if !ownerTyped {
			return Listed{}, fmt.Errorf("listed entry %q: a plain-HTTP entry must be one the owner typed", value)
		}
		return Listed{Host: host, Port: port, PlainHTTP: true, OwnerTyped: true}, nil
	}
	host, port, err := parseAuthority(value, false, 0)
	if err != nil {
		return Listed{}, fmt.Errorf("listed entry %q: %w", value, err)
	}
	return Listed{Host: host, Port: port, OwnerTyped: ownerTyped}, nil
}

// Rules are what one wall may reach. The zero value is network "none".
type Rules struct {
	// Internet allows CONNECT on port 443 to names whose every address
	// is egress-public.
	Internet bool
	// Listed are the exact entries.
	Listed []Listed
	// Deny is the operator's deny list; it beats every allow, listed
	// entries included.
	Deny []netip.Prefix
}

// Facts are what the policy reads about the world, gathered by the caller.
type Facts struct {
	// Own is this host's addresses and links.
	Own OwnNetwork
	// Lookup resolves a DNS name. Judge calls it at most once per
	// request, and only when every check that needs no answer has
	// passed. A nil Lookup refuses every name (IP literals still work).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Target is one checked address the relay may dial.
type Target struct {
	Addr netip.AddrPort
	// CheckListener is set for a loopback or own address: the
	// listener-owner check must pass before the connection is spliced.
	CheckListener bool
}

// Verdict is the policy's answer for one request.
type Verdict struct {
	Allow  bool
	Reason Reason // empty when allowed
	// Detail says why, in words, for logs. It may hold resolved addresses,
	// so it is not sent into the wall.
	Detail string
	// Host and Port are the request's normalized target.
	Host string
	Port uint16
	// Addr is the first checked address to dial: exactly what was judged,
	// never a name to be resolved again.
	Addr netip.AddrPort
	// Targets are every checked address in dial order; Targets[0].Addr is
	// Addr. Each was judged on its own, so any of them may be dialled.
	Targets []Target
	// OwnerTyped is true when a listed entry the owner typed allowed it
	// (what the listener-owner check must be told).
	OwnerTyped bool
}

// Judge decides one request from scratch. It resolves the name at most
// once (through facts.Lookup), checks every answer, and returns exactly
// the checked addresses to dial. Nothing is resolved for a request that
// is refused without an answer (network none, a wrong port, a target that
// is not listed), so a refused name is never looked up.
func Judge(ctx context.Context, req Request, rules Rules, facts Facts) Verdict {
	v := Verdict{Host: req.Host, Port: req.Port}
	refuse := func(r Reason, format string, args ...any) Verdict {
		// A refusal never carries an address, not even the ones
		// checked before the answer that failed.
		return Verdict{Host: req.Host, Port: req.Port, Reason: r, Detail: fmt.Sprintf(format, args...)}
	}
	if req.Kind != KindConnect && req.Kind != KindPlainHTTP {
		return refuse(ReasonBadRequest, "the request has no kind")
	}
	if !rules.Internet && len(rules.Listed) == 0 {
		return refuse(ReasonNetworkNone, "this wall has no network")
	}
	entry, listed := matchListed(req, rules.Listed)
	if req.Kind == KindPlainHTTP {
		if !listed || !entry.PlainHTTP || !entry.OwnerTyped {
			return refuse(ReasonPlainHTTPNotListed, "plain HTTP to %s is not a listed owner-typed plain-HTTP entry", req.HostPort())
		}
	}
	if !listed {
		if !rules.Internet {
			return refuse(ReasonNotListed, "%s is not listed", req.HostPort())
		}
		if req.Port != 443 {
			return refuse(ReasonPortNotAllowed, "the internet is HTTPS on port 443 only, not %d", req.Port)
		}
	}

	addrs, r, detail := resolve(ctx, req.Host, facts.Lookup)
	if r != "" {
		return refuse(r, "%s", detail)
	}
	seen := map[netip.Addr]bool{}
	for _, a := range addrs {
		var t Target
		if listed {
			t, r, detail = judgeListedAddr(a, entry, facts.Own, rules.Deny)
		} else {
			r, detail = judgeEgressAddr(a, facts.Own, rules.Deny)
			t = Target{Addr: netip.AddrPortFrom(a.Unmap(), req.Port)}
		}
		if r != "" {
			return refuse(r, "%s resolved to %s: %s", req.Host, joinAddrs(addrs), detail)
		}
		t.Addr = netip.AddrPortFrom(t.Addr.Addr(), req.Port)
		if seen[t.Addr.Addr()] {
			continue
		}
		seen[t.Addr.Addr()] = true
		v.Targets = append(v.Targets, t)
	}
	v.Allow, v.Addr = true, v.Targets[0].Addr
	v.OwnerTyped = listed && entry.OwnerTyped
	return v
}

// matchListed finds the entry that names the request's host and port and
// carries its kind. The compare is a plain string compare of normalized
// forms; an entry of the other kind is no match.
func matchListed(req Request, entries []Listed) (Listed, bool) {
	wantPlain := req.Kind == KindPlainHTTP
	for _, l := range entries {
		if l.Host == req.Host && l.Port == req.Port && l.PlainHTTP == wantPlain {
			return l, true
		}
	}
	return Listed{}, false
}

func resolve(ctx context.Context, host string, lookup func(context.Context, string) ([]netip.Addr, error)) ([]netip.Addr, Reason, string) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, "", ""
	}
	if lookup == nil {
		return nil, ReasonResolveFailed, "no resolver"
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil, ReasonResolveFailed, fmt.Sprintf("resolving %s: %v", host, err)
	}
	if len(addrs) == 0 {
		// "Every address is public" must never be true of no address.
		return nil, ReasonEmptyAnswer, fmt.Sprintf("%s resolved to no address", host)
	}
	return addrs, "", ""
}

// judgeListedAddr judges one answer for a listed entry. Private, LAN and
// tailnet addresses pass, because the owner named the entry. Loopback and
// this host's own addresses pass only through the listener-owner check.
func judgeListedAddr(a netip.Addr, entry Listed, own OwnNetwork, deny []netip.Prefix) (Target, Reason, string) {
	if !a.IsValid() {
		return Target{}, ReasonForbiddenAddress, "not an IP address"
	}
	if a.Zone() != "" {
		return Target{}, ReasonForbiddenAddress, fmt.Sprintf("%s carries an interface zone", a)
	}
	if p, ok := denied(a, deny); ok {
		return Target{}, ReasonDenyListed, fmt.Sprintf("%s is in the operator's deny list (%s)", a, p)
	}
	a = a.Unmap()
	c := Classify(a)
	if v4, how, ok := EmbeddedIPv4(a); ok && c != ClassPublic {
		// A translated address reaches whatever the translator's side
		// holds there; the owner named a host, not that.
		return Target{}, ReasonForbiddenAddress, fmt.Sprintf("%s carries %s (%s), which is %s", a, v4, how, Classify(v4))
	}
	switch c {
	case ClassInvalid, ClassUnspecified, ClassMulticast, ClassMetadata, ClassReserved:
		return Target{}, ReasonForbiddenAddress, fmt.Sprintf("%s is %s", a, c)
	}
	ownAddr := false
	for _, o := range own.Addrs {
		if o.Unmap().WithZone("") == a {
			ownAddr = true
		}
	}
	if !entry.OwnerTyped && c != ClassLoopback {
		return Target{}, ReasonDefaultNotLoopback, fmt.Sprintf("%s is %s, and a manifest default may only reach loopback", a, c)
	}
	return Target{Addr: netip.AddrPortFrom(a, entry.Port), CheckListener: c == ClassLoopback || ownAddr}, "", ""
}

func joinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
