package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// fakeDNS answers from a fixed table and counts every question. It is a
// stand-in for DNS only: the policy judges exactly the addresses it
// returns, as it would a real resolver's.
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][]string
	asked   []string
}

var errServFail = errors.New("server misbehaving (SERVFAIL)")

func (d *fakeDNS) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, host)
	ans, ok := d.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if len(ans) == 1 && ans[0] == "SERVFAIL" {
		return nil, errServFail
	}
	out := make([]netip.Addr, 0, len(ans))
	for _, a := range ans {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// LookupNetIP makes fakeDNS a Resolver for the relay tests.
func (d *fakeDNS) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	return d.lookup(ctx, host)
}

func (d *fakeDNS) questions() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

func testDNS() *fakeDNS {
	return &fakeDNS{answers: map[string][]string{
		"example.com":          {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"mapped-public.test":   {"::ffff:93.184.215.14"},
		"private.test":         {"10.0.0.5"},
		"rfc1918.test":         {"192.168.7.7"},
		"cgnat.test":           {"100.64.1.2"},
		"tailscale.test":       {"100.100.100.100", "fd7a:115c:a1e0::1"},
		"linklocal.test":       {"169.254.1.1"},
		"metadata.test":        {"169.254.169.254"},
		"ecs.test":             {"169.254.170.2"},
		"imds6.test":           {"fd00:ec2::254"},
		"nat64-lo.test":        {"64:ff9b::7f00:1"},
		"nat64-meta.test":      {"64:ff9b::a9fe:a9fe"},
		"6to4-private.test":    {"2002:a00:1::1"},
		"teredo-lo.test":       {"2001:0:4136:e378:8000:63bf:80ff:fffe"},
		"mapped-private.test":  {"::ffff:10.0.0.1"},
		"compat-lo.test":       {"::127.0.0.1"},
		"own.test":             {"45.33.10.20"},
		"own-mapped.test":      {"::ffff:45.33.10.20"},
		"own-nat64.test":       {"64:ff9b::2d21:a14"},
		"neighbour.test":       {"45.33.10.1"},
		"own6.test":            {"2001:470:1f0b:123::10"},
		"router6.test":         {"2001:470:1f0b:123::1"},
		"docker0.test":         {"172.17.0.1"},
		"mixed.test":           {"93.184.215.14", "10.0.0.1"},
		"mixed6.test":          {"93.184.215.14", "::1"},
		"mixed-meta.test":      {"2606:2800:21f:cb07:6820:80da:af6b:8b2c", "169.254.169.254"},
		"localhost":            {"127.0.0.1", "::1"},
		"cname-localhost.test": {"127.0.0.1"}, // a CNAME to localhost. as a resolver returns it
		"zero.test":            {"0.0.0.0"},
		"empty.test":           {}, // NODATA: no error, no answer
		"servfail.test":        {"SERVFAIL"},
		"denied.test":          {"8.8.4.4"},
		"denied-nat64.test":    {"64:ff9b::808:404"},
		"printer.lan":          {"192.168.1.30"},
		"nas.lan":              {"192.168.1.20"},
		"svc.local":            {"127.0.0.1"},
		"svc-lan.test":         {"192.168.1.50"},
		"hostself.lan":         {"192.168.1.5"},
		"tailnet-box.lan":      {"100.101.102.103"},
		"meta-listed.test":     {"169.254.169.254"},
		"multicast.test":       {"239.1.2.3"},
	}}
}

func testOwn() OwnNetwork {
	return OwnNetworkFrom([]net.Addr{
		ipnet("127.0.0.1/8"), ipnet("::1/128"),
		ipnet("45.33.10.20/24"), ipnet("2001:470:1f0b:123::10/64"),
		ipnet("192.168.1.5/24"), ipnet("172.17.0.1/16"),
	})
}

func mustListed(t testing.TB, value string, ownerTyped bool) Listed {
	t.Helper()
	l, err := ParseListed(value, ownerTyped)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustRequest(t testing.TB, head string) Request {
	t.Helper()
	req, err := ParseRequest([]byte(head))
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	return req
}

func connect(hostport string) string {
	return "CONNECT " + hostport + " HTTP/1.1\r\nHost: " + hostport + "\r\n\r\n"
}

func get(url string) string {
	return "GET " + url + " HTTP/1.1\r\n\r\n"
}

type judgeCase struct {
	head      string
	reason    Reason // "" = allowed
	addr      string // the first address to dial, when allowed
	check     bool   // the listener-owner check must run
	lookedUp  bool   // whether the name may be resolved at all
	targetsN  int    // how many checked targets (0 = don't care)
	ownerType bool
}

func runJudge(t *testing.T, rules Rules, cases []judgeCase) {
	t.Helper()
	for _, tc := range cases {
		dns := testDNS()
		req := mustRequest(t, tc.head)
		v := Judge(context.Background(), req, rules, Facts{Own: testOwn(), Lookup: dns.lookup})
		name := strings.SplitN(tc.head, "\r\n", 2)[0]
		if v.Reason != tc.reason || v.Allow != (tc.reason == "") {
			t.Errorf("%s: got allow=%v %q (%s), want %q", name, v.Allow, v.Reason, v.Detail, tc.reason)
			continue
		}
		if v.Host != req.Host || v.Port != req.Port {
			t.Errorf("%s: verdict names %s:%d", name, v.Host, v.Port)
		}
		if q := dns.questions(); len(q) > 1 || (!tc.lookedUp && len(q) > 0) {
			t.Errorf("%s: resolver asked %v", name, q)
		}
		if tc.reason != "" {
			if v.Addr.IsValid() || len(v.Targets) != 0 {
				t.Errorf("%s: a refusal carries an address to dial: %v %v", name, v.Addr, v.Targets)
			}
			continue
		}
		if v.Addr.String() != tc.addr || v.Targets[0].Addr != v.Addr || v.Targets[0].CheckListener != tc.check {
			t.Errorf("%s: dial %v (targets %v), want %s check=%v", name, v.Addr, v.Targets, tc.addr, tc.check)
		}
		if tc.targetsN != 0 && len(v.Targets) != tc.targetsN {
			t.Errorf("%s: %d targets, want %d", name, len(v.Targets), tc.targetsN)
		}
		if v.OwnerTyped != tc.ownerType {
			t.Errorf("%s: OwnerTyped = %v", name, v.OwnerTyped)
		}
	}
}

// The internet shape: CONNECT on 443 to names whose every answer is
// egress-public (SECURITY-CASES NET-03 to NET-08, NET-18). The first rows
// are the positive controls on the same path.
func TestJudgeInternet(t *testing.T) {
	rules := Rules{Internet: true, Deny: []netip.Prefix{netip.MustParsePrefix("8.8.4.0/24")}}
	runJudge(t, rules, []judgeCase{
		{head: connect("example.com:443"), addr: "93.184.215.14:443", lookedUp: true, targetsN: 2},
		{head: connect("EXAMPLE.COM.:443"), addr: "93.184.215.14:443", lookedUp: true},
		{head: connect("mapped-public.test:443"), addr: "93.184.215.14:443", lookedUp: true},
		{head: connect("8.8.8.8:443"), addr: "8.8.8.8:443"},
		{head: connect("[2606:4700::1111]:443"), addr: "[2606:4700::1111]:443"},

		// Ports: never resolved.
		{head: connect("example.com:80"), reason: ReasonPortNotAllowed},
		{head: connect("example.com:22"), reason: ReasonPortNotAllowed},
		{head: connect("example.com:8443"), reason: ReasonPortNotAllowed},
		{head: connect("8.8.8.8:53"), reason: ReasonPortNotAllowed},
		// Plain HTTP never rides the internet shape.
		{head: get("http://example.com/"), reason: ReasonPlainHTTPNotListed},
		{head: get("http://example.com:443/"), reason: ReasonPlainHTTPNotListed},

		// Names resolving to what is not public.
		{head: connect("private.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("rfc1918.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("cgnat.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("tailscale.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("linklocal.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("metadata.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("ecs.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("imds6.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("nat64-lo.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("nat64-meta.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("6to4-private.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("teredo-lo.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("mapped-private.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("compat-lo.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("localhost:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("LOCALHOST.:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("cname-localhost.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("zero.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("multicast.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		// This host's own addresses and links (NET-07).
		{head: connect("own.test:443"), reason: ReasonOwnAddress, lookedUp: true},
		{head: connect("own-mapped.test:443"), reason: ReasonOwnAddress, lookedUp: true},
		{head: connect("own-nat64.test:443"), reason: ReasonOwnAddress, lookedUp: true},
		{head: connect("own6.test:443"), reason: ReasonOwnAddress, lookedUp: true},
		{head: connect("neighbour.test:443"), reason: ReasonOwnNetwork, lookedUp: true},
		{head: connect("router6.test:443"), reason: ReasonOwnNetwork, lookedUp: true},
		{head: connect("docker0.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("45.33.10.20:443"), reason: ReasonOwnAddress},
		// Mixed and empty answers (NET-08): one bad answer refuses all,
		// and no answer is never "all public".
		{head: connect("mixed.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("mixed6.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("mixed-meta.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("empty.test:443"), reason: ReasonEmptyAnswer, lookedUp: true},
		{head: connect("servfail.test:443"), reason: ReasonResolveFailed, lookedUp: true},
		{head: connect("nxdomain.test:443"), reason: ReasonResolveFailed, lookedUp: true},
		// The deny list (NET-10), in every spelling.
		{head: connect("denied.test:443"), reason: ReasonDenyListed, lookedUp: true},
		{head: connect("denied-nat64.test:443"), reason: ReasonDenyListed, lookedUp: true},
		{head: connect("8.8.4.4:443"), reason: ReasonDenyListed},
		{head: connect("[::ffff:8.8.4.4]:443"), reason: ReasonDenyListed},
		// Literals (NET-04): never resolved.
		{head: connect("127.0.0.1:443"), reason: ReasonNotPublicAddress},
		{head: connect("127.0.0.2:443"), reason: ReasonNotPublicAddress},
		{head: connect("0.0.0.0:443"), reason: ReasonNotPublicAddress},
		{head: connect("[::1]:443"), reason: ReasonNotPublicAddress},
		{head: connect("[::]:443"), reason: ReasonNotPublicAddress},
		{head: connect("[::ffff:127.0.0.1]:443"), reason: ReasonNotPublicAddress},
		{head: connect("[::ffff:7f00:1]:443"), reason: ReasonNotPublicAddress},
		{head: connect("[::127.0.0.1]:443"), reason: ReasonNotPublicAddress},
		{head: connect("[64:ff9b::7f00:1]:443"), reason: ReasonNotPublicAddress},
		{head: connect("169.254.169.254:443"), reason: ReasonNotPublicAddress},
		{head: connect("[fd00:ec2::254]:443"), reason: ReasonNotPublicAddress},
	})
}

// Network none refuses everything and resolves nothing (NET-02, NET-19);
// the same requests pass under the internet shape (control).
func TestJudgeNone(t *testing.T) {
	reqs := []string{connect("example.com:443"), connect("8.8.8.8:443"), get("http://nas.lan:8080/")}
	for _, head := range reqs {
		dns := testDNS()
		v := Judge(context.Background(), mustRequest(t, head), Rules{}, Facts{Own: testOwn(), Lookup: dns.lookup})
		if v.Allow || v.Reason != ReasonNetworkNone || len(dns.questions()) != 0 {
			t.Errorf("none: %q got %v %q, asked %v", head, v.Allow, v.Reason, dns.questions())
		}
	}
	runJudge(t, Rules{Internet: true, Listed: []Listed{mustListed(t, "http://nas.lan:8080", true)}}, []judgeCase{
		{head: reqs[0], addr: "93.184.215.14:443", lookedUp: true},
		{head: reqs[1], addr: "8.8.8.8:443"},
		{head: reqs[2], addr: "192.168.1.20:8080", lookedUp: true, ownerType: true},
	})
}

// Listed entries are exact (NET-11, NET-12) and may reach the LAN; the
// listener-owner check is asked for loopback and own addresses.
func TestJudgeListed(t *testing.T) {
	rules := Rules{
		Listed: []Listed{
			mustListed(t, "printer.lan:631", true),
			mustListed(t, "http://nas.lan:8080", true),
			mustListed(t, "svc.local:9000", false), // a manifest default
			mustListed(t, "svc-lan.test:9001", false),
			mustListed(t, "hostself.lan:8123", true),
			mustListed(t, "tailnet-box.lan:22", true),
			mustListed(t, "192.168.1.40:5000", true),
			mustListed(t, "[::1]:7000", true),
			mustListed(t, "meta-listed.test:80", true),
			mustListed(t, "nat64-lo.test:80", true),
			mustListed(t, "zero.test:80", true),
			mustListed(t, "multicast.test:80", true),
			mustListed(t, "denied.test:443", true),
			mustListed(t, "empty.test:443", true),
			mustListed(t, "servfail.test:443", true),
			mustListed(t, "localhost:3000", true),
			{Host: "plain-default.lan", Port: 80, PlainHTTP: true}, // not owner-typed: never usable
		},
		Deny: []netip.Prefix{netip.MustParsePrefix("8.8.4.0/24")},
	}
	runJudge(t, rules, []judgeCase{
		{head: connect("printer.lan:631"), addr: "192.168.1.30:631", lookedUp: true, ownerType: true},
		{head: connect("PRINTER.LAN:631"), addr: "192.168.1.30:631", lookedUp: true, ownerType: true},
		{head: connect("printer.lan.:631"), addr: "192.168.1.30:631", lookedUp: true, ownerType: true},
		{head: connect("printer.lan:632"), reason: ReasonNotListed},
		{head: connect("printer.lan.evil.com:631"), reason: ReasonNotListed},
		{head: connect("xprinter.lan:631"), reason: ReasonNotListed},
		{head: connect("lan:631"), reason: ReasonNotListed},
		{head: connect("192.168.1.30:631"), reason: ReasonNotListed}, // printer.lan's address, not its name
		{head: connect("xn--printr-bva.lan:631"), reason: ReasonNotListed},
		{head: connect("example.com:443"), reason: ReasonNotListed}, // no internet shape

		{head: get("http://nas.lan:8080/x"), addr: "192.168.1.20:8080", lookedUp: true, ownerType: true},
		{head: get("http://NAS.lan:8080/"), addr: "192.168.1.20:8080", lookedUp: true, ownerType: true},
		{head: get("http://nas.lan:8081/"), reason: ReasonPlainHTTPNotListed},
		{head: get("http://nas.lan/"), reason: ReasonPlainHTTPNotListed},
		{head: get("http://other/"), reason: ReasonPlainHTTPNotListed},
		{head: get("http://printer.lan:631/"), reason: ReasonPlainHTTPNotListed}, // listed for CONNECT only
		{head: get("http://plain-default.lan/"), reason: ReasonPlainHTTPNotListed},
		{head: connect("nas.lan:8080"), reason: ReasonNotListed}, // listed for plain HTTP only

		{head: connect("svc.local:9000"), addr: "127.0.0.1:9000", check: true, lookedUp: true},
		{head: connect("svc-lan.test:9001"), reason: ReasonDefaultNotLoopback, lookedUp: true},
		{head: connect("hostself.lan:8123"), addr: "192.168.1.5:8123", check: true, lookedUp: true, ownerType: true},
		{head: connect("tailnet-box.lan:22"), addr: "100.101.102.103:22", lookedUp: true, ownerType: true},
		{head: connect("192.168.1.40:5000"), addr: "192.168.1.40:5000", ownerType: true},
		{head: connect("[::1]:7000"), addr: "[::1]:7000", check: true, ownerType: true},
		{head: connect("[0:0::1]:7000"), addr: "[::1]:7000", check: true, ownerType: true},
		{head: connect("localhost:3000"), addr: "127.0.0.1:3000", check: true, lookedUp: true, ownerType: true, targetsN: 2},

		{head: connect("meta-listed.test:80"), reason: ReasonForbiddenAddress, lookedUp: true},
		{head: connect("nat64-lo.test:80"), reason: ReasonForbiddenAddress, lookedUp: true},
		{head: connect("zero.test:80"), reason: ReasonForbiddenAddress, lookedUp: true},
		{head: connect("multicast.test:80"), reason: ReasonForbiddenAddress, lookedUp: true},
		{head: connect("denied.test:443"), reason: ReasonDenyListed, lookedUp: true}, // deny beats listed
		{head: connect("empty.test:443"), reason: ReasonEmptyAnswer, lookedUp: true},
		{head: connect("servfail.test:443"), reason: ReasonResolveFailed, lookedUp: true},
	})
}

// With both the internet and a listed entry, each request is judged by
// the rule that names it.
func TestJudgeInternetAndListed(t *testing.T) {
	rules := Rules{Internet: true, Listed: []Listed{mustListed(t, "private.test:443", true)}}
	runJudge(t, rules, []judgeCase{
		{head: connect("private.test:443"), addr: "10.0.0.5:443", lookedUp: true, ownerType: true},
		{head: connect("rfc1918.test:443"), reason: ReasonNotPublicAddress, lookedUp: true},
		{head: connect("example.com:443"), addr: "93.184.215.14:443", lookedUp: true},
		{head: connect("private.test:8443"), reason: ReasonPortNotAllowed},
	})
}

func TestJudgeWithoutResolver(t *testing.T) {
	rules := Rules{Internet: true}
	if v := Judge(context.Background(), mustRequest(t, connect("8.8.8.8:443")), rules, Facts{}); !v.Allow {
		t.Fatalf("control: a public literal needs no resolver: %s", v.Reason)
	}
	if v := Judge(context.Background(), mustRequest(t, connect("example.com:443")), rules, Facts{}); v.Allow || v.Reason != ReasonResolveFailed {
		t.Errorf("a name without a resolver: %v %s", v.Allow, v.Reason)
	}
	if v := Judge(context.Background(), Request{}, rules, Facts{}); v.Allow || v.Reason != ReasonBadRequest {
		t.Errorf("the zero request: %v %s", v.Allow, v.Reason)
	}
}

func TestParseListed(t *testing.T) {
	for _, tc := range []struct {
		value      string
		ownerTyped bool
		want       Listed
	}{
		{"printer.lan:631", true, Listed{Host: "printer.lan", Port: 631, OwnerTyped: true}},
		{"PRINTER.LAN.:631", false, Listed{Host: "printer.lan", Port: 631}},
		{"[::1]:8080", true, Listed{Host: "::1", Port: 8080, OwnerTyped: true}},
		{"http://nas.lan:8080", true, Listed{Host: "nas.lan", Port: 8080, PlainHTTP: true, OwnerTyped: true}},
		{"http://nas.lan/", true, Listed{Host: "nas.lan", Port: 80, PlainHTTP: true, OwnerTyped: true}},
	} {
		got, err := ParseListed(tc.value, tc.ownerTyped)
		if err != nil || got != tc.want {
			t.Errorf("ParseListed(%q) = %+v, %v; want %+v", tc.value, got, err, tc.want)
		}
	}
	for _, value := range []string{
		"printer.lan", "*.lan:80", "printer.lan:1-100", "printer.lan:0", "printer.lan:0631",
		"127.1:80", "2130706433:80", "http://nas.lan:8080/x", "https://nas.lan:443",
		"user@printer.lan:631", "printer.lan:631 ", "", ":80", "http://",
	} {
		if got, err := ParseListed(value, true); err == nil {
			t.Errorf("ParseListed(%q) = %+v, want refused", value, got)
		}
	}
	if _, err := ParseListed("http://nas.lan:8080", false); err == nil {
		t.Error("a plain-HTTP entry the owner did not type was accepted")
	}
}
